/**
 * Group commit for a store's writes over the network: a write made while a batch is in flight
 * waits, then goes with every write made meanwhile. One write with nothing in flight goes at the
 * next turn of the event loop, alone. Every write of a process to a store that serialises its
 * commits (PostgreSQL's position counter, or any transaction with a WAL flush) then pays a round
 * trip, a transaction and a flush once per batch rather than once each.
 *
 * Hand-written: a queue and a flag around the store's own batch statement, which only the store
 * can write (and whose failure rules are its own); no library does that part.
 */
export interface Waiting<T, R> {
  readonly item: T;
  resolve(result: R): void;
  reject(error: unknown): void;
}

export class GroupCommit<T, R> {
  private waiting: Array<Waiting<T, R>> = [];
  private writing = false;
  private idlers: Array<() => void> = [];

  /**
   * `write` settles every write of its batch; when it throws, every write of the batch not settled
   * yet is rejected with what it threw. `take` says how many of the waiting writes go in the next
   * batch (at least one).
   */
  constructor(
    private readonly write: (batch: Array<Waiting<T, R>>) => Promise<void>,
    private readonly take: (waiting: readonly Waiting<T, R>[]) => number,
  ) {}

  /** Resolves with the write's result once its batch is written. */
  push(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (!this.writing) {
        this.writing = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  /** Resolves once no write is waiting or in flight. */
  idle(): Promise<void> {
    if (!this.writing) return Promise.resolve();
    return new Promise<void>((resolve) => this.idlers.push(resolve));
  }

  /** Writes what waits, a batch at a time, until nothing does. */
  private async drain(): Promise<void> {
    try {
      while (this.waiting.length > 0) {
        let batch: Array<Waiting<T, R>> = [];
        try {
          batch = this.waiting.splice(0, Math.max(1, this.take(this.waiting)));
          await this.write(batch);
        } catch (err) {
          // A take that threw took nothing: what waits fails rather than waiting for ever.
          for (const w of batch.length > 0 ? batch : this.waiting.splice(0)) w.reject(err);
        }
      }
    } finally {
      this.writing = false;
      for (const resolve of this.idlers.splice(0)) resolve();
    }
  }
}

/** How many writes to take: at most `maxCount`, and `maxBytes` by `bytesOf` (the first always). */
export function takeUpTo<T, R>(waiting: readonly Waiting<T, R>[], maxCount: number, maxBytes: number, bytesOf: (item: T) => number): number {
  let bytes = 0;
  let n = 0;
  for (const w of waiting) {
    bytes += bytesOf(w.item);
    if (n > 0 && (n === maxCount || bytes > maxBytes)) break;
    n++;
  }
  return n;
}

/**
 * Writes a batch's writes one at a time with `writeOne`, settling each (when the batch statement
 * failed for one of them). Once one fails with an error `isOutage` says is the store's, the rest
 * fail with it at once rather than each waiting out its own timeout.
 */
export async function settleOneByOne<T, R>(batch: Array<Waiting<T, R>>, writeOne: (item: T) => Promise<R>, isOutage: (error: unknown) => boolean): Promise<void> {
  let gone: unknown;
  for (const w of batch) {
    if (gone !== undefined) {
      w.reject(gone);
      continue;
    }
    try {
      w.resolve(await writeOne(w.item));
    } catch (err) {
      if (isOutage(err)) gone = err;
      w.reject(err);
    }
  }
}
