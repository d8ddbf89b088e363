import type { EventFilter, EventStore, RecordedEvent, Subscription } from './event-store/event-store.port';
import { isStoreUnavailable, StoreUnavailableError } from './errors';
import { followAcrossFaults } from './outlast-store';
import type { HealthRegistry } from '../shared/health';

/** Where a fold says what it is doing (a Nest Logger fits). */
export interface FoldLogger {
  log(message: string): void;
  error(message: string): void;
}

/** How long a query waits between looks at a fold that is behind (it is also woken by every event). */
const WAIT_SLICE_MS = 20;

/**
 * An in-memory read model's engine: folds the events of the store it is given a filter for (every
 * event without one), from a catch-up subscription, into whatever `apply` keeps, so it sees what
 * any process wrote. Its position is how far it has scanned, not only the last event it folded,
 * so it tracks the store's head exactly either way; a filter lets the process's shared tail read
 * only what some reader folds. When folding fails (the store went away), it starts again
 * after a backoff from the last event it folded, never folding an event twice; meanwhile
 * `catchUp` fails with the reason and `/health` reports it under `name`.
 */
export class CatchUpFold {
  private subscription?: Subscription;
  private position = 0;
  private readonly waiters = new Set<() => void>();
  /** Why the last subscription stopped, until folding resumes. */
  private failed?: Error;
  private readonly stop = new AbortController();

  constructor(
    private readonly store: EventStore,
    private readonly health: HealthRegistry,
    private readonly name: string,
    private readonly apply: (event: RecordedEvent) => void,
    private readonly logger: FoldLogger,
    /** The events `apply` needs (stored types); every event when absent. */
    private readonly filter?: EventFilter,
  ) {}

  /** Starts folding in the background (it runs until `close`). */
  start(): void {
    this.health.projectionAt(this.name, 0);
    // Never rejects: each fault goes to `onFault` (the log and /health) and folding resumes after it.
    void this.run();
  }

  private async run(): Promise<void> {
    await followAcrossFaults({
      signal: this.stop.signal,
      from: this.position,
      life: async ({ after, seen }) => {
        const sub = this.store.subscribe({
          batchSize: 1000,
          after,
          filter: this.filter,
          onScanned: (position) => {
            if (position <= this.position) return;
            this.advance(position);
            seen(position);
          },
        });
        this.subscription = sub;
        try {
          for await (const e of sub) {
            this.apply(e);
            this.advance(e.position);
            seen(e.position);
          }
        } finally {
          sub.close();
        }
      },
      onFault: (err) => {
        this.failed = err as Error;
        this.health.projectionFailed(this.name, isStoreUnavailable(err) ? 'the event store is not reachable' : (err as Error).message);
        this.logger.error(`${this.name} projection stopped, restarting at position ${this.position}: ${(err as Error).message}`);
        for (const w of this.waiters) w();
      },
    });
  }

  private advance(position: number): void {
    this.position = position;
    if (this.failed) {
      this.failed = undefined;
      this.logger.log(`${this.name} projection folding again from position ${position}`);
    }
    this.health.projectionAt(this.name, position);
    for (const w of this.waiters) w();
  }

  /** Resolves once every event up to the store's current head is folded (bounded wait): a client reads its own writes. */
  async catchUp(timeoutMs = 5000): Promise<void> {
    const head = await this.store.headPosition();
    if (this.position < head) this.store.expedite?.();
    const deadline = Date.now() + timeoutMs;
    while (this.position < head) {
      // Failing now (it restarts by itself): say why rather than wait out the deadline.
      if (this.failed) throw isStoreUnavailable(this.failed) ? new StoreUnavailableError(this.failed.message) : new Error(`the ${this.name} read model is failing: ${this.failed.message}`);
      if (Date.now() > deadline) throw new Error(`the ${this.name} read model is behind the store`);
      await new Promise<void>((resolve) => {
        const done = () => {
          this.waiters.delete(done);
          clearTimeout(t);
          resolve();
        };
        const t = setTimeout(done, WAIT_SLICE_MS);
        this.waiters.add(done);
      });
    }
  }

  close(): void {
    this.stop.abort();
    this.subscription?.close();
  }
}
