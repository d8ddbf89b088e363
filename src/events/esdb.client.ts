import {
  AccessDeniedError,
  binaryEvent,
  CancelledError,
  DeadlineExceededError,
  END,
  EventStoreDBClient,
  NotLeaderError,
  StreamNotFoundError,
  UnavailableError,
  WrongExpectedVersionError,
  type AppendExpectedRevision,
  type ReadRevision,
  type ResolvedEvent,
} from '@eventstore/db-client';
import { StoreUnavailableError } from './errors';

/**
 * The one module that imports the EventStoreDB client. Everything else (the event store adapter,
 * the run stores on EventStoreDB) talks to `EsdbConnection`, in plain types. KurrentDB's client
 * (`@kurrent/kurrentdb-client`) has the same API under other names (`KurrentDBClient`, the same
 * `appendToStream` / `readStream` / `readAll`, `binaryEvent`, the same error classes), so moving
 * to it changes the import above and nothing else.
 *
 * Deadlines, keep-alive and reconnection:
 * - appends run under the client's `defaultDeadline` (10 s unless the URL says otherwise);
 * - reads are given no deadline by the client (it reads streams of any length), so every read here
 *   is bounded by `readDeadlineMs` (30 s): the read is cancelled and fails as unavailable;
 * - gRPC keep-alive pings every 10 s and gives up on a connection after 10 s without an answer
 *   (`keepAliveInterval`, `keepAliveTimeout`): a dead connection is noticed within 20 s even
 *   while nothing is sent;
 * - a call that fails as unavailable makes the client drop its channel and open a new one on the
 *   next call (its own reconnection); nothing here retries a write, because the outcome of a
 *   failed append is unknown — callers re-append the same event ids, which is idempotent.
 * Each of these can be overridden in the URL (`?defaultDeadline=…&keepAliveInterval=…`). At most 32
 * calls are in flight per connection; a burst beyond that waits here, so its deadlines start when
 * it is sent (like a pool's bounded connections).
 */

export interface EsdbPosition {
  commit: bigint;
  prepare: bigint;
}

/** An event as EventStoreDB returned it: bytes for data, the custom metadata parsed. */
export interface EsdbRecord {
  stream: string;
  revision: bigint;
  id: string;
  type: string;
  data: Uint8Array;
  metadata: unknown;
  created: number;
  position: EsdbPosition | undefined;
}

export interface EsdbNewEvent {
  /** A UUID. */
  id: string;
  type: string;
  data: Uint8Array;
  metadata: Uint8Array;
}

export type EsdbExpected = 'any' | 'no_stream' | 'stream_exists' | bigint;

export type EsdbAppendOutcome = { ok: true; revision: bigint } | { ok: false; actual: bigint | null };

export interface EsdbReadOptions {
  direction?: 'forwards' | 'backwards';
  maxCount?: number;
}

/** The client does not authenticate: the server refused the credentials (or their rights). */
export class EsdbAccessError extends Error {
  override readonly name = 'EsdbAccessError';
}

export interface EsdbConnectionOptions {
  /** Bound on every read (default 30 s). */
  readDeadlineMs?: number;
  /** Calls in flight at once on the connection (default 32); more wait their turn, before their deadline starts. */
  maxInFlight?: number;
}

/** Defaults added to the connection string when it does not set them. */
const URL_DEFAULTS: Record<string, string> = {
  defaultDeadline: '10000',
  keepAliveInterval: '10000',
  keepAliveTimeout: '10000',
  // Cluster discovery (esdb+discover://): a few attempts, so a wrong address fails in seconds.
  maxDiscoverAttempts: '3',
};

const DEFAULT_READ_DEADLINE_MS = 30_000;
const DEFAULT_MAX_IN_FLIGHT = 32;

