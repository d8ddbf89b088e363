import { readReply } from './http-server-child';
import { waitFor } from './wait-for';

/**
 * The tests' one HTTP client of a running app: requests as one of the app's API key holders (by
 * name), with a raw key or header, or with none; JSON bodies in and out. The e2e app, the
 * approvals app and the review gate's server each name their own keys and build on it.
 */

/** A response read whole; `body` is the parsed JSON, undefined when the body is not JSON. */
export interface AppReply<T> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface CallOptions<K extends string> {
  /** Whose key to send (the client's default when absent); `null` sends none; `{secret}` a raw key; `{raw}` the whole Authorization header. */
  as?: K | null | { secret: string } | { raw: string };
  /** JSON-encoded unless `rawBody` is given. */
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export interface AppClient<K extends string, B> {
  request<T = B>(method: string, path: string, options?: CallOptions<K>): Promise<AppReply<T>>;
  /** The raw fetch response (for streams). */
  fetch(method: string, path: string, options?: CallOptions<K>): Promise<Response>;
}

function authorization<K extends string>(keys: Record<K, string>, as: NonNullable<CallOptions<K>['as']>): string {
  if (typeof as === 'string') return `Bearer ${keys[as]}`;
  return 'raw' in as ? as.raw : `Bearer ${as.secret}`;
}

export function appClient<K extends string, B = unknown>(url: string, keys: Record<K, string>, defaultAs: K): AppClient<K, B> {
  const doFetch = (method: string, path: string, options: CallOptions<K> = {}): Promise<Response> => {
    const headers: Record<string, string> = { ...options.headers };
    const as = options.as === undefined ? defaultAs : options.as;
    if (as !== null) headers.authorization = authorization(keys, as);
    const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
    if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    return fetch(`${url}${path}`, { method, headers, body, signal: options.signal });
  };
  return {
    fetch: doFetch,
    request: async <T = B>(method: string, path: string, options?: CallOptions<K>) => readReply<T>(await doFetch(method, path, options)),
  };
}

export interface RunWait<K extends string> {
  /** Whose key reads the run (the client's default when absent). */
  as?: K;
  everyMs?: number;
  /** Added to the timeout's message, e.g. the server's stderr. */
  detail?: () => string;
}

/** Polls GET /v1/runs/:id until `check` holds of the run; times out with the last answer. */
export async function waitForRun<R, K extends string>(
  app: Pick<AppClient<K, unknown>, 'request'>,
  runId: string,
  check: (run: R) => boolean,
  withinMs: number,
  { as, everyMs = 25, detail }: RunWait<K> = {},
): Promise<R> {
  let last = '';
  return waitFor(
    `run ${runId} to get there`,
    async () => {
      const res = await app.request<R>('GET', `/v1/runs/${runId}`, as === undefined ? {} : { as });
      last = `${res.status} ${res.text}`;
      return res.status === 200 && check(res.body) ? res.body : undefined;
    },
    withinMs,
    everyMs,
    () => [last, detail?.()].filter(Boolean).join('\n'),
  );
}
