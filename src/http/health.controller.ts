import { Controller, Get, Header, Inject, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Public } from '../auth/auth.guard';
import { EVENT_STORE, type EventStore } from '../events/event-store.port';
import { DurabilityError } from '../events/wal-sync';
import { HEALTH_REGISTRY, type HealthRegistry } from '../shared/health';
import { MODEL_PROVIDER, type ModelProvider } from '../team/models/model.port';
import { RunSupervisor } from '../team/run-supervisor';
import { RunsProjection } from '../team/runs.projection';

@Controller()
@Public()
export class HealthController {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(MODEL_PROVIDER) private readonly model: ModelProvider,
    @Inject(HEALTH_REGISTRY) private readonly registry: HealthRegistry,
    private readonly supervisor: RunSupervisor,
    private readonly runs: RunsProjection,
  ) {}

  /**
   * Liveness and readiness. 503 `degraded` with the reason while the store does not answer (as
   * the components using it report, or this check's own read of the head), while a projection
   * fails or is far behind, or when the store can no longer make writes durable.
   */
  @Get('health')
  async health(@Res({ passthrough: true }) res: Response) {
    const degraded = (reason: string) => {
      res.status(503);
      return { statusCode: 503, error: 'Service Unavailable', status: 'degraded', reason, message: reason };
    };
    const known = this.registry.assess();
    if (!known.ok) return degraded(known.reasons.join('; '));
    let head: number;
    try {
      head = await this.store.headPosition();
    } catch (err) {
      // A store that can no longer make writes durable says why (and that a restart is needed).
      return degraded(err instanceof DurabilityError ? err.message : 'the event store is not reachable');
    }
    const assessed = this.registry.assess(head);
    if (!assessed.ok) return degraded(assessed.reasons.join('; '));
    return { status: 'ok', store: this.store.kind, model: this.model.name, offlineModel: this.model.name === 'offline', headPosition: head };
  }

  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4')
  async metrics(): Promise<string> {
    const lines: string[] = [];
    const byStatus = new Map<string, number>();
    for (const r of this.runs.list()) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
    lines.push('# HELP triad_runs Runs by status, from the runs read model.', '# TYPE triad_runs gauge');
    for (const [status, n] of byStatus) lines.push(`triad_runs{status="${status}"} ${n}`);
    lines.push('# HELP triad_active_drivers Runs driven by this process now.', '# TYPE triad_active_drivers gauge');
    lines.push(`triad_active_drivers ${this.supervisor.activeCount}`);
    // The head is left out while the store does not answer: the rest still tells what happens.
    const head = await this.store.headPosition().catch(() => undefined);
    if (head !== undefined) {
      lines.push('# HELP triad_event_store_head_position Global position of the last event.', '# TYPE triad_event_store_head_position gauge');
      lines.push(`triad_event_store_head_position ${head}`);
    }
    lines.push(...this.registry.metricLines(), ...this.supervisor.metricLines());
    const mem = process.memoryUsage();
    lines.push('# HELP process_resident_memory_bytes Resident memory.', '# TYPE process_resident_memory_bytes gauge');
    lines.push(`process_resident_memory_bytes ${mem.rss}`);
    lines.push('# HELP process_uptime_seconds Process uptime.', '# TYPE process_uptime_seconds gauge');
    lines.push(`process_uptime_seconds ${Math.round(process.uptime())}`);
    return `${lines.join('\n')}\n`;
  }
}
