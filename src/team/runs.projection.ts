import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { EVENT_STORE, type EventStore, type Subscription } from '../events/event-store.port';
import { TERMINAL_STATUSES, type RunStatus } from './domain/run-events';
import { applyToSummary, runIdOfStream, type RunSummary, type RunSummaryState } from './run-summary';

/**
 * Keeps the runs read model from a catch-up subscription to the store, so it sees runs written by
 * any process. It is rebuilt from the start at each boot (it lives in memory), and queries wait
 * for it to reach the store's head, so a client reads its own writes.
 */
@Injectable()
export class RunsProjection implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RunsProjection.name);
  private readonly runs = new Map<string, RunSummaryState>();
  private subscription?: Subscription;
  private position = 0;
  private readonly waiters = new Set<() => void>();
  private failed?: Error;

  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  onModuleInit(): void {
    // Unfiltered, so its position tracks the store's head exactly; other streams are skipped here.
    this.subscription = this.store.subscribe({ batchSize: 1000 });
    void this.consume(this.subscription);
  }

  private async consume(sub: Subscription): Promise<void> {
    try {
      for await (const e of sub) {
        const runId = runIdOfStream(e.streamId);
        if (runId) {
          const next = applyToSummary(this.runs.get(runId), e);
          if (next) this.runs.set(runId, next);
        }
        this.advance(e.position);
      }
    } catch (err) {
      this.failed = err as Error;
      this.logger.error(`runs projection stopped: ${(err as Error).message}`);
    }
  }

  private advance(position: number): void {
    this.position = position;
    for (const w of this.waiters) w();
  }

  /** Resolves once every event up to the store's current head is folded (bounded wait). */
  async catchUp(timeoutMs = 5000): Promise<void> {
    const head = await this.store.headPosition();
    const deadline = Date.now() + timeoutMs;
    while (this.position < head && !this.failed) {
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
    if (this.failed) throw this.failed;
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
    this.subscription?.close();
  }
}
