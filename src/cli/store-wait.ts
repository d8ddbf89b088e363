import { createServer, type Server } from 'node:http';
import { doublingDelayMs } from '../shared/pause';

/**
 * `triad serve` before its store answers: the app cannot start without its store (it reads the
 * store while its modules start), so until then this plain node:http listener holds the port and
 * answers every request, `/health` included, 503 naming the store — an orchestrator's probe sees
 * "not ready" rather than a refused connection — while `start` is retried with backoff. The
 * listener is hand-written on node:http because it has one fixed answer and must not need the app.
 */

export const FIRST_RETRY_MS = 250;
export const MAX_RETRY_MS = 10_000;

/** The delay before retry `attempt` (0-based): doubling from FIRST_RETRY_MS, at most MAX_RETRY_MS. */
export function retryDelayMs(attempt: number): number {
  return doublingDelayMs(attempt, FIRST_RETRY_MS, MAX_RETRY_MS);
}

export interface WaitForStoreOptions<T> {
  /** Starts the app; throws while the store is not there. */
  start: () => Promise<T>;
  /** Whether a failure of `start` means "the store is not reachable yet" (else it is thrown). */
  transient: (err: unknown) => boolean;
  /** The store's kind, as `/health` names it. */
  store: string;
  host: string;
  port: number;
  /** One line per outage start and end (stderr). */
  log: (line: string) => void;
  /** Resolves when the process is asked to stop (SIGTERM/SIGINT): waiting ends with undefined. */
  stopped: Promise<void>;
}

/** Runs `start` until it succeeds; meanwhile the port answers 503. Undefined when stopped first. */
export async function waitForStore<T>(options: WaitForStoreOptions<T>): Promise<T | undefined> {
  let server: Server | undefined;
  let stop = false;
  // `stopped` only ever resolves (a signal arrived): there is no rejection to handle.
  void options.stopped.then(() => (stop = true));
  const reason = `the ${options.store} store is not reachable; triad is waiting for it`;
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        const started = await options.start();
        if (server) options.log(`triad: the ${options.store} store answers; starting\n`);
        return started;
      } catch (err) {
        if (!options.transient(err)) throw err;
        if (!server) {
          server = await listen(options.host, options.port, options.store, reason);
          options.log(`triad: ${firstLine(err)}; retrying with backoff, GET /health answers 503 until it answers\n`);
        }
      }
      if (stop) return undefined;
      await Promise.race([new Promise((resolve) => setTimeout(resolve, retryDelayMs(attempt)).unref()), options.stopped]);
      if (stop) return undefined;
    }
  } finally {
    if (server) {
      const closed = new Promise<void>((resolve) => server!.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    }
  }
}

function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0].slice(0, 300);
}

async function listen(host: string, port: number, store: string, reason: string): Promise<Server> {
  const body = JSON.stringify({ statusCode: 503, error: 'Service Unavailable', status: 'degraded', store, reason, message: reason });
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1', connection: 'close' });
    res.end(body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
