import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { CatchUpFold } from '../../events/catch-up-fold';
import { EVENT_STORE, type EventStore, type RecordedEvent } from '../../events/event-store/event-store.port';
import { HEALTH_REGISTRY, type HealthRegistry } from '../../shared/health';
import { RUN_STREAM_PREFIX, TERMINAL_STATUSES, type RunStatus } from '../domain/run-events';
import { applyToSummary, runIdOfStream, SUMMARY_EVENT_TYPES, type RunSummary, type RunSummaryState } from './run-summary';

/** The name this projection reports its health under. */
const PROJECTION = 'runs';

/**
 * The runs read model, folded from the store by a `CatchUpFold`, so it sees runs written by any
 * process: the events of run streams that change a summary (SUMMARY_EVENT_TYPES), not the rest. It is rebuilt from the start at each boot (it lives in memory), and queries wait
 * for it to reach the store's head, so a client reads its own writes.
 */
@Injectable()
export class RunsProjection implements OnModuleInit, OnApplicationShutdown {
  private readonly runs = new Map<string, RunSummaryState>();
  private readonly fold: CatchUpFold;

  constructor(@Inject(EVENT_STORE) store: EventStore, @Inject(HEALTH_REGISTRY) health: HealthRegistry) {
    this.fold = new CatchUpFold(store, health, PROJECTION, (e) => this.apply(e), new Logger(RunsProjection.name), {
      streamPrefixes: [RUN_STREAM_PREFIX],
      types: [...SUMMARY_EVENT_TYPES],
    });
  }

  onModuleInit(): void {
    this.fold.start();
  }

  private apply(e: RecordedEvent): void {
    const runId = runIdOfStream(e.streamId);
    if (!runId) return;
    const next = applyToSummary(this.runs.get(runId), e);
    if (next) this.runs.set(runId, next);
  }

  /** Resolves once every event up to the store's current head is folded (bounded wait). */
  catchUp(timeoutMs?: number): Promise<void> {
    return this.fold.catchUp(timeoutMs);
  }

  get(runId: string): RunSummary | undefined {
    return this.runs.get(runId)?.summary;
  }

  list(filter: { status?: RunStatus; limit?: number } = {}): RunSummary[] {
    const all = [...this.runs.values()].map((s) => s.summary).filter((s) => !filter.status || s.status === filter.status);
    all.sort((a, b) => (a.startedAt < b.startedAt ? 1 : a.startedAt > b.startedAt ? -1 : 0));
    return filter.limit ? all.slice(0, filter.limit) : all;
  }

  nonTerminal(): RunSummary[] {
    return [...this.runs.values()].map((s) => s.summary).filter((s) => !TERMINAL_STATUSES.has(s.status));
  }

  onApplicationShutdown(): void {
    this.fold.close();
  }
}
