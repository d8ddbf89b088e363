import { closeSync, fdatasync, openSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

/** The store could not make committed writes durable: it refuses every further write until restarted. */
export class DurabilityError extends Error {
  override readonly name = 'DurabilityError';
}

type SyncFn = (fd: number, callback: (err: NodeJS.ErrnoException | null) => void) => void;

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Group commit for a SQLite WAL database whose connections commit with `synchronous=NORMAL`
 * (no fsync inside the commit): `sync()` resolves once everything written to the WAL file before
 * the call is on disk. One fdatasync runs at a time, on libuv's thread pool, so the event loop
 * never waits for the disk; callers that arrive while it runs share the next one. fsync on Linux
 * flushes the file, not a descriptor's own writes, so syncing our descriptor covers the frames
 * SQLite wrote through its own.
 *
 * After a failed fdatasync the kernel may already have dropped the dirty pages, so retrying could
 * report success for data that is gone: the first failure is kept and every later call fails
 * with it, as PostgreSQL does; only a restart (which replays the WAL from disk) recovers.
 */
export class WalSync {
  private fd: number | undefined;
  private inFlight = false;
  private next: Waiter[] = [];
  private idle: Array<() => void> = [];
  private failed: DurabilityError | undefined;
  private closed = false;
  /** fdatasyncs completed: how many commits shared one is a group commit's measure. */
  syncs = 0;
  /** Their total duration, from the request to the thread pool to its callback (ms). */
  syncMs = 0;

  constructor(
    private readonly walFile: string,
    private readonly syncFn: SyncFn = fdatasync,
  ) {}

  get failure(): DurabilityError | undefined {
    return this.failed;
  }

  /** Refuses every further sync (and so every write) with this reason, as after a failed fdatasync. */
  failWith(reason: string): DurabilityError {
    this.failed ??= new DurabilityError(reason);
    return this.failed;
  }

  /** Resolves once every WAL write made before this call is durable. */
  sync(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.closed) return Promise.reject(new DurabilityError('the event store is closed'));
    return new Promise<void>((resolve, reject) => {
      this.next.push({ resolve, reject });
      if (!this.inFlight) this.start();
    });
  }

  /**
   * Opens the WAL file now, so that a missing or unreadable one fails at startup rather than at the
   * first append. Otherwise the first sync opens it.
   */
  open(): void {
    this.fd ??= openSync(this.walFile, 'r+');
  }

  /**
   * Refuses new syncs, waits for the one in flight and those queued behind it, then releases the
   * file. What is committed after this is not synced here: the owner closes its connections next.
   */
  async close(): Promise<void> {
    this.closed = true;
    while (this.inFlight) await new Promise<void>((resolve) => this.idle.push(resolve));
    if (this.fd !== undefined) {
      closeSync(this.fd);
      this.fd = undefined;
    }
  }

  private start(): void {
    const waiters = this.next;
    this.next = [];
    let fd: number;
    try {
      // Opened on first use: SQLite creates the WAL file with its first write. It stays the same
      // file while a connection holds the database open (SQLite removes it only at the last close).
      fd = this.fd ??= openSync(this.walFile, 'r+');
    } catch (err) {
      this.fail(waiters, err as Error);
      return;
    }
    this.inFlight = true;
    const started = performance.now();
    const done = (err: NodeJS.ErrnoException | null) => {
      this.inFlight = false;
      this.syncMs += performance.now() - started;
      if (err) {
        this.fail(waiters, err);
        return;
      }
      this.syncs++;
      for (const w of waiters) w.resolve();
      // Queued waiters get their sync even while closing: they committed before close was called.
      if (this.next.length > 0) this.start();
      else for (const wake of this.idle.splice(0)) wake();
    };
    try {
      this.syncFn(fd, done);
    } catch (err) {
      done(err as NodeJS.ErrnoException);
    }
  }

  private fail(waiters: Waiter[], cause: Error): void {
    this.failed ??= new DurabilityError(`the event store could not make its writes durable (fdatasync of ${this.walFile}: ${cause.message}); restart triad`);
    for (const w of [...waiters, ...this.next.splice(0)]) w.reject(this.failed);
    for (const done of this.idle.splice(0)) done();
  }
}
