import { Worker } from 'node:worker_threads';

/**
 * A second, read-only connection to the store's file on a worker thread, which reads the next page
 * of a long stream read while the caller folds the current one (`SqliteEventStore.readStreamPages`).
 *
 * Why: reading a row out of SQLite and making its strings costs about as much as folding it, and
 * the two are independent. On its own thread the read overlaps the fold, and what crosses between
 * the threads is one string per page, which the caller decodes with one `JSON.parse`:
 *
 *     {"n":<rows>,"k":<metadata texts>,"m":[<metadata>, …],"r":[[id, revision, position, type, recordedAt, <data>, <index into m>], …]}
 *
 * SQLite writes each row as one text: its text columns quoted by `json_quote`, the stored data
 * spliced in as it is (it is canonical JSON already); the page names each distinct metadata text
 * once (a run's events carry a handful). A page whose text does not parse, or parses to other
 * rows than the thread read (`decodeStreamPage` checks the counts, each row's fields and
 * revision), is read again on the caller's connection: a row the thread could not encode makes the
 * read slower, never different.
 *
 * Nothing depends on the thread: until it is ready, after it fails, or for a one-page read, pages
 * are read on the caller's connection exactly as before. Events are immutable once committed, so
 * either connection reads the same rows.
 */
export class SqliteReadAhead {
  private worker?: Worker;
  /**
   * Set by the thread once it can take reads (1) or cannot open the store (2). Shared memory, not a
   * message: a long read runs in microtasks, which never let a message in, and must still see it.
   */
  private readonly state = new Int32Array(new SharedArrayBuffer(4));
  private failed = false;
  private closed = false;
  /** Resolves once the thread is ready, could not open the store, or died (whichever comes first). */
  private settled: Promise<unknown> = Promise.resolve();
  private settle: () => void = () => undefined;
  private holds = 0;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve(text: string): void; reject(err: Error): void }>();

  constructor(
    private readonly file: string,
    private readonly driverPath: string,
  ) {}

  /** True once the thread can take reads. */
  get available(): boolean {
    return Atomics.load(this.state, 0) === READY && !this.failed && !this.closed;
  }

  /** Starts the thread, once; reads go to it when it reports ready. */
  start(): void {
    if (this.worker || this.failed || this.closed) return;
    let worker: Worker;
    try {
      worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file: this.file, driver: this.driverPath, state: this.state } });
    } catch {
      this.failed = true;
      return;
    }
    worker.unref();
    const settled = new Promise<void>((resolve) => (this.settle = resolve));
    this.settled = Promise.race([settled, (Atomics as unknown as AtomicsWaitAsync).waitAsync(this.state, 0, 0).value]);
    worker.on('message', (m: WorkerReply) => {
      if ('unavailable' in m) return this.fail(new Error(`read-ahead thread could not open the store: ${m.unavailable}`));
      const w = this.waiting.get(m.id);
      if (!w) return;
      this.waiting.delete(m.id);
      this.release();
      if ('error' in m) w.reject(new Error(m.error));
      else w.resolve(m.text);
    });
    worker.on('error', (err) => this.fail(err));
    worker.on('exit', (code) => this.fail(new Error(`read-ahead thread exited with code ${code}`)));
    this.worker = worker;
  }

  /** Starts the thread and resolves once it can take reads (true) or cannot (false). */
  async whenStarted(): Promise<boolean> {
    this.start();
    this.hold();
    try {
      await this.settled;
    } finally {
      this.release();
    }
    return this.available;
  }

  /** One page of a stream, forwards from `from`, as the JSON text described above. */
  read(streamId: string, from: number, count: number): Promise<string> {
    const worker = this.worker;
    if (!worker || !this.available) return Promise.reject(new Error('read-ahead thread not available'));
    const id = this.nextId++;
    this.hold();
    return new Promise<string>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, streamId, from, count });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.settle();
    const worker = this.worker;
    this.worker = undefined;
    this.rejectWaiting(new Error('the store is closed'));
    if (worker) await worker.terminate();
  }

  private fail(err: Error): void {
    this.failed = true;
    this.settle();
    this.rejectWaiting(err);
    const worker = this.worker;
    this.worker = undefined;
    // The failure is told to the waiting readers above; terminate does not reject, and its exit code is of no interest.
    if (worker && !this.closed) void worker.terminate();
  }

  private rejectWaiting(err: Error): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of waiting) {
      this.release();
      w.reject(err);
    }
  }

  /**
   * The thread keeps the process alive only while someone waits on it (a page, or its start):
   * an idle read-ahead thread never holds a process open.
   */
  private hold(): void {
    if (this.holds++ === 0) this.worker?.ref();
  }

  private release(): void {
    if (--this.holds === 0) this.worker?.unref();
  }
}

const READY = 1;

/** Node ≥ 16 has it; TypeScript's lib only declares it from ES2024. */
interface AtomicsWaitAsync {
  waitAsync(array: Int32Array, index: number, value: number): { async: boolean; value: Promise<string> | string };
}

type WorkerReply = { unavailable: string } | { id: number; text: string } | { id: number; error: string };

/** The thread's code (plain CommonJS, so it runs the same from the compiled build and under tests). */
const WORKER_SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
function open() {
  const Database = require(workerData.driver);
  const db = new Database(workerData.file, { readonly: true, fileMustExist: true });
  db.pragma('busy_timeout = 10000');
  return db.prepare(
    // Every text column is quoted, even those the store writes in forms that need no escaping (ids,
    // ISO times): a row written around the store must read the same here as on the store's own
    // connection. data and metadata are JSON as stored; the caller checks each row's shape.
    "SELECT '[' || json_quote(id) || ',' || revision || ',' || position || ',' || json_quote(type) || ',' || json_quote(recorded_at) || ',' || data || ',', metadata" +
    ' FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision ASC LIMIT ?',
  ).raw(true);
}
let page;
try {
  page = open();
} catch (err) {
  Atomics.store(workerData.state, 0, 2);
  Atomics.notify(workerData.state, 0);
  parentPort.postMessage({ unavailable: String((err && err.message) || err) });
}
if (page) {
  parentPort.on('message', ({ id, streamId, from, count }) => {
    try {
      const rows = page.all(streamId, from, count);
      const metadata = [];
      const indexOf = new Map();
      const parts = new Array(rows.length);
      let lastText;
      let last = -1;
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i];
        // Runs of events share one text: compared with the last one before any lookup.
        if (r[1] !== lastText) {
          last = indexOf.get(r[1]);
          if (last === undefined) {
            last = metadata.push(r[1]) - 1;
            indexOf.set(r[1], last);
          }
          lastText = r[1];
        }
        parts[i] = r[0] + last + ']';
      }
      parentPort.postMessage({ id, text: '{"n":' + rows.length + ',"k":' + metadata.length + ',"m":[' + metadata.join(',') + '],"r":[' + parts.join(',') + ']}' });
    } catch (err) {
      parentPort.postMessage({ id, error: String((err && err.message) || err) });
    }
  });
  Atomics.store(workerData.state, 0, 1);
  Atomics.notify(workerData.state, 0);
}
`;