/** The URL with credentials hidden, for messages and logs (up to the last `@` before the host: a password may hold one). */
export function redactEsdbUrl(url: string): string {
  return url.replace(/^([a-z+]+:\/\/)[^/?#]*@/i, '$1***@');
}

/** The connection string options the client reads (compared as it compares them: case, `-` and `_` aside). */
const ESDB_OPTIONS = [
  'connectionName', 'maxDiscoverAttempts', 'discoveryInterval', 'gossipTimeout', 'nodePreference', 'tls', 'tlsVerifyCert',
  'tlsCAFile', 'userCertFile', 'userKeyFile', 'defaultDeadline', 'throwOnAppendFailure', 'keepAliveInterval', 'keepAliveTimeout',
];
const flat = (key: string) => key.trim().toLowerCase().replace(/[_-]/g, '');

/**
 * Refuses a connection string option the client would ignore, or one it does not support, before
 * the client sees it: the client's own warning for them prints the whole string, password included.
 */
export function checkEsdbUrlOptions(url: string): void {
  const query = url.indexOf('?');
  if (query < 0) return;
  const known = new Map(ESDB_OPTIONS.map((o) => [flat(o), o]));
  for (const pair of url.slice(query + 1).split('&')) {
    if (pair === '') continue;
    const [key, value = ''] = pair.split('=');
    const option = known.get(flat(key));
    if (!option) throw new Error(`unknown option '${key.replace(/[^\w.-]/g, '?').slice(0, 40)}' (options: ${ESDB_OPTIONS.join(', ')})`);
    if (option === 'tlsVerifyCert' && value.trim() === 'false') {
      throw new Error('tlsVerifyCert=false is not supported by the client: pass tlsCAFile, or set NODE_EXTRA_CA_CERTS');
    }
  }
}

export class EsdbConnection {
  private readonly client: EventStoreDBClient;
  private readonly readDeadlineMs: number;
  private readonly maxInFlight: number;
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  private closed = false;

  constructor(
    readonly url: string,
    options: EsdbConnectionOptions = {},
  ) {
    checkEsdbUrlOptions(url);
    this.client = EventStoreDBClient.connectionString(withDefaults(url));
    this.readDeadlineMs = options.readDeadlineMs ?? DEFAULT_READ_DEADLINE_MS;
    this.maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
  }

  append(stream: string, events: EsdbNewEvent[], expected: EsdbExpected): Promise<EsdbAppendOutcome> {
    return this.limited(() => this.appendNow(stream, events, expected));
  }

  private async appendNow(stream: string, events: EsdbNewEvent[], expected: EsdbExpected): Promise<EsdbAppendOutcome> {
    this.ensureOpen();
    try {
      const result = await this.client.appendToStream(
        stream,
        events.map((e) => binaryEvent({ id: e.id, type: e.type, data: e.data, metadata: e.metadata })),
        { expectedRevision: expected as AppendExpectedRevision },
      );
      return { ok: true, revision: result.nextExpectedRevision };
    } catch (err) {
      if (err instanceof WrongExpectedVersionError) {
        const actual = err.actualVersion;
        return { ok: false, actual: typeof actual === 'bigint' && actual >= 0n ? actual : null };
      }
      throw translate(err);
    }
  }

  /** A stream's events from `from` (a revision, or its start / end); [] when the stream does not exist. */
  readStream(stream: string, from: bigint | 'start' | 'end', options: EsdbReadOptions = {}): Promise<EsdbRecord[]> {
    return this.limited(() => {
      this.ensureOpen();
      const read = this.client.readStream(stream, {
        fromRevision: from as ReadRevision,
        direction: options.direction ?? 'forwards',
        maxCount: options.maxCount ?? Number.MAX_SAFE_INTEGER,
      });
      return this.collect(read, true);
    });
  }

  /** `$all` from a position (or its start / end), in log order or backwards. */
  readAll(from: EsdbPosition | 'start' | 'end', options: EsdbReadOptions = {}): Promise<EsdbRecord[]> {
    return this.limited(() => {
      this.ensureOpen();
      const read = this.client.readAll({
        fromPosition: from,
        direction: options.direction ?? 'forwards',
        maxCount: options.maxCount ?? Number.MAX_SAFE_INTEGER,
      });
      return this.collect(read, false);
    });
  }

  /** Sets `$maxCount` on a stream, so the server's scavenge may drop all but its last events. */
  /**
   * A live subscription to the events appended to `stream` from now on: each one's data to
   * `onData`; `onEnd` once it stops (an error or the connection dropped), unless closed first.
   */
  subscribeFromEnd(stream: string, onData: (data: Uint8Array) => void, onEnd: (err?: Error) => void): { close(): void } {
    this.ensureOpen();
    const sub = this.client.subscribeToStream(stream, { fromRevision: END });
    let closed = false;
    const end = (err?: Error) => {
      if (closed) return;
      closed = true;
      onEnd(err);
    };
    sub.on('data', (resolved: ResolvedEvent) => {
      const data = resolved.event?.data;
      if (data instanceof Uint8Array) onData(data);
    });
    sub.on('error', (err: Error) => end(err));
    sub.on('close', () => end());
    return {
      close: () => {
        closed = true;
        // Closing: a subscription whose connection is gone is unsubscribed already.
        void sub.unsubscribe().catch(() => undefined);
      },
    };
  }

  async keepLast(stream: string, count: number): Promise<void> {
    this.ensureOpen();
    try {
      await this.client.setStreamMetadata(stream, { maxCount: count });
    } catch (err) {
      throw translate(err);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.dispose();
  }

  /** Runs `call` once fewer than `maxInFlight` calls are in flight (a burst queues here, not on the server). */
  private async limited<T>(call: () => Promise<T>): Promise<T> {
    if (this.inFlight >= this.maxInFlight) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.inFlight++;
    try {
      return await call();
    } finally {
      this.inFlight--;
      this.waiting.shift()?.();
    }
  }

  private ensureOpen(): void {
    if (this.closed) throw new StoreUnavailableError('the EventStoreDB connection is closed');
  }

  private async collect(read: AsyncIterable<ResolvedEvent> & { cancel(): Promise<void> }, missingIsEmpty: boolean): Promise<EsdbRecord[]> {
    const out: EsdbRecord[] = [];
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        // The timeout is what the caller is told (rejected below); a cancel that fails only means the read ended first.
        void read.cancel().catch(() => undefined);
        reject(new StoreUnavailableError(`EventStoreDB read: no answer within ${this.readDeadlineMs} ms`));
      }, this.readDeadlineMs);
    });
    const drain = (async () => {
      for await (const resolved of read) {
        const e = resolved.event;
        if (!e) continue;
        out.push({
          stream: e.streamId,
          revision: e.revision,
          id: e.id,
          type: e.type,
          data: e.data as Uint8Array,
          metadata: e.metadata,
          created: e.created instanceof Date ? e.created.getTime() : Number(e.created),
          position: e.position,
        });
      }
      return out;
    })();
    try {
      return await Promise.race([drain, deadline]);
    } catch (err) {
      if (err instanceof StreamNotFoundError && missingIsEmpty) return [];
      if (timedOut) throw err;
      throw translate(err);
    } finally {
      clearTimeout(timer);
      // The read's outcome was returned or thrown above: a drain still running must not become an unhandled rejection.
      drain.catch(() => undefined);
    }
  }
}

