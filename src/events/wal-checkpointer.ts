import { Worker } from 'node:worker_threads';

/** How often the checkpointer copies the WAL into the database file. */
export const DEFAULT_WAL_CHECKPOINT_INTERVAL_MS = 200;

// The worker's own source, evaluated as CommonJS: it needs no compiled file next to this one, so it
// runs the same from `src/` under the tests and from `dist/`. The driver's path is resolved here.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 5000');
db.pragma('wal_autocheckpoint = 0');
let timer;
function tick() {
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    if (r && r.checkpointed > 0) parentPort.postMessage({ checkpointed: r.checkpointed });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) });
  }
  timer = setTimeout(tick, workerData.intervalMs);
}
parentPort.on('message', (m) => {
  if (m !== 'stop') return;
  clearTimeout(timer);
  db.close();
  process.exit(0);
});
tick();
`;

/**
 * SQLite's WAL checkpoints, off the event loop. By default SQLite copies the WAL into the database
 * file inside whichever commit crosses 1,000 pages: on the committing thread, with two fsyncs and
 * a thousand page writes — milliseconds of the event loop every few hundred turns. The store's
 * connections turn that off (`wal_autocheckpoint = 0`) and this worker thread, with a connection of
 * its own, runs a PASSIVE checkpoint every `intervalMs` (it never blocks writers or readers; the
 * next writer then starts the WAL over from its beginning, so the file stays bounded).
 *
 * If the worker cannot run (it failed to start or died), `onFailure` is called once so the owner
 * can hand checkpoints back to SQLite's automatic ones.
 */
export class WalCheckpointer {
  private readonly worker: Worker;
  private stopped = false;
  private exited: Promise<void>;
  /** WAL frames copied so far (as reported by the worker). */
  framesCheckpointed = 0;
  lastError: string | undefined;

  constructor(file: string, onFailure: (reason: string) => void, intervalMs = DEFAULT_WAL_CHECKPOINT_INTERVAL_MS) {
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver: require.resolve('better-sqlite3'), file, intervalMs } });
    // Never what keeps the process alive.
    this.worker.unref();
    this.worker.on('message', (m: { checkpointed?: number; error?: string }) => {
      if (m.checkpointed) this.framesCheckpointed += m.checkpointed;
      if (m.error) this.lastError = m.error;
    });
    let failed = false;
    const fail = (reason: string) => {
      if (this.stopped || failed) return;
      failed = true;
      onFailure(reason);
    };
    this.worker.on('error', (err) => fail(err.message));
    this.exited = new Promise((resolve) =>
      this.worker.on('exit', (code) => {
        fail(`the WAL checkpointer exited (code ${code})`);
        resolve();
      }),
    );
  }

  /** Stops the worker after the checkpoint it is running, and closes its connection. */
  async stop(): Promise<void> {
    if (this.stopped) return this.exited;
    this.stopped = true;
    // Unreferenced, the worker's exit would not keep the process alive while we wait for it.
    this.worker.ref();
    this.worker.postMessage('stop');
    await this.exited;
  }
}
