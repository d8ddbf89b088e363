import { createHash } from 'node:crypto';
import { applyPgMigrations, quoteIdent } from '../shared/postgres-tables';
import { Client, Pool, type PoolClient, type QueryConfig, type QueryResultRow } from 'pg';
import type { StoreHealthSink } from '../shared/health';
import { classifyStoreError, StoreUnavailableError, WrongExpectedRevisionError } from './errors';
import {
  DEFAULT_MAX_EVENT_BYTES,
  type AppendOptions,
  type AppendResult,
  type EventFilter,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type ReadStreamPagesOptions,
  type RecordedEvent,
  type StreamExtent,
  type SubscribeOptions,
  type Subscription,
} from './event-store.port';
import type { StoreOptions } from './in-memory.event-store';
import { PositionNotifier } from './position-notifier';
import {
  checkExpectedRevision,
  decodeRow,
  prepareEvents,
  resolveIdempotentAppend,
  validateExpectedRevision,
  validateStreamId,
  type PreparedEvent,
  type StoredIdentity,
  type StoredRow,
} from './prepare';
import { extentBatches, pagesByReadStream, streamWindow } from './read-helpers';
import { CatchUpSubscription } from './subscription';

/**
 * Versioned schema, as functions of the (already quoted) schema name. Each entry runs once, in
 * order, in the migration transaction; the applied version is kept in `schema_migrations`.
 * Append new entries, never edit old ones.
 *
 * Why the append is one server-side function: it makes an append a single round trip (one
 * statement in its own implicit transaction), so the global counter's row lock is never held
 * while the client talks to the server. See docs/EVENTS.md, "PostgreSQL global order".
 */
const MIGRATIONS: Array<(s: string, names: { lockClass: number; channel: string }) => string> = [
  (s, { lockClass, channel }) => `
    CREATE TABLE ${s}.events (
      position     bigint PRIMARY KEY,
      id           text NOT NULL CONSTRAINT events_id_key UNIQUE,
      stream_id    text NOT NULL,
      revision     bigint NOT NULL,
      type         text NOT NULL,
      -- Kept as the exact canonical JSON text the shared prepare step produced, so content
      -- hashes computed on re-append compare equal byte for byte.
      data         text NOT NULL,
      metadata     text NOT NULL,
      content_hash text NOT NULL,
      recorded_at  timestamptz NOT NULL,
      CONSTRAINT events_stream_revision_key UNIQUE (stream_id, revision)
    );
    CREATE INDEX events_type_position ON ${s}.events (type, position);

    -- One row: the last allocated global position. Its row lock, taken by the UPDATE in
    -- append_events and held until COMMIT, is what makes position order equal commit order.
    CREATE TABLE ${s}.global_position (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      position  bigint NOT NULL
    );
    INSERT INTO ${s}.global_position (singleton, position) VALUES (true, 0);

    CREATE TABLE ${s}.subscription_checkpoints (
      name       text PRIMARY KEY,
      position   bigint NOT NULL,
      updated_at timestamptz NOT NULL
    );

    -- p_expected: -1 any, -2 no_stream, -3 stream_exists, n >= 0 an exact revision.
    -- Returns one 'appended' row, one 'conflict' row carrying the actual head, or 'stored' rows
    -- (some ids are already stored: the client decides between replay and conflict). A batch
    -- reusing a stored id on the success path fails on events_id_key instead; the client then
    -- looks the ids up. Checking ids only when needed keeps the common path short, and avoids a
    -- lookup whose cached generic plan may be a sequential scan chosen while the table was small.
    CREATE FUNCTION ${s}.append_events(
      p_stream_id text, p_expected bigint,
      p_ids text[], p_types text[], p_data text[], p_metadata text[], p_hashes text[]
    ) RETURNS TABLE (outcome text, event_id text, event_stream text, event_revision bigint, event_position bigint, event_hash text)
    LANGUAGE plpgsql VOLATILE AS $fn$
    DECLARE
      v_n    integer := cardinality(p_ids);
      v_head bigint;
      v_last bigint;
    BEGIN
      -- Serialise appends to one stream, so the head read below stays the head until COMMIT
      -- (also for 'any'). The unique (stream_id, revision) constraint remains the final arbiter.
      PERFORM pg_advisory_xact_lock(${lockClass}, hashtext(p_stream_id));

      SELECT max(e.revision) INTO v_head FROM ${s}.events e WHERE e.stream_id = p_stream_id;
      IF NOT (p_expected = -1
              OR (p_expected = -2 AND v_head IS NULL)
              OR (p_expected = -3 AND v_head IS NOT NULL)
              OR (p_expected >= 0 AND v_head IS NOT NULL AND p_expected = v_head)) THEN
        -- A re-append of a stored batch is not a conflict: report the stored ids first.
        -- EXECUTE plans with the actual ids, so this uses the id index on any table size.
        RETURN QUERY EXECUTE
          'SELECT ''stored''::text, e.id, e.stream_id, e.revision, e.position, e.content_hash
           FROM ${s}.events e WHERE e.id = ANY ($1)' USING p_ids;
        IF NOT FOUND THEN
          RETURN QUERY SELECT 'conflict'::text, NULL::text, p_stream_id, v_head, NULL::bigint, NULL::text;
        END IF;
        RETURN;
      END IF;

      -- Everything above ran without the global lock. From here to COMMIT it is held: one
      -- UPDATE, one multi-row INSERT, the NOTIFY.
      UPDATE ${s}.global_position g SET position = g.position + v_n RETURNING g.position INTO v_last;
      INSERT INTO ${s}.events (position, id, stream_id, revision, type, data, metadata, content_hash, recorded_at)
        SELECT v_last - v_n + u.ord, u.id, p_stream_id, coalesce(v_head, -1) + u.ord,
               u.type, u.data, u.metadata, u.hash, clock_timestamp()
        FROM unnest(p_ids, p_types, p_data, p_metadata, p_hashes) WITH ORDINALITY AS u(id, type, data, metadata, hash, ord);
      PERFORM pg_notify('${channel}', v_last::text);

      RETURN QUERY SELECT 'appended'::text, NULL::text, p_stream_id, coalesce(v_head, -1) + v_n, v_last, NULL::text;
    END
    $fn$;`,
];