function withDefaults(url: string): string {
  const query = url.indexOf('?');
  const present = new Set(
    (query < 0 ? '' : url.slice(query + 1))
      .split('&')
      .filter(Boolean)
      .map((kv) => kv.split('=')[0].toLowerCase()),
  );
  const extra = Object.entries(URL_DEFAULTS)
    .filter(([k]) => !present.has(k.toLowerCase()))
    .map(([k, v]) => `${k}=${v}`);
  if (extra.length === 0) return url;
  return `${url}${query < 0 ? '?' : '&'}${extra.join('&')}`;
}

/** The client's errors in triad's terms: the server not answering is StoreUnavailableError. */
function translate(err: unknown): unknown {
  if (err instanceof UnavailableError || err instanceof DeadlineExceededError || err instanceof CancelledError || err instanceof NotLeaderError) {
    return new StoreUnavailableError(`EventStoreDB: ${(err as Error).message}`, { cause: err });
  }
  if (err instanceof AccessDeniedError) return new EsdbAccessError(`EventStoreDB refused the credentials: ${err.message}`);
  // Discovery of a cluster that answers nobody, a channel that cannot be made.
  if (err instanceof Error && /discover|failed to connect|ECONNREFUSED|ENOTFOUND|EAI_AGAIN/i.test(err.message)) {
    return new StoreUnavailableError(`EventStoreDB: ${err.message}`, { cause: err });
  }
  return err;
}
