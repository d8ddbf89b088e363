// One file over 400 lines on purpose: one adapter whose batched appends, NOTIFY and reads rest on one ordering argument (position order is commit order), stated below.
import type { Pool, QueryConfig, QueryResultRow } from 'pg';
import { ConflictError } from '../../shared/errors';
import type { StoreHealthSink } from '../../shared/health';
import { classifyStoreError, isStoreUnavailable, StoreUnavailableError, WrongExpectedRevisionError } from '../errors';
import {
  DEFAULT_MAX_EVENT_BYTES,
  type AppendOptions,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type ReadStreamPagesOptions,
  type RecordedEvent,
  type StreamExtent,
  type EventFilter,
} from './event-store.port';
import type { StoreOptions } from './store-options';
import { GroupCommit, settleOneByOne, takeUpTo, type Waiting } from '../../shared/group-commit';
import { settledWithin } from '../../shared/pause';
import { PG_SCHEMA_NAME } from '../../shared/postgres-tables';
import { CoalescedNotify } from '../coalesced-notify';
import { migratePostgresEventStore, openPostgresPool, type PostgresPoolOptions } from '../postgres.database';
import { PostgresAppendListener, postgresEventsChannel } from '../postgres.listener';
import { postgresStatements, readAllQuery, tailQuery } from './postgres.queries';
import {
  checkExpectedRevision,
  decodeRow,
  planRecordedAppend,
  prepareEvents,
  prepareRecordedEvents,
  resolveIdempotentAppend,
  validateExpectedRevision,
  validateStreamId,
  type PreparedEvent,
  type StoredIdentity,
  type StoredRow,
} from '../prepare';
import { extentBatches, pagesByReadStream, scannedTo, streamWindow } from '../read-helpers';
import type { TailRead } from './shared-tail';
import { TailedStore } from './tailed-store';

export interface PostgresStoreOptions extends StoreOptions {
  /** Where the LISTEN connection goes (it cannot be a pooled one): the pool's server. */
  url: string;
  /** A Postgres schema holding triad's tables; created when missing. Default `public`. */
  schema?: string;
  /** Told of every query that could not reach the server, and of every one that could. */
  health?: StoreHealthSink;
}

const EXPECTED_CODE: Record<Exclude<ExpectedRevision, number>, number> = { any: -1, no_stream: -2, stream_exists: -3 };
/** An expected revision as the append functions take it: the revision, or its code. */
const expectedCode = (expected: ExpectedRevision): number => (typeof expected === 'number' ? expected : EXPECTED_CODE[expected]);
const UNIQUE_VIOLATION = '23505';

interface AppendRow {
  outcome: 'stored' | 'conflict' | 'appended';
  event_id: string | null;
  event_stream: string;
  event_revision: string | null;
  event_position: string | null;
  event_hash: string | null;
}

/**
 * Other processes hear of this one's appends at most once per window (the first append after a
 * quiet window at once). Their shared tails gather news for up to 40 ms anyway; a shorter window
 * only costs more notifications, a longer one delays news for urgent subscriptions elsewhere.
 */
const NOTIFY_WINDOW_MS = 10;
/** Appends in one group commit, at most (each may take a stream lock: PostgreSQL's lock table holds 64 per connection by default). */
const MAX_APPENDS_PER_BATCH = 64;
/** Event JSON in one group commit, at most (one append larger than this goes alone). */
const MAX_BATCH_BYTES = 4 * 1024 * 1024;

/** An append waiting for the batch in flight to finish. */
type WaitingAppend = Waiting<{ streamId: string; expected: ExpectedRevision; prepared: PreparedEvent[] }, AppendResult>;

/** A row of `append_batch_quiet`: an `append_events_quiet` row of the batch's `ord`-th append (from 1). */
type BatchRow = AppendRow & { ord: number };