export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

export interface PostgresStoreOptions extends StoreOptions {
  /** Where the LISTEN connection goes (it cannot be a pooled one): the pool's server. */
  url: string;
  /** A Postgres schema holding triad's tables; created when missing. Default `public`. */
  schema?: string;
  /** Told of every query that could not reach the server, and of every one that could. */
  health?: StoreHealthSink;
}

export interface PostgresPoolOptions {
  url: string;
  /** Connections in the pool used for appends and reads (default 10); LISTEN uses one more. */
  poolSize?: number;
  /** Told when an idle pooled connection is lost. */
  health?: StoreHealthSink;
  /** A query (or the wait for a pooled connection) that takes longer fails as unavailable (default 30 s). */
  queryTimeoutMs?: number;
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const EXPECTED_CODE: Record<Exclude<ExpectedRevision, number>, number> = { any: -1, no_stream: -2, stream_exists: -3 };
const UNIQUE_VIOLATION = '23505';
/** Listener reconnect delay after its connection drops; subscriptions keep polling meanwhile. */
const LISTENER_RETRY_MS = 1000;
/** Client-side bound on one query: a server that stops answering must not stall its callers forever. */
const DEFAULT_QUERY_TIMEOUT_MS = 30_000;
const ROW_COLUMNS = 'id, stream_id, revision, position, type, data, metadata, recorded_at';

/**
 * Opens the pool every PostgreSQL store of a process shares (`src/storage/storage.ts`). Connections
 * are made on first use, so a server that does not answer fails the first query, not this.
 */
export function openPostgresPool(options: PostgresPoolOptions): Pool {
  const pool = new Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 10_000,
    query_timeout: options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS,
    keepAlive: true,
  });
  // An idle client losing its connection must not crash the process; the pool drops it and the
  // next query opens a new one.
  pool.on('error', (err) => options.health?.storeFailed((err as Error).message));
  return pool;
}

interface AppendRow {
  outcome: 'stored' | 'conflict' | 'appended';
  event_id: string | null;
  event_stream: string;
  event_revision: string | null;
  event_position: string | null;
  event_hash: string | null;
}

/**
 * PostgreSQL adapter: many triad processes may share one database.
 *
 * Global order: positions come from a single-row counter updated inside the append transaction;
 * its row lock is held until COMMIT, so a transaction gets its positions only once the previous
 * one is visible. Position order is commit order, positions have no gaps (a rollback rolls the
 * counter back too), and a reader can never pass an uncommitted write. Readers take no locks.
 *
 * Live subscriptions are woken by LISTEN/NOTIFY (appends from any process), by the in-process
 * notifier, and by timeout polling when neither arrives.
 *
 * The pool is handed in by the storage (`src/storage/storage.ts`), which shares it with the run
 * stores and the decision log and ends it after this store closes; `connect` opens one of its own.
 */
