import { join } from 'node:path';
import { appClient, type AppReply, type CallOptions } from './app-client';
import { spawnHttpServer, type ServedRoute, type ServerChild, type SpawnOptions } from './http-server-child';
import { tempDir } from './temp-dir';

/**
 * The real Nest app over real HTTP for e2e tests: `createHttpApp()` configured through the
 * environment exactly as `triad serve` is (SQLite store in a temp data dir, the offline model,
 * bootstrap API keys), then `app.listen(0, '127.0.0.1')`. Tests talk to it with the global `fetch`.
 *
 * The app runs in a child Node process, from the `dist/` build that jest's globalSetup compiles:
 * NestJS 12 ships ES modules only, which jest's CommonJS module runtime cannot load on Node 20
 * (plain Node can, through require(esm)). A separate process also means the tests see the server
 * only as clients do.
 */

export const E2E_KEYS = {
  operator: 'op-secret-0123456789',
  reviewer: 'rev-secret-0123456789',
  auditor: 'aud-secret-0123456789',
} as const;

export type KeyName = keyof typeof E2E_KEYS;

/** TRIAD_API_KEYS of the app: the CLI, run on the app's data dir, checks a decider's key against it too. */
export const E2E_API_KEYS_ENV = `ops:operator:${E2E_KEYS.operator},rev:reviewer:${E2E_KEYS.reviewer},aud:auditor:${E2E_KEYS.auditor}`;

export type E2eResponse<T = unknown> = AppReply<T>;

export type RequestOptions = CallOptions<KeyName>;

export interface E2eApp {
  /** e.g. `http://127.0.0.1:41234` */
  url: string;
  dataDir: string;
  /** With `reportRoutes`: the routes the app's Express router holds. */
  routes?: ServedRoute[];
  /** What the server wrote to stderr so far (for diagnostics). */
  readonly stderr: string;
  /** What it wrote to stdout so far: its log lines below error. */
  readonly stdout: string;
  request<T = unknown>(method: string, path: string, options?: RequestOptions): Promise<E2eResponse<T>>;
  /** The raw fetch response (for streams). */
  fetch(method: string, path: string, options?: RequestOptions): Promise<Response>;
  close(): Promise<void>;
}

export async function startE2eApp(env: Record<string, string> = {}, startTimeoutMs = 20_000, spawnOptions: Pick<SpawnOptions, 'reportRoutes'> = {}): Promise<E2eApp> {
  const dir = tempDir('triad-e2e-');
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    TRIAD_DATA_DIR: join(dir.path, 'data'),
    TRIAD_STORE: 'sqlite',
    TRIAD_API_KEYS: E2E_API_KEYS_ENV,
    TRIAD_MODEL: 'offline',
  };
  delete childEnv.TRIAD_PG_URL;
  delete childEnv.TRIAD_ESDB_URL;
  delete childEnv.ANTHROPIC_API_KEY;
  delete childEnv.OPENAI_API_KEY;
  delete childEnv.OPENAI_BASE_URL;
  // What the test asks for wins, a store's URL included.
  Object.assign(childEnv, env);

  let server: ServerChild;
  try {
    server = await spawnHttpServer(childEnv, { startTimeoutMs, graceMs: 5000, ...spawnOptions });
  } catch (err) {
    dir.remove();
    throw err;
  }
  const url = server.url;

  const client = appClient(url, E2E_KEYS, 'operator');

  return {
    url,
    routes: server.routes,
    dataDir: childEnv.TRIAD_DATA_DIR!,
    get stderr() {
      return server.stderr;
    },
    get stdout() {
      return server.stdout;
    },
    fetch: client.fetch,
    request: client.request,
    async close() {
      try {
        await server.stop();
      } finally {
        dir.remove();
      }
    },
  };
}

/** One Server-Sent Event as parsed from the wire. */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/**
 * Reads an SSE response incrementally. `next()` resolves with the next event, or undefined when
 * the server closed the stream; it rejects when no event arrives before the deadline.
 */
export function sseReader(res: Response): { next(timeoutMs?: number): Promise<SseEvent | undefined>; cancel(): Promise<void> } {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let done = false;
  const queue: SseEvent[] = [];
  // A read that outlived a timed-out next() is kept, so its chunk is not lost.
  let pending: ReturnType<typeof reader.read> | undefined;

  const parseBuffer = () => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end < 0) return;
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event: SseEvent = { event: 'message', data: '' };
      const data: string[] = [];
      let any = false;
      for (const line of frame.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        any = true;
        if (field === 'id') event.id = value;
        else if (field === 'event') event.event = value;
        else if (field === 'data') data.push(value);
      }
      if (!any) continue; // a comment-only frame (heartbeat)
      event.data = data.join('\n');
      queue.push(event);
    }
  };

  return {
    async next(timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (queue.length === 0 && !done) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new Error(`no SSE event within ${timeoutMs} ms`);
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), remaining)));
        pending ??= reader.read();
        // Cleared whether the read answers or fails (a cancelled stream), so no timer outlives the call.
        const read = await Promise.race([pending, timeout]).finally(() => clearTimeout(timer));
        if (read === 'timeout') throw new Error(`no SSE event within ${timeoutMs} ms`);
        pending = undefined;
        if (read.done) done = true;
        else buffer += decoder.decode(read.value, { stream: true });
        parseBuffer();
      }
      return queue.shift();
    },
    async cancel() {
      await reader.cancel().catch(() => undefined);
    },
  };
}

/**
 * Follows a run's event stream (`GET /v1/runs/:id/events`) in the background: the answer's status,
 * every event's name in order, and the text of its `delta` events, until `close()`.
 */
export function followRunEvents(baseUrl: string, runId: string, apiKey: string) {
  const controller = new AbortController();
  const seen = { status: 0, events: [] as string[], deltas: [] as string[] };
  const done = (async () => {
    const res = await fetch(`${baseUrl}/v1/runs/${runId}/events`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${apiKey}` }, signal: controller.signal });
    seen.status = res.status;
    const events = sseReader(res);
    // Read until the stream ends or is closed (close() makes the pending read fail); an hour is "no deadline" for a test.
    for (let e = await events.next(3_600_000); e; e = await events.next(3_600_000)) {
      seen.events.push(e.event);
      if (e.event === 'delta') seen.deltas.push((JSON.parse(e.data) as { text: string }).text);
    }
  })().catch((err: Error) => {
    if (err.name !== 'AbortError') throw err;
  });
  return { seen, close: () => controller.abort(), done };
}