/**
 * PostgreSQL adapter: many triad processes may share one database.
 *
 * Global order: positions come from a single-row counter updated inside the append transaction;
 * its row lock is held until COMMIT, so a transaction gets its positions only once the previous
 * one is visible. Position order is commit order, positions have no gaps (a rollback rolls the
 * counter back too), and a reader can never pass an uncommitted write. Readers take no locks.
 *
 * Live subscriptions are woken by LISTEN/NOTIFY (appends from any process, told after COMMIT at most
 * once per 10 ms per process), by the in-process notifier, and by timeout polling when neither arrives.
 *
 * The pool is handed in by the storage (`src/storage/storage.ts`), which shares it with the run
 * stores and the decision log and ends it after this store closes; `connect` opens one of its own.
 */
export class PostgresEventStore extends TailedStore implements EventStore {
  readonly kind = 'postgres';
  private readonly maxEventBytes: number;
  private readonly listener: PostgresAppendListener;
  /** Tells other processes of this one's appends, after COMMIT, at most once per window. */
  private readonly news: CoalescedNotify;
  private closed = false;
  private readonly sql;
  /** Appends made while a batch is in flight wait, then go together. */
  private readonly group = new GroupCommit<WaitingAppend['item'], AppendResult>(
    (batch) => this.writeBatch(batch),
    (waiting) => takeUpTo(waiting, MAX_APPENDS_PER_BATCH, MAX_BATCH_BYTES, (a) => a.prepared.reduce((n, e) => n + e.data.length + e.metadata.length, 0)),
  );

