import { Pool, type PoolClient } from 'pg';
import { applyPgMigrations } from '../shared/postgres-tables';
import type { StoreHealthSink } from '../shared/health';

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
  // append_events without its NOTIFY: the client tells other processes after COMMIT, at most once
  // per window for all its appends (CoalescedNotify). append_events stays, and still notifies, for
  // processes of an earlier version sharing the schema during an upgrade.
  (s, { lockClass }) => `
    CREATE FUNCTION ${s}.append_events_quiet(
      p_stream_id text, p_expected bigint,
      p_ids text[], p_types text[], p_data text[], p_metadata text[], p_hashes text[]
    ) RETURNS TABLE (outcome text, event_id text, event_stream text, event_revision bigint, event_position bigint, event_hash text)
    LANGUAGE plpgsql VOLATILE AS $fn$
    DECLARE
      v_n    integer := cardinality(p_ids);
      v_head bigint;
      v_last bigint;
    BEGIN
      PERFORM pg_advisory_xact_lock(${lockClass}, hashtext(p_stream_id));
      SELECT max(e.revision) INTO v_head FROM ${s}.events e WHERE e.stream_id = p_stream_id;
      IF NOT (p_expected = -1
              OR (p_expected = -2 AND v_head IS NULL)
              OR (p_expected = -3 AND v_head IS NOT NULL)
              OR (p_expected >= 0 AND v_head IS NOT NULL AND p_expected = v_head)) THEN
        RETURN QUERY EXECUTE
          'SELECT ''stored''::text, e.id, e.stream_id, e.revision, e.position, e.content_hash
           FROM ${s}.events e WHERE e.id = ANY ($1)' USING p_ids;
        IF NOT FOUND THEN
          RETURN QUERY SELECT 'conflict'::text, NULL::text, p_stream_id, v_head, NULL::bigint, NULL::text;
        END IF;
        RETURN;
      END IF;
      UPDATE ${s}.global_position g SET position = g.position + v_n RETURNING g.position INTO v_last;
      INSERT INTO ${s}.events (position, id, stream_id, revision, type, data, metadata, content_hash, recorded_at)
        SELECT v_last - v_n + u.ord, u.id, p_stream_id, coalesce(v_head, -1) + u.ord,
               u.type, u.data, u.metadata, u.hash, clock_timestamp()
        FROM unnest(p_ids, p_types, p_data, p_metadata, p_hashes) WITH ORDINALITY AS u(id, type, data, metadata, hash, ord);
      RETURN QUERY SELECT 'appended'::text, NULL::text, p_stream_id, coalesce(v_head, -1) + v_n, v_last, NULL::text;
    END
    $fn$;`,
  // Group commit: many appends (to any streams) in one statement and one transaction, each one
  // append_events_quiet, in order. Append k is p_counts[k] events of p_streams[k], taken in turn
  // from the event arrays. The streams' locks are all taken first, in ascending key order (each
  // append takes its own again, which a transaction already holding it gets at once), then the
  // counter by the first append written, as one append does: stream locks before the counter, so two
  // batches never wait for each other in a cycle. A stored id on the success path fails the whole
  // batch on events_id_key; the client then appends its members one by one.
  (s, { lockClass }) => `
    CREATE FUNCTION ${s}.append_batch_quiet(
      p_streams text[], p_expected bigint[], p_counts integer[],
      p_ids text[], p_types text[], p_data text[], p_metadata text[], p_hashes text[]
    ) RETURNS TABLE (ord integer, outcome text, event_id text, event_stream text, event_revision bigint, event_position bigint, event_hash text)
    LANGUAGE plpgsql VOLATILE AS $fn$
    DECLARE
      v_key  integer;
      v_k    integer;
      v_from integer := 1;
      v_to   integer;
    BEGIN
      FOR v_key IN SELECT DISTINCT hashtext(st) FROM unnest(p_streams) AS st ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(${lockClass}, v_key);
      END LOOP;
      FOR v_k IN 1 .. cardinality(p_streams) LOOP
        v_to := v_from + p_counts[v_k] - 1;
        RETURN QUERY SELECT v_k, a.outcome, a.event_id, a.event_stream, a.event_revision, a.event_position, a.event_hash
          FROM ${s}.append_events_quiet(p_streams[v_k], p_expected[v_k], p_ids[v_from : v_to], p_types[v_from : v_to],
                                        p_data[v_from : v_to], p_metadata[v_from : v_to], p_hashes[v_from : v_to]) AS a;
        v_from := v_to + 1;
      END LOOP;
    END
    $fn$;`,
];

export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

export interface PostgresPoolOptions {
  url: string;
  /** Connections in the pool used for appends and reads (default 10); LISTEN uses one more. */
  poolSize?: number;
  /** Told when an idle pooled connection is lost. */
  health?: StoreHealthSink;
  /** A query (or the wait for a pooled connection) that takes longer fails as unavailable (default 30 s). */
  queryTimeoutMs?: number;
}

/** Client-side bound on one query: a server that stops answering must not stall its callers forever. */
const DEFAULT_QUERY_TIMEOUT_MS = 30_000;

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

/**
 * Applies pending migrations once, in order, in one transaction under an advisory lock keyed
 * by the schema, so several processes starting at once neither race nor half-apply. `channel` is
 * the one `append_events` notifies (`postgresEventsChannel`).
 */
export async function migratePostgresEventStore(pool: Pool, schema: string, channel: string): Promise<void> {
  await applyPgMigrations(pool, {
    schema,
    lockKey: `triad.migrations.${schema}`,
    table: 'schema_migrations',
    label: 'the database schema',
    migrations: MIGRATIONS,
    context: async (client) => ({ lockClass: await streamLockClass(client, schema), channel }),
  });
}

/** The advisory-lock class for per-stream locks: per schema, so separate schemas never contend. */
async function streamLockClass(client: PoolClient, schema: string): Promise<number> {
  const { rows } = await client.query<{ h: number }>('SELECT hashtext($1) AS h', [`triad.streams.${schema}`]);
  return rows[0].h;
}
