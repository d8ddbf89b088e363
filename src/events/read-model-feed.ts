import type { EventStore, RecordedEvent } from './event-store.port';
import { CatchUpFold, type FoldLogger } from './catch-up-fold';
import type { HealthRegistry } from '../shared/health';

/** The Nest token of the process's one feed of its in-memory read models. */
export const READ_MODEL_FEED = Symbol('READ_MODEL_FEED');

interface RegisteredFold {
  name: string;
  apply: (event: RecordedEvent) => void;
  /** The last event this fold applied: after a restart, what it has folded already is skipped. */
  position: number;
}

/**
 * One catch-up subscription to the whole store per process, feeding every in-memory read model
 * (runs, projects): each event is read and decoded once, however many read models fold it. Read
 * models register before the feed starts (in their constructors; it starts at module init). When
 * one throws, the feed restarts after a backoff (`CatchUpFold`); each read model remembers the
 * last event it applied, so none folds an event twice and the one that failed gets it again.
 */
export class ReadModelFeed {
  private readonly folds: RegisteredFold[] = [];
  private readonly engine: CatchUpFold;
  private started = false;

  constructor(store: EventStore, health: HealthRegistry, logger: FoldLogger) {
    this.engine = new CatchUpFold(store, health, 'read-models', (e) => this.fanOut(e), logger, 'the read models are');
  }

  /** Adds a read model; every event of the store, from the first, is applied to it in order. */
  register(name: string, apply: (event: RecordedEvent) => void): void {
    if (this.started) throw new Error(`read model ${name} registered after the feed started`);
    this.folds.push({ name, apply, position: 0 });
  }

  /** Starts folding (a process with no read model, a one-shot command's, reads nothing). */
  start(): void {
    if (this.started || this.folds.length === 0) return;
    this.started = true;
    this.engine.start();
  }

  private fanOut(event: RecordedEvent): void {
    for (const fold of this.folds) {
      if (event.position <= fold.position) continue;
      try {
        fold.apply(event);
      } catch (err) {
        throw new Error(`${fold.name}: ${(err as Error).message}`, { cause: err });
      }
      fold.position = event.position;
    }
  }

  /** Resolves once every event up to the store's current head is folded into every read model (bounded wait). */
  catchUp(timeoutMs?: number): Promise<void> {
    return this.engine.catchUp(timeoutMs);
  }

  close(): void {
    this.engine.close();
  }
}
