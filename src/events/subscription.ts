import { isStoreUnavailable } from './errors';
import type { EventStore, RecordedEvent, SubscribeOptions, Subscription, TailPage } from './event-store/event-store.port';
import { scannedTo } from './read-helpers';
import { deepFreeze } from './event-store/shared-tail';
import { untilStoreAnswers } from './outlast-store';

/** What a subscription reads of a store: the port's reads, its shared tail when it keeps one, and named checkpoints. */
export type SubscribedStore = Pick<EventStore, 'readAll' | 'readTail' | 'headPosition' | 'waitForEvents' | 'loadCheckpoint' | 'saveCheckpoint'>;

const DEFAULT_BATCH = 256;
/** How long a live subscription sleeps before re-reading when no notification arrives (other processes). */
const POLL_MS = 250;

/**
 * Catch-up subscription over any store: reads history page by page, then waits for new events.
 * Pull-based: a page is read only when the consumer asks for the next event and the buffer is
 * empty, so a slow consumer holds at most one page in memory. A store that does not answer is
 * waited out (backoff with jitter) and the read is made again from the last event delivered, so
 * a consumer sees neither a gap nor an event twice; any other error ends the iteration.
 */
export class CatchUpSubscription implements Subscription {
  private current = 0;
  private closed = false;
  private readonly abort = new AbortController();

  constructor(
    private readonly store: SubscribedStore,
    private readonly options: SubscribeOptions,
  ) {
    options.signal?.addEventListener('abort', () => this.close(), { once: true });
  }

  get position(): number {
    return this.current;
  }

  async checkpoint(position = this.current): Promise<void> {
    if (!this.options.name) throw new Error('checkpoint() needs a named subscription');
    await this.store.saveCheckpoint(this.options.name, position);
  }

  close(): void {
    this.closed = true;
    this.abort.abort();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<RecordedEvent> {
    let after = this.options.after;
    if (after === undefined && this.options.name) {
      const name = this.options.name;
      after = (await this.retrying(() => this.store.loadCheckpoint(name))) ?? 0;
    }
    this.current = after ?? 0;
    const batchSize = this.options.batchSize ?? DEFAULT_BATCH;
    let scanned = this.current;
    while (!this.closed) {
      const from = scanned;
      const page = await this.retrying(() => this.readPage(from, batchSize));
      if (!page || this.closed) return;
      for (const event of page.events) {
        if (this.closed) return;
        this.current = event.position;
        yield event;
      }
      scanned = Math.max(scanned, page.scannedTo);
      // Read again at once while reads move on; wait for news only after one that found nothing.
      if (scanned > from) {
        this.options.onScanned?.(scanned);
        continue;
      }
      await this.store.waitForEvents(scanned, POLL_MS, this.abort.signal);
    }
  }

  /**
   * The next page after `after`: from the process's shared tail when the store keeps one and
   * `after` lies within it, else from the store. With a filter, the store's head is read first:
   * when the filtered page comes back short, no matching event exists up to that head
   * (everything at or below it was committed before the read), so the scan can skip ahead
   * without missing one.
   */
  private async readPage(after: number, batchSize: number): Promise<TailPage> {
    const filter = this.options.filter;
    const tail = await this.store.readTail?.(after, batchSize, filter, this.options.urgent);
    if (tail) return tail;
    const head = filter ? await this.store.headPosition() : 0;
    const events = await this.store.readAll({ after, maxCount: batchSize, filter });
    // Frozen like the tail's, so that a consumer that changes an event fails the same way whichever path it came by.
    for (const event of events) deepFreeze(event);
    return { events, scannedTo: scannedTo(after, events.at(-1)?.position, events.length === batchSize, head) };
  }

  /** Runs `read` until the store answers; undefined once the subscription is closed. */
  private async retrying<T>(read: () => Promise<T>): Promise<T | undefined> {
    if (this.closed) return undefined;
    try {
      return await untilStoreAnswers(read, { signal: this.abort.signal });
    } catch (err) {
      // Closed while the store was away: the fault ends nothing the consumer still waits for.
      if (this.closed && isStoreUnavailable(err)) return undefined;
      throw err;
    }
  }
}