  private constructor(
    private readonly pool: Pool,
    /** Opened by `connect` (ended with the store), or handed to `open` (ended by its owner). */
    private readonly ownsPool: boolean,
    private readonly options: PostgresStoreOptions,
    readonly schema: string,
    private readonly channel: string,
  ) {
    super();
    this.maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    this.sql = postgresStatements(schema);
    this.listener = new PostgresAppendListener(options.url, channel, (position) => this.notifier.notify(position));
    // A send that fails is not retried: listeners re-read every 250 ms without news.
    this.news = new CoalescedNotify((position) => this.pool.query('SELECT pg_notify($1, $2)', [this.channel, String(position)]).then(() => undefined), NOTIFY_WINDOW_MS);
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
    if (!PG_SCHEMA_NAME.test(schema)) {
      if (ownsPool) await pool.end();
      throw new Error(`invalid PostgreSQL schema name '${schema}'`);
    }
    const channel = postgresEventsChannel(schema);
    const store = new PostgresEventStore(pool, ownsPool, options, schema, channel);
    try {
      await migratePostgresEventStore(pool, schema, channel);
      await store.listener.start();
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  /**
   * Group commit: an append waits while this process's previous batch is in flight, and then goes
   * with every append that came meanwhile (up to MAX_APPENDS_PER_BATCH), in one statement and one
   * transaction (`append_batch_quiet`), each judged on its own as if appended alone, in order. One
   * append with nothing else waiting goes alone, as before. Appends from all processes serialise on
   * the position counter through their commits, so sending them one by one paid a round trip, a
   * transaction and a WAL flush each; a batch pays them once.
   */
  async append(streamId: string, events: NewEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    validateStreamId(streamId);
    const expected = validateExpectedRevision(options.expectedRevision);
    const prepared = prepareEvents(events, this.maxEventBytes);
    if (this.closed) throw new StoreUnavailableError('the store is closed');
    return this.group.push({ streamId, expected, prepared });
  }

  /** One batch of the group commit: alone through `append_events_quiet`, several through `append_batch_quiet`. */
  private async writeBatch(batch: WaitingAppend[]): Promise<void> {
    if (batch.length === 1) await settleOneByOne(batch, (a) => this.appendAlone(a.streamId, a.expected, a.prepared), isStoreUnavailable);
    else await this.appendBatch(batch);
  }

  /**
   * Several appends in one statement. When the statement fails for a reason other than an outage
   * (a stored id on the success path, a concurrent append of the same ids), nothing of it was
   * written: its appends go one by one, where the idempotency rules and the conflicts of each are
   * decided as for any single append.
   */
  private async appendBatch(batch: WaitingAppend[]): Promise<void> {
    let rows: BatchRow[];
    try {
      ({ rows } = await this.query<BatchRow>(
        this.named('triad_append_batch', this.sql.appendBatch, [
          batch.map(({ item: a }) => a.streamId),
          batch.map(({ item: a }) => expectedCode(a.expected)),
          batch.map(({ item: a }) => a.prepared.length),
          batch.flatMap(({ item: a }) => a.prepared.map((e) => e.id)),
          batch.flatMap(({ item: a }) => a.prepared.map((e) => e.type)),
          batch.flatMap(({ item: a }) => a.prepared.map((e) => e.data)),
          batch.flatMap(({ item: a }) => a.prepared.map((e) => e.metadata)),
          batch.flatMap(({ item: a }) => a.prepared.map((e) => e.contentHash)),
        ]),
      ));
    } catch (err) {
      if (isStoreUnavailable(err)) throw err; // every append of the batch fails with it
      await settleOneByOne(batch, (a) => this.appendAlone(a.streamId, a.expected, a.prepared), isStoreUnavailable);
      return;
    }
    const byOrd = new Map<number, BatchRow[]>();
    for (const r of rows) {
      const of = byOrd.get(r.ord);
      if (of) of.push(r);
      else byOrd.set(r.ord, [r]);
    }
    batch.forEach((w, i) => {
      try {
        w.resolve(this.outcome(w.item.streamId, w.item.expected, w.item.prepared, byOrd.get(i + 1) ?? []));
      } catch (err) {
        w.reject(err);
      }
    });
  }

  /** One append alone: `append_events_quiet`, retried once when a stored id makes the idempotency rules undecided. */
  private async appendAlone(streamId: string, expected: ExpectedRevision, prepared: PreparedEvent[]): Promise<AppendResult> {
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

  /**
   * One transaction: the global counter's row locked first (as `append_events` does, so position
   * order stays commit order), then the batch's stored ids and stream heads read, the plan made
   * by the shared rule, the rows inserted at their recorded positions and the counter moved to the
   * last. The unique constraints stay the final arbiters against a concurrent append.
   */
  async appendRecorded(events: readonly RecordedEvent[]): Promise<AppendResult> {
    const prepared = prepareRecordedEvents(events, this.maxEventBytes);
    if (this.closed) throw new StoreUnavailableError('the store is closed');
    let client;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw classifyStoreError(err);
    }
    let broken = false;
    try {
      await client.query('BEGIN');
      const { rows: counter } = await client.query<{ position: string }>(`SELECT position FROM ${this.sql.globalPosition} FOR UPDATE`);
      const { rows: stored } = await client.query<{ id: string; stream_id: string; revision: string; position: string; content_hash: string }>(
        `SELECT id, stream_id, revision, position, content_hash FROM ${this.sql.events} WHERE id = ANY ($1::text[])`,
        [prepared.map((e) => e.id)],
      );
      const { rows: heads } = await client.query<{ stream_id: string; revision: string }>(
        `SELECT stream_id, max(revision) AS revision FROM ${this.sql.events} WHERE stream_id = ANY ($1::text[]) GROUP BY stream_id`,
        [[...new Set(prepared.map((e) => e.streamId))]],
      );
      const plan = planRecordedAppend(
        prepared,
        stored.map((r) => ({ id: r.id, streamId: r.stream_id, revision: Number(r.revision), position: Number(r.position), contentHash: r.content_hash })),
        new Map(heads.map((r) => [r.stream_id, Number(r.revision)])),
        Number(counter[0].position),
      );
      const w = plan.write;
      if (w.length > 0) {
        await client.query(
          `INSERT INTO ${this.sql.events} (position, id, stream_id, revision, type, data, metadata, content_hash, recorded_at)
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[])`,
          [
            w.map((e) => e.position),
            w.map((e) => e.id),
            w.map((e) => e.streamId),
            w.map((e) => e.revision),
            w.map((e) => e.type),
            w.map((e) => e.data),
            w.map((e) => e.metadata),
            w.map((e) => e.contentHash),
            w.map((e) => e.recordedAt),
          ],
        );
        await client.query(`UPDATE ${this.sql.globalPosition} SET position = $1`, [w[w.length - 1].position]);
      }
      await client.query('COMMIT');
      this.options.health?.storeAnswered();
      if (w.length > 0) this.appended(w[w.length - 1].position, w);
      return plan.result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => (broken = true));
      if (isUniqueViolation(err, 'events_stream_revision_key') || isUniqueViolation(err, 'events_id_key') || isUniqueViolation(err, 'events_pkey')) {
        throw new ConflictError('a concurrent append took a place of the recorded batch; nothing of it was written');
      }
      const classified = classifyStoreError(err);
      if (classified instanceof StoreUnavailableError) this.options.health?.storeFailed(classified.detail);
      throw classified;
    } finally {
      client.release(broken);
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
        expectedCode(expected),
        prepared.map((e) => e.id),
        prepared.map((e) => e.type),
        prepared.map((e) => e.data),
        prepared.map((e) => e.metadata),
        prepared.map((e) => e.contentHash),
      ]),
    );
    return this.outcome(streamId, expected, prepared, rows);
  }

  /** What the append functions answered for one append: its result, or the conflict or id clash it met. */
  private outcome(streamId: string, expected: ExpectedRevision, prepared: PreparedEvent[], rows: AppendRow[]): AppendResult {
    const first = rows[0];
    if (!first) throw new Error(`the append of stream '${streamId}' got no answer from the batch`);
    if (first.outcome === 'appended') {
      const position = Number(first.event_position);
      this.appended(position, prepared.map((e) => ({ streamId, type: e.type })));
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

  /** An append of this process's committed, up to `position`: wakes its waiters, at once for those that wait for these events. */
  private appended(position: number, events: readonly { streamId: string; type: string }[]): void {
    this.tail.appended(events);
    this.notifier.notify(position);
    this.news.appended(position);
  }

  async headPosition(): Promise<number> {
    const { rows } = await this.query<{ position: string }>(this.named('triad_head_position', this.sql.headPosition, []));
    return Number(rows[0].position);
  }

  /** The shared tail's read: the events after `after`, and how far a filtered read saw (the head read in the same query). */
  protected async readAfter(after: number, maxCount: number, filters: readonly EventFilter[] | undefined): Promise<TailRead> {
    const toHeld = (r: StoredRow) => ({ event: decodeRow(r, this.options.upcasters), storedType: r.type, size: r.data.length + r.metadata.length });
    if (!filters) {
      const q = readAllQuery(this.sql.events, { after, maxCount });
      const { rows } = await this.query<StoredRow>(q.text, q.values);
      const events = rows.map(toHeld);
      return { events, scannedTo: scannedTo(after, events.at(-1)?.event.position, events.length === maxCount, 0) };
    }
    const q = tailQuery(this.sql.events, after, maxCount, filters);
    const { rows } = await this.query<StoredRow & { head: string }>(q.text, q.values);
    const events = rows.filter((r) => r.id !== null).map(toHeld);
    return { events, scannedTo: scannedTo(after, events.at(-1)?.event.position, events.length === maxCount, Number(rows[0].head)) };
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
    // The appends already made are written (1 s at most), then the store refuses more.
    await settledWithin(this.group.idle(), 1000);
    if (this.closed) return;
    this.closed = true;
    this.notifier.releaseAll();
    await this.news.close();
    await this.listener.close();
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
