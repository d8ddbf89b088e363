import { BadRequestException, Body, Controller, Get, HttpCode, Inject, NotFoundException, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { instanceToPlain } from 'class-transformer';
import { May } from '../../auth/auth.guard';
import { CurrentIdentity } from '../../auth/current-identity.decorator';
import type { Identity } from '../../auth/identity';
import { EVENT_STORE, type EventStore, type RecordedEvent } from '../../events/event-store.port';
import { METRICS, type TriadMetrics } from '../../observability/metrics';
import { parseIntParam } from '../../team/http/runs.controller';
import type { ProjectView } from '../domain/project-decider';
import { PROJECT_STATUSES, toProjectStreamId, type ProjectStatus } from '../domain/project-events';
import { ProjectsService, type LaunchProjectInput } from '../projects.service';
import { CancelProjectDto, LaunchProjectDto, ProjectReviewDecisionDto } from './project.dto';

@Controller('v1/projects')
export class ProjectsController {
  constructor(
    private readonly projects: ProjectsService,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(METRICS) private readonly metrics: TriadMetrics,
  ) {}

  @Post()
  @HttpCode(202)
  @May('operateRuns')
  launch(@Body() body: LaunchProjectDto, @CurrentIdentity() who: Identity): Promise<{ projectId: string; acceptedAt: string }> {
    return this.projects.launch(instanceToPlain(body) as LaunchProjectInput, who);
  }

  @Get()
  async list(@Query('status') status?: string, @Query('limit') limit?: string): Promise<{ projects: ProjectView[] }> {
    if (status !== undefined && !PROJECT_STATUSES.includes(status as ProjectStatus)) throw new BadRequestException(`status must be one of ${PROJECT_STATUSES.join(', ')}`);
    const n = parseIntParam('limit', limit, 100, 1, 1000);
    return { projects: await this.projects.list({ status: status as ProjectStatus | undefined, limit: n }) };
  }

  @Get(':id')
  get(@Param('id') id: string): Promise<ProjectView> {
    return this.projects.get(id);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @May('operateRuns')
  cancel(@Param('id') id: string, @Body() body: CancelProjectDto, @CurrentIdentity() who: Identity): Promise<ProjectView> {
    return this.projects.cancel(id, who, body?.reason);
  }

  @Post(':id/tasks/:key/retry')
  @HttpCode(202)
  @May('operateRuns')
  retry(@Param('id') id: string, @Param('key') key: string, @CurrentIdentity() who: Identity): Promise<ProjectView> {
    return this.projects.retry(id, key, who);
  }

  @Post(':id/review/approve')
  @HttpCode(200)
  @May('review')
  approve(@Param('id') id: string, @Body() body: ProjectReviewDecisionDto, @CurrentIdentity() who: Identity): Promise<ProjectView> {
    return this.projects.decideReview(id, 'approve', who, body.reason);
  }

  @Post(':id/review/reject')
  @HttpCode(200)
  @May('review')
  reject(@Param('id') id: string, @Body() body: ProjectReviewDecisionDto, @CurrentIdentity() who: Identity): Promise<ProjectView> {
    return this.projects.decideReview(id, 'reject', who, body.reason);
  }

  /** JSON page of the project's events, or with `Accept: text/event-stream`, catch-up then live (SSE) until it ends. */
  @Get(':id/events')
  async events(@Param('id') id: string, @Query('fromRevision') fromRevision: string | undefined, @Req() req: Request, @Res() res: Response): Promise<void> {
    const stream = toProjectStreamId(id);
    let from = parseIntParam('fromRevision', fromRevision, 0, 0, Number.MAX_SAFE_INTEGER);
    const head = await this.store.streamRevision(stream);
    if (head === null) throw new NotFoundException(`project ${id} not found`);
    if (!(req.headers.accept ?? '').includes('text/event-stream')) {
      res.json({ projectId: id, events: await this.store.readStream(stream, { fromRevision: from, maxCount: 10_000 }) });
      return;
    }
    const lastEventId = req.headers['last-event-id'];
    if (typeof lastEventId === 'string' && lastEventId !== '') from = parseIntParam('Last-Event-ID', lastEventId, 0, 0, Number.MAX_SAFE_INTEGER) + 1;
    await this.streamEvents(stream, from, req, res);
  }

  private async streamEvents(stream: string, from: number, req: Request, res: Response): Promise<void> {
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Connection', 'keep-alive');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    const closed = this.metrics.sseOpened();
    const controller = new AbortController();
    req.on('close', () => controller.abort());
    const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
    const send = (e: RecordedEvent) => res.write(`id: ${e.revision}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
    try {
      let position = 0;
      let ended = false;
      let next = Math.max(0, from - 1);
      // From the event before `from`, to know where to subscribe and whether the project has ended.
      for (;;) {
        const page = await this.store.readStream(stream, { fromRevision: next, maxCount: 1000 });
        for (const e of page) {
          position = e.position;
          ended = e.type === 'ProjectEnded';
          if (e.revision >= from) send(e);
        }
        if (page.length < 1000) break;
        next = page[page.length - 1].revision + 1;
      }
      if (!ended) {
        const sub = this.store.subscribe({ after: position, filter: { streamPrefixes: [stream] }, signal: controller.signal });
        for await (const e of sub) {
          if (e.streamId !== stream || e.revision < from) continue;
          send(e);
          if (e.type === 'ProjectEnded') break;
        }
      }
    } finally {
      clearInterval(heartbeat);
      closed();
      res.end();
    }
  }
}
