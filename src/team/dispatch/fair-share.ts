import { performance } from 'node:perf_hooks';

/** One slice of the event loop given to run steps before it turns to timers, sockets and the disk. */
export const DEFAULT_SLICE_MS = 4;

/**
 * Cooperative time-slicing of the run drivers sharing one event loop. Many runs often resume at
 * the same moment — a group fsync acknowledges a hundred appends in one callback, model calls
 * started together come back together — and each resumption folds events and prepares the next
 * step, so run back to back they would hold the loop for tens of milliseconds while HTTP
 * requests, SSE clients, lease heartbeats and the disk's callbacks wait.
 *
 * A driver passes `turn()` before each step. Within the current slice, with nobody waiting, it
 * goes on at once; otherwise it queues, and a slice — started from `setImmediate`, so the loop has
 * polled in between — releases the queue in order until the slice's time is spent (checked
 * between steps, so a slice ends after the step that crosses it). A lone run waits one
 * `setImmediate` when its slice has run out or lapsed during I/O. A released step that ends in I/O
 * does not block the queue: the next waiter is released as soon as the step yields.
 *
 * It runs on `setImmediate`, `queueMicrotask` and `performance.now()`: a test with fake timers
 * must not pass it to a driver.
 */
export class FairShare {
  private readonly queue: Array<() => void> = [];
  private sliceEnd = 0;
  private draining = false;
  /** Slices started; how many there were for some work is how often the loop got to breathe. */
  slices = 0;

  constructor(
    private readonly sliceMs = DEFAULT_SLICE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Undefined when the caller may go on at once; otherwise a promise that resolves at its turn. */
  turn(): Promise<void> | undefined {
    if (this.queue.length === 0 && this.now() < this.sliceEnd) return undefined;
    return new Promise<void>((resolve) => {
      this.queue.push(resolve);
      if (!this.draining) {
        this.draining = true;
        setImmediate(this.slice);
      }
    });
  }

  /** Waiters queued now. */
  get waiting(): number {
    return this.queue.length;
  }

  private readonly slice = (): void => {
    this.slices++;
    this.sliceEnd = this.now() + this.sliceMs;
    this.release();
  };

  private release(): void {
    this.queue.shift()?.();
    // Queued after the released step's continuation: runs once that step has yielded.
    queueMicrotask(this.afterStep);
  }

  private readonly afterStep = (): void => {
    if (this.queue.length === 0) this.draining = false;
    else if (this.now() < this.sliceEnd) this.release();
    else setImmediate(this.slice);
  };
}

/** The process's drivers share one. */
export const processFairShare = new FairShare();