export class PostgresEventStore implements EventStore {
  readonly kind = 'postgres';
  private readonly notifier = new PositionNotifier();
  private readonly maxEventBytes: number;
  private listener: Client | null = null;
  private listenerRetry: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly sql;

  private constructor(
    private readonly pool: Pool,
    /** Opened by `connect` (ended with the store), or handed to `open` (ended by its owner). */
    private readonly ownsPool: boolean,
    private readonly options: PostgresStoreOptions,
    readonly schema: string,
    private readonly channel: string,
  ) {
    this.maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    const s = quoteIdent(schema);
    this.sql = {
      append: `SELECT outcome, event_id, event_stream, event_revision, event_position, event_hash
               FROM ${s}.append_events($1, $2, $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])`,
      head: `SELECT max(revision) AS revision FROM ${s}.events WHERE stream_id = $1`,
      forwards: `SELECT ${ROW_COLUMNS} FROM ${s}.events WHERE stream_id = $1 AND revision >= $2 ORDER BY revision ASC LIMIT $3`,
      backwards: `SELECT ${ROW_COLUMNS} FROM ${s}.events WHERE stream_id = $1 AND revision <= $2 ORDER BY revision DESC LIMIT $3`,
      // Unnamed (an id list): planned with the actual ids, as an index lookup per stream.
      extents: `SELECT stream_id, count(*) AS count, min(revision) AS first, max(revision) AS last FROM ${s}.events WHERE stream_id = ANY ($1::text[]) GROUP BY stream_id`,
      headPosition: `SELECT coalesce(max(position), 0) AS position FROM ${s}.events`,
      loadCheckpoint: `SELECT position FROM ${s}.subscription_checkpoints WHERE name = $1`,
      saveCheckpoint: `INSERT INTO ${s}.subscription_checkpoints (name, position, updated_at) VALUES ($1, $2, now())
                       ON CONFLICT (name) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at`,
      events: `${s}.events`,
    };
  }

  /**
   * The store on a pool its owner opened (`openPostgresPool`) and ends after closing the store:
   * brings the schema up to date and starts listening for appends from other processes.
   */
  static open(pool: Pool, options: PostgresStoreOptions): Promise<PostgresEventStore> {
    return PostgresEventStore.start(pool, false, options);
  }

  /** The store on a pool of its own, ended when the store closes (tests and tools that want an event store alone). */
  static connect(options: PostgresStoreOptions & PostgresPoolOptions): Promise<PostgresEventStore> {
    return PostgresEventStore.start(openPostgresPool(options), true, options);
  }

  private static async start(pool: Pool, ownsPool: boolean, options: PostgresStoreOptions): Promise<PostgresEventStore> {
    const schema = options.schema ?? 'public';
    if (!SCHEMA_NAME.test(schema)) {
      if (ownsPool) await pool.end();
      throw new Error(`invalid PostgreSQL schema name '${schema}'`);
    }
    // pg_notify channel names are limited to 63 bytes, so derive a short one from the schema.
    const channel = `triad_events_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}`;
    const store = new PostgresEventStore(pool, ownsPool, options, schema, channel);
    try {
      await store.migrate();
      await store.startListener();
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  /**
   * Applies pending migrations once, in order, in one transaction under an advisory lock keyed
   * by the schema, so several processes starting at once neither race nor half-apply.
   */
  private async migrate(): Promise<void> {
    await applyPgMigrations(this.pool, {
      schema: this.schema,
      lockKey: `triad.migrations.${this.schema}`,
      table: 'schema_migrations',
      label: 'the database schema',
      migrations: MIGRATIONS,
      context: async (client) => ({ lockClass: await this.streamLockClass(client), channel: this.channel }),
    });
  }

  /** The advisory-lock class for per-stream locks: per schema, so separate schemas never contend. */
  private async streamLockClass(client: PoolClient): Promise<number> {
    const { rows } = await client.query<{ h: number }>('SELECT hashtext($1) AS h', [`triad.streams.${this.schema}`]);
    return rows[0].h;
  }

  private async startListener(): Promise<void> {
    const client = new Client({ connectionString: this.options.url, connectionTimeoutMillis: 10_000 });
    client.on('notification', (msg) => {
      const position = Number(msg.payload);
      if (Number.isSafeInteger(position)) this.notifier.notify(position);
    });
    client.on('error', () => this.dropListener(client));
    client.on('end', () => this.dropListener(client));
    await client.connect();
    await client.query(`LISTEN ${quoteIdent(this.channel)}`);
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.listener = client;
  }

  /** A lost listener is replaced after a pause; until then subscriptions fall back to polling. */
  private dropListener(client: Client): void {
    if (this.listener !== client) return;
    this.listener = null;
    client.end().catch(() => undefined);
    this.scheduleListenerRestart();
  }

  private scheduleListenerRestart(): void {
    if (this.closed || this.listenerRetry) return;
    this.listenerRetry = setTimeout(() => {
      this.listenerRetry = null;
      if (!this.closed) this.startListener().catch(() => this.scheduleListenerRestart());
    }, LISTENER_RETRY_MS);
    this.listenerRetry.unref();
  }

  async append(streamId: string, events: NewEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    validateStreamId(streamId);
    const expected = validateExpectedRevision(options.expectedRevision);
    const prepared = prepareEvents(events, this.maxEventBytes);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.appendOnce(streamId, expected, prepared);
      } catch (err) {
        // Some id of the batch is stored already (a re-append, or a concurrent append of the
        // same ids that committed first): the shared idempotency rules decide. Empty only if
        // that row vanished, which cannot happen; retry once rather than guess.
        if (isUniqueViolation(err, 'events_id_key')) {
          const replay = resolveIdempotentAppend(streamId, prepared, await this.storedIdentities(prepared));
          if (replay) return replay;
          if (attempt < 2) continue;
        }
        if (isUniqueViolation(err, 'events_stream_revision_key')) {
          throw new WrongExpectedRevisionError(streamId, expected, await this.streamRevision(streamId));
        }
        throw classifyStoreError(err);
      }
    }
  }

