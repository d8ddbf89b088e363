import { PositionNotifier } from '../position-notifier';
import { CatchUpSubscription } from '../subscription';
import type { EventFilter, ReadAllOptions, RecordedEvent, SubscribeOptions, Subscription, TailPage } from './event-store.port';
import { SharedTail, type SharedTailOptions, type TailRead } from './shared-tail';

/**
 * The live side the SQLite, PostgreSQL and EventStoreDB stores share: a notifier of positions (this
 * process's appends, other processes' news) and the shared tail it wakes, under the process's
 * subscriptions. A base class, not a helper each store holds, because the part of the port it
 * implements (subscribe, readTail, expedite, waitForEvents) was the same code in all three; a
 * store supplies only how the tail reads it (`readAfter`) and its head.
 */
export abstract class TailedStore {
  /** Woken by this process's appends and by the news of other processes' (each store's own channel). */
  protected readonly notifier = new PositionNotifier();
  /** What is new, read once for all of this process's subscriptions. */
  readonly tail: SharedTail;

  protected constructor(tailOptions?: SharedTailOptions) {
    this.tail = new SharedTail(
      {
        readAfter: (after, maxCount, filters) => this.readAfter(after, maxCount, filters),
        readHead: () => this.headPosition(),
        knownHead: () => this.notifier.known,
        announce: (position) => this.notifier.notify(position),
      },
      tailOptions,
    );
  }

  /** The tail's read of the store (see TailSource.readAfter). */
  protected abstract readAfter(after: number, maxCount: number, filters: readonly EventFilter[] | undefined): Promise<TailRead>;
  abstract headPosition(): Promise<number>;
  abstract readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  abstract loadCheckpoint(name: string): Promise<number | null>;
  abstract saveCheckpoint(name: string, position: number): Promise<void>;

  subscribe(options: SubscribeOptions = {}): Subscription {
    return new CatchUpSubscription(this, options);
  }

  /** One read of what is new for all of this process's subscriptions (see SharedTail). */
  readTail(after: number, maxCount: number, filter?: EventFilter, urgent?: boolean): Promise<TailPage | undefined> {
    return this.tail.read(after, maxCount, filter, urgent);
  }

  expedite(): void {
    this.tail.hurry();
  }

  waitForEvents(after: number, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return this.notifier.wait(after, timeoutMs, signal);
  }
}
