import { Controller, Get, Header, Inject, ServiceUnavailableException } from '@nestjs/common';
import { Public } from '../auth/auth.guard';
import { EVENT_STORE, type EventStore } from '../events/event-store.port';
import { DurabilityError } from '../events/wal-sync';
import { MODEL_PROVIDER, type ModelProvider } from '../team/models/model.port';
import { RunSupervisor } from '../team/run-supervisor';
import { RunsProjection } from '../team/runs.projection';

@Controller()
@Public()
export class HealthController {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(MODEL_PROVIDER) private readonly model: ModelProvider,
    private readonly supervisor: RunSupervisor,
    private readonly runs: RunsProjection,
  ) {}

  /** Liveness and readiness: the store answers. */
  @Get('health')
  async health() {
    try {
      const head = await this.store.headPosition();
      return { status: 'ok', store: this.store.kind, model: this.model.name, offlineModel: this.model.name === 'offline', headPosition: head };
    } catch (err) {
      // A store that can no longer make writes durable says why (and that a restart is needed).
      throw new ServiceUnavailableException(err instanceof DurabilityError ? err.message : 'the event store is not reachable');
    }
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
    lines.push('# HELP triad_event_store_head_position Global position of the last event.', '# TYPE triad_event_store_head_position gauge');
    lines.push(`triad_event_store_head_position ${await this.store.headPosition()}`);
    const mem = process.memoryUsage();
    lines.push('# HELP process_resident_memory_bytes Resident memory.', '# TYPE process_resident_memory_bytes gauge');
    lines.push(`process_resident_memory_bytes ${mem.rss}`);
    lines.push('# HELP process_uptime_seconds Process uptime.', '# TYPE process_uptime_seconds gauge');
    lines.push(`process_uptime_seconds ${Math.round(process.uptime())}`);
    return `${lines.join('\n')}\n`;
  }
}