  /** Unnamed statement: planned with the actual ids every time, so it uses the id index on any table size. */
  private async storedIdentities(prepared: PreparedEvent[]): Promise<StoredIdentity[]> {
    const { rows } = await this.query<{ id: string; stream_id: string; revision: string; position: string; content_hash: string }>(
      `SELECT id, stream_id, revision, position, content_hash FROM ${this.sql.events} WHERE id = ANY ($1::text[])`,
      [prepared.map((e) => e.id)],
    );
    return rows.map((r) => ({
      id: r.id,
      streamId: r.stream_id,
      revision: Number(r.revision),
      position: Number(r.position),
      contentHash: r.content_hash,
    }));
  }

  private async appendOnce(streamId: string, expected: ExpectedRevision, prepared: PreparedEvent[]): Promise<AppendResult> {
    const { rows } = await this.query<AppendRow>(
      this.named('triad_append', this.sql.append, [
        streamId,
        typeof expected === 'number' ? expected : EXPECTED_CODE[expected],
        prepared.map((e) => e.id),
        prepared.map((e) => e.type),
        prepared.map((e) => e.data),
        prepared.map((e) => e.metadata),
        prepared.map((e) => e.contentHash),
      ]),
    );
    const first = rows[0];
    if (first.outcome === 'appended') {
      const position = Number(first.event_position);
      this.notifier.notify(position);
      return { nextExpectedRevision: Number(first.event_revision), position };
    }
    if (first.outcome === 'conflict') {
      const actual = first.event_revision === null ? null : Number(first.event_revision);
      checkExpectedRevision(streamId, expected, actual);
      throw new Error(`append_events reported a conflict the expected revision check does not confirm (stream '${streamId}')`);
    }
    const stored: StoredIdentity[] = rows.map((r) => ({
      id: r.event_id!,
      streamId: r.event_stream,
      revision: Number(r.event_revision),
      position: Number(r.event_position),
      contentHash: r.event_hash!,
    }));
    return resolveIdempotentAppend(streamId, prepared, stored)!;
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    validateStreamId(streamId);
    const w = streamWindow(options);
    if (w.maxCount === 0) return [];
    const forwards = w.direction === 'forwards';
    const limit = w.maxCount >= Number.MAX_SAFE_INTEGER ? null : w.maxCount;
    const { rows } = await this.query<StoredRow>(forwards ? this.sql.forwards : this.sql.backwards, [streamId, w.from, limit]);
    return rows.map((r) => decodeRow(r, this.options.upcasters));
  }

  readStreamPages(streamId: string, options?: ReadStreamPagesOptions): AsyncIterable<RecordedEvent[]> {
    return pagesByReadStream(this, streamId, options);
  }

  async streamRevision(streamId: string): Promise<number | null> {
    const { rows } = await this.query<{ revision: string | null }>(this.named('triad_head', this.sql.head, [streamId]));
    return rows[0].revision === null ? null : Number(rows[0].revision);
  }

