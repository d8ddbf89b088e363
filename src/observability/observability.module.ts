import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Subscription } from 'rxjs';
import { EVENT_STORE, type EventStore } from '../events/event-store/event-store.port';
import { DecisionLogProjector } from '../review-gate/decision-log/decision-log.providers';
import { ReviewGateModule } from '../review-gate/review-gate.module';
import { HEALTH_REGISTRY, type HealthRegistry } from '../shared/health';
import { LiveRunBus } from '../team/live/live-run-bus';
import { RunSupervisor } from '../team/dispatch/run-supervisor';
import { RunsProjection } from '../team/runs/runs.projection';
import { TeamModule } from '../team/team.module';
import { MetricsController } from './metrics.controller';
import { TOOL_REGISTRY } from '../team/tokens';
import type { ToolRegistry } from '../team/tools/tool-registry';
import { METRICS, type TriadMetrics } from './metrics';

/**
 * Connects the metrics to what they read: the events this process's drivers record (the live
 * bus), and, at each scrape, the runs read model, the supervisor, the decision log projector, the
 * store head and the components' own lines.
 */
@Injectable()
export class MetricsWiring implements OnModuleInit, OnModuleDestroy {
  private feed?: Subscription;

  constructor(
    @Inject(METRICS) private readonly metrics: TriadMetrics,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(HEALTH_REGISTRY) private readonly health: HealthRegistry,
    private readonly live: LiveRunBus,
    private readonly supervisor: RunSupervisor,
    private readonly runs: RunsProjection,
    private readonly decisionLog: DecisionLogProjector,
    @Inject(TOOL_REGISTRY) private readonly tools: ToolRegistry,
  ) {}

  onModuleInit(): void {
    const { runs, supervisor, store, health, decisionLog } = this;
    this.metrics.use({
      runStatuses: () => runs.list().map((r) => r.status),
      pendingReviews: () => runs.nonTerminal().flatMap((r) => (r.pendingReview ? [{ since: r.pendingReview.openedAt }] : [])),
      pendingApprovals: () => runs.nonTerminal().flatMap((r) => (r.pendingApprovals ?? []).map((a) => ({ since: a.requestedAt }))),
      activeDrivers: () => supervisor.activeCount,
      placements: () => supervisor.placement.placed,
      maxActiveRuns: () => supervisor.pool.maxActiveRuns,
      headPosition: () => store.headPosition(),
      decisionLog: () => decisionLog.projection.lag(),
      health: () => health.figures(),
      leaseHeartbeat: () => supervisor.pool.heartbeatFigures(),
      knownTool: (name) => this.tools.get(name) !== undefined,
    });
    this.feed = this.live.all().subscribe((item) => {
      if (item.kind === 'events') this.metrics.observeRunEvents(item.events);
    });
  }

  onModuleDestroy(): void {
    this.feed?.unsubscribe();
  }
}

@Module({
  imports: [TeamModule, ReviewGateModule],
  controllers: [MetricsController],
  providers: [MetricsWiring],
})
export class ObservabilityModule {}
