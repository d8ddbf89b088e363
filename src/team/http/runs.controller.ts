import { BadRequestException, Body, Controller, Get, HttpCode, Inject, NotFoundException, Param, Post, Query, Req, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Request, Response } from 'express';
import { May } from '../../auth/auth.guard';
import { CurrentIdentity } from '../../auth/current-identity.decorator';
import type { Identity } from '../../auth/identity';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { sseStart, streamEventsAsSse, wantsSse } from '../../http/event-stream-sse';
import { parseIntParam } from '../../http/int-param';
import { CancelRunCommand } from '../commands/cancel-run.command';
import { LaunchRunCommand } from '../commands/launch-run.command';
import { RUN_STATUSES, TERMINAL_STATUSES, toRunStreamId, type RunStatus } from '../domain/run-events';
import type { LaunchResult, LaunchRunInput } from '../commands/launch';
import { instanceToPlain } from 'class-transformer';
import { LiveRunBus } from '../live/live-run-bus';
import { GetRunQuery, ListRunsQuery } from '../queries/run.queries';
import type { RunSummary } from '../runs/run-summary';
import { waitForRunToSettle, type WaitAnswer } from '../runs/run-wait';
import { CancelRunDto, LaunchRunDto } from './launch-run.dto';
import { METRICS, type TriadMetrics } from '../../observability/metrics';


@Controller('v1/runs')
export class RunsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly live: LiveRunBus,
    @Inject(METRICS) private readonly metrics: TriadMetrics,
  ) {}

  @Post()
  @HttpCode(202)
  @May('operateRuns')
  async launch(@Body() body: LaunchRunDto, @CurrentIdentity() who: Identity): Promise<{ runId: string; acceptedAt: string }> {
    // Validated DTOs are class instances; the domain (and its events) take plain JSON.
    const input = instanceToPlain(body) as LaunchRunInput;
    const result = await this.commands.execute<LaunchRunCommand, LaunchResult>(new LaunchRunCommand(input, who));
    return { runId: result.runId, acceptedAt: result.acceptedAt };
  }

  @Get()
  async list(@Query('status') status?: string, @Query('limit') limit?: string): Promise<{ runs: RunSummary[] }> {
    if (status !== undefined && !RUN_STATUSES.includes(status as RunStatus)) {
      throw new BadRequestException(`status must be one of ${RUN_STATUSES.join(', ')}`);
    }
    const n = parseIntParam('limit', limit, 100, 1, 1000);
    return { runs: await this.queries.execute(new ListRunsQuery(status as RunStatus | undefined, n)) };
  }

  @Get(':id')
  async get(@Param('id') id: string): Promise<RunSummary> {
    return this.queries.execute(new GetRunQuery(id));
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @May('operateRuns')
  async cancel(@Param('id') id: string, @Body() body: CancelRunDto, @CurrentIdentity() who: Identity) {
    return this.commands.execute(new CancelRunCommand(id, who, body?.reason));
  }

  @Post(':id/wait')
  @HttpCode(200)
  async wait(@Param('id') id: string, @Query('timeoutMs') timeoutMs?: string): Promise<WaitAnswer> {
    const limit = parseIntParam('timeoutMs', timeoutMs, 30_000, 0, 600_000);
    return waitForRunToSettle(this.store, id, () => this.queries.execute(new GetRunQuery(id)), limit);
  }

  /** JSON page of the run's events, or with `Accept: text/event-stream`, catch-up then live (SSE). */
  @Get(':id/events')
  async events(@Param('id') id: string, @Query('fromRevision') fromRevision: string | undefined, @Req() req: Request, @Res() res: Response): Promise<void> {
    const stream = toRunStreamId(id);
    const revision = (name: string, raw: string | undefined) => parseIntParam(name, raw, 0, 0, Number.MAX_SAFE_INTEGER);
    const from = revision('fromRevision', fromRevision);
    if ((await this.store.streamRevision(stream)) === null) throw new NotFoundException(`run ${id} not found`);
    if (!wantsSse(req)) {
      res.json({ runId: id, events: await this.store.readStream(stream, { fromRevision: from, maxCount: 10_000 }) });
      return;
    }
    await streamEventsAsSse(
      {
        store: this.store,
        metrics: this.metrics,
        stream,
        from: sseStart(req, from, revision),
        isEnd: (e) => e.type === 'RunEnded' && TERMINAL_STATUSES.has((e.data as { status: RunStatus }).status),
        // The model's text as it streams, on this process or relayed from the one driving the run.
        live: (send) => {
          const deltas = this.live.of(id).subscribe((item) => {
            if (item.kind === 'delta') send({ event: 'delta', data: { role: item.role, turn: item.turn, text: item.text } });
          });
          return () => deltas.unsubscribe();
        },
      },
      req,
      res,
    );
  }
}