  /** One round trip per batch, reading only the (stream_id, revision) index. */
  async streamExtents(streamIds: readonly string[]): Promise<Map<string, StreamExtent>> {
    const out = new Map<string, StreamExtent>();
    for (const batch of extentBatches(streamIds)) {
      const { rows } = await this.query<{ stream_id: string; count: string; first: string; last: string }>(this.sql.extents, [batch]);
      for (const r of rows) out.set(r.stream_id, { count: Number(r.count), firstRevision: Number(r.first), lastRevision: Number(r.last) });
    }
    return out;
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const q = readAllQuery(this.sql.events, options);
    const { rows } = await this.query<StoredRow>(q.text, q.values);
    return rows.map((r) => decodeRow(r, this.options.upcasters));
  }

  async headPosition(): Promise<number> {
    const { rows } = await this.query<{ position: string }>(this.named('triad_head_position', this.sql.headPosition, []));
    return Number(rows[0].position);
  }

  subscribe(options: SubscribeOptions = {}): Subscription {
    return new CatchUpSubscription(this, options);
  }

  waitForEvents(after: number, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return this.notifier.wait(after, timeoutMs, signal);
  }

  async loadCheckpoint(name: string): Promise<number | null> {
    const { rows } = await this.query<{ position: string }>(this.named('triad_load_checkpoint', this.sql.loadCheckpoint, [name]));
    return rows.length === 0 ? null : Number(rows[0].position);
  }

  async saveCheckpoint(name: string, position: number): Promise<void> {
    await this.query(this.named('triad_save_checkpoint', this.sql.saveCheckpoint, [name, position]));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.notifier.releaseAll();
    if (this.listenerRetry) clearTimeout(this.listenerRetry);
    const listener = this.listener;
    this.listener = null;
    if (listener) await listener.end().catch(() => undefined);
    if (this.ownsPool) await this.pool.end();
  }

  /**
   * Every query goes through here: a failure to reach the server becomes StoreUnavailableError
   * (and is reported to the health sink); an answer, even an error, tells the sink the server is there.
   */
  private async query<R extends QueryResultRow = QueryResultRow>(config: QueryConfig | string, values?: unknown[]): Promise<{ rows: R[] }> {
    if (this.closed) throw new StoreUnavailableError('the store is closed');
    try {
      const result = await this.pool.query<R>(config as QueryConfig, values);
      this.options.health?.storeAnswered();
      return result;
    } catch (err) {
      const classified = classifyStoreError(err);
      if (classified instanceof StoreUnavailableError) this.options.health?.storeFailed(classified.detail);
      else this.options.health?.storeAnswered();
      throw classified;
    }
  }

  /**
   * Named statements are parsed once per pooled connection and may run a cached generic plan;
   * used only where every plan is an index lookup whatever the table's size. Reads whose best
   * plan depends on the parameters (ranges, limits, id lists) go unnamed, planned on each call.
   */
  private named(name: string, text: string, values: unknown[]): QueryConfig {
    return { name, text, values };
  }
}


function isUniqueViolation(err: unknown, constraint: string): boolean {
  const e = err as { code?: string; constraint?: string } | null;
  return e?.code === UNIQUE_VIOLATION && e.constraint === constraint;
}

function readAllQuery(table: string, options: ReadAllOptions): { text: string; values: unknown[] } {
  const filter: EventFilter | undefined = options.filter;
  const values: unknown[] = [options.after ?? 0];
  const where = ['position > $1'];
  if (filter?.types && filter.types.length > 0) {
    values.push(filter.types);
    where.push(`type = ANY ($${values.length}::text[])`);
  }
  if (filter?.streamPrefixes && filter.streamPrefixes.length > 0) {
    values.push(filter.streamPrefixes);
    // left(...) = prefix compares literally: no LIKE wildcards to escape.
    where.push(`EXISTS (SELECT 1 FROM unnest($${values.length}::text[]) AS p(prefix) WHERE left(stream_id, length(p.prefix)) = p.prefix)`);
  }
  // LIMIT NULL is LIMIT ALL; a negative count means no limit, as in the SQLite adapter.
  values.push(options.maxCount === undefined || options.maxCount < 0 ? null : options.maxCount);
  return {
    text: `SELECT ${ROW_COLUMNS} FROM ${table} WHERE ${where.join(' AND ')} ORDER BY position ASC LIMIT $${values.length}`,
    values,
  };
}
