import { settledWithin } from '../shared/pause';

/**
 * Tells other processes that the store's head moved, at most once per window: the first append
 * after a quiet window is told at once, the appends that follow within the window together when it
 * ends (the highest position; a position says "read up to here", so one covers all before it).
 *
 * Why: on PostgreSQL a NOTIFY in every append's transaction made every listening process wake, read
 * a packet and parse it once per append of every process (about 16 per run), and made PostgreSQL
 * signal every listening backend, each of which reads every queued notification. That cost grows
 * with the number of processes, while what a listener does with the news (the shared tail gathers
 * it for up to 40 ms before reading) does not need it more often than once per window. Hand-written:
 * it is a few lines of timing with triad's own rule (leading edge, then one trailing send per
 * window), not worth a dependency.
 *
 * A send that fails (the database is gone for a moment) is reported and not retried: listeners
 * re-read every 250 ms without news, and the next append's send tells them anyway.
 */
export class CoalescedNotify {
  /** The highest position sent or being sent. */
  private sent = 0;
  /** The highest position told since the last send, waiting for the window to end (0: none). */
  private pending = 0;
  private window: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly send: (position: number) => Promise<void>,
    private readonly windowMs: number,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** An append committed at `position`: other processes hear of it now, or when the window ends. */
  appended(position: number): void {
    if (this.closed || position <= this.sent || position <= this.pending) return;
    if (this.window) this.pending = position;
    else this.flush(position);
  }

  /**
   * Sends what is pending at once and waits for every send in flight, for `graceMs` at most (a
   * database that does not answer must not hold up a shutdown); later appends are not told.
   */
  async close(graceMs = 1000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.window) clearTimeout(this.window);
    this.window = undefined;
    if (this.pending > this.sent) this.start(this.pending);
    await settledWithin(Promise.all(this.inFlight), graceMs);
  }

  private flush(position: number): void {
    this.start(position);
    this.window = setTimeout(() => {
      this.window = undefined;
      if (this.pending > this.sent) this.flush(this.pending);
    }, this.windowMs);
    // A process with nothing else to do may exit: what is pending then is sent by close().
    this.window.unref();
  }

  private start(position: number): void {
    this.sent = position;
    this.pending = 0;
    const sending: Promise<void> = this.send(position)
      .catch((err: unknown) => this.onError(err))
      .finally(() => this.inFlight.delete(sending));
    this.inFlight.add(sending);
  }
}
