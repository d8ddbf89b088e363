import { BadRequestException, Body, Controller, Get, HttpCode, Inject, NotFoundException, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { instanceToPlain } from 'class-transformer';
import { May } from '../../auth/auth.guard';
import { CurrentIdentity } from '../../auth/current-identity.decorator';
import type { Identity } from '../../auth/identity';
import { EVENT_STORE, type EventStore, type RecordedEvent } from '../../events/event-store/event-store.port';
import { sseStart, streamEventsAsSse, wantsSse } from '../../http/event-stream-sse';
import { METRICS, type TriadMetrics } from '../../observability/metrics';
import { parseIntParam } from '../../http/int-param';
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
    const revision = (name: string, raw: string | undefined) => parseIntParam(name, raw, 0, 0, Number.MAX_SAFE_INTEGER);
    const from = revision('fromRevision', fromRevision);
    if ((await this.store.streamRevision(stream)) === null) throw new NotFoundException(`project ${id} not found`);
    if (!wantsSse(req)) {
      res.json({ projectId: id, events: await this.store.readStream(stream, { fromRevision: from, maxCount: 10_000 }) });
      return;
    }
    const isEnd = (e: RecordedEvent) => e.type === 'ProjectEnded';
    await streamEventsAsSse({ store: this.store, metrics: this.metrics, stream, from: sseStart(req, from, revision), isEnd }, req, res);
  }
}
