import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { EVENT_STORE, type EventStore, type Subscription } from '../events/event-store.port';
import { isStoreUnavailable, StoreUnavailableError } from '../events/errors';
import { pause, storeBackoffMs } from '../events/store-retry';
import { HEALTH_REGISTRY, type HealthRegistry } from '../shared/health';
import { TERMINAL_STATUSES, type RunStatus } from './domain/run-events';
import { applyToSummary, runIdOfStream, type RunSummary, type RunSummaryState } from './run-summary';

/** The name this projection reports its health under. */
const PROJECTION = 'runs';

/**
 * Keeps the runs read model from a catch-up subscription to the store, so it sees runs written by
 * any process. It is rebuilt from the start at each boot (it lives in memory), and queries wait
 * for it to reach the store's head, so a client reads its own writes. If folding fails, it starts
 * again after a backoff from the last event it folded (never folding an event twice); meanwhile
 * queries fail with the reason and `/health` reports it.
 */
@Injectable()
export class RunsProjection implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RunsProjection.name);
  private readonly runs = new Map<string, RunSummaryState>();
  private subscription?: Subscription;
  private position = 0;
  private readonly waiters = new Set<() => void>();
  /** Why the last subscription stopped, until folding resumes. */
  private failed?: Error;
  private stopped = false;
  private readonly stop = new AbortController();

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(HEALTH_REGISTRY) private readonly health: HealthRegistry,
  ) {}

  onModuleInit(): void {
    this.health.projectionAt(PROJECTION, 0);
    void this.run();
  }

  private async run(): Promise<void> {
    for (let attempt = 1; !this.stopped; attempt++) {
      // Unfiltered, so its position tracks the store's head exactly; other streams are skipped here.
      const sub = this.store.subscribe({ batchSize: 1000, after: this.position });
      this.subscription = sub;
      try {
        for await (const e of sub) {
          const runId = runIdOfStream(e.streamId);
          if (runId) {
            const next = applyToSummary(this.runs.get(runId), e);
            if (next) this.runs.set(runId, next);
          }
          this.advance(e.position);
          attempt = 1;
        }
        return;
      } catch (err) {
        if (this.stopped) return;
        this.failed = err as Error;
        this.health.projectionFailed(PROJECTION, isStoreUnavailable(err) ? 'the event store is not reachable' : (err as Error).message);
        this.logger.error(`runs projection stopped, restarting at position ${this.position}: ${(err as Error).message}`);
        for (const w of this.waiters) w();
        await pause(storeBackoffMs(attempt), this.stop.signal);
      } finally {
        sub.close();
      }
    }
  }

  private advance(position: number): void {
    this.position = position;
    if (this.failed) {
      this.failed = undefined;
      this.logger.log(`runs projection folding again from position ${position}`);
    }
    this.health.projectionAt(PROJECTION, position);
    for (const w of this.waiters) w();
  }

  /** Resolves once every event up to the store's current head is folded (bounded wait). */
  async catchUp(timeoutMs = 5000): Promise<void> {
    const head = await this.store.headPosition();
    const deadline = Date.now() + timeoutMs;
    while (this.position < head) {
      // Failing now (it restarts by itself): say why rather than wait out the deadline.
      if (this.failed) throw isStoreUnavailable(this.failed) ? new StoreUnavailableError(this.failed.message) : new Error(`the runs read model is failing: ${this.failed.message}`);
      if (Date.now() > deadline) throw new Error('the runs read model is behind the store');
      await new Promise<void>((resolve) => {
        const done = () => {
          this.waiters.delete(done);
          clearTimeout(t);
          resolve();
        };
        const t = setTimeout(done, 20);
        this.waiters.add(done);
      });
    }
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
    this.stopped = true;
    this.stop.abort();
    this.subscription?.close();
  }
}
