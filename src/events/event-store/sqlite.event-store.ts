// One file over 400 lines on purpose: one adapter whose group commit, WAL fdatasync and read-ahead share one connection and one ordering argument.
import type Database from 'better-sqlite3';
import { realpathSync, statSync } from 'node:fs';
import { StoreUnavailableError, classifyStoreError } from '../errors';
import {
  DEFAULT_MAX_EVENT_BYTES,
  type AppendOptions,
  type AppendResult,
  type ExpectedRevision,
  type EventStore,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type ReadStreamPagesOptions,
  type RecordedEvent,
  type StreamExtent,
  type EventFilter,
} from './event-store.port';
import type { StoreOptions } from './store-options';
import {
  checkExpectedRevision,
  decodeRawRow,
  decodeRawStreamRow,
  planRecordedAppend,
  prepareEvents,
  prepareRecordedEvents,
  resolveIdempotentAppend,
  validateExpectedRevision,
  validateStreamId,
  type PreparedEvent,
  type PreparedRecordedEvent,
  type RawRow,
  type RawStreamRow,
  type StoredIdentity,
} from '../prepare';
import { EXTENT_BATCH_STREAMS, extentBatches, pageCount, pagesWindow, scannedTo, streamWindow } from '../read-helpers';
import { migrateSqliteEventStore, openSqliteDatabase, type SqliteDatabaseOptions } from '../sqlite.database';
import { decodePageText, extentsQuery, readAllQuery, sqliteStatements, tailQuery } from './sqlite.queries';
import { SqliteReadAhead } from './sqlite-read-ahead';
import type { TailRead } from './shared-tail';
import { TailedStore } from './tailed-store';
import { DurabilityError, WalSync } from '../wal-sync';
import type { StoreHealthSink } from '../../shared/health';

interface PendingAppend {
  streamId: string;
  expected: ExpectedRevision;
  prepared: PreparedEvent[];
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
}

export interface SqliteStoreOptions extends StoreOptions {
  /**
   * false: acknowledge appends at commit, without the fdatasync — not durable against a power cut
   * or an OS crash. Only for measuring SQLite's own work apart from the disk (`npm run bench`).
   */
  durable?: boolean;
  /**
   * false: long stream reads (`readStreamPages`) stay on this connection, without the read-ahead
   * thread. Default true.
   */
  readAhead?: boolean;
  /** Told when a commit fails as an outage would (a damaged, read-only or full file) and when one succeeds (`GET /health`). */
  health?: StoreHealthSink;
}

/**
 * Where the store's rows live: a connection opened by `openSqliteDatabase` and owned by the caller
 * (the storage, which closes it after every store on it), or a file the store opens and closes
 * itself (tests and tools that want an event store alone).
 */
export type SqliteStoreSource = { db: Database.Database } | ({ file: string } & SqliteDatabaseOptions);

/**
 * Appends written in one transaction of the group commit at most: thousands of runs resuming in
 * the same turn of the event loop would otherwise hold it for one long transaction; the rest go in
 * the next turn, and the fdatasync that follows still covers every transaction committed before it.
 */
export const MAX_APPENDS_PER_COMMIT = 256;

/** Pages a long stream read keeps asked of the read-ahead thread. */
const READ_AHEAD_PAGES = 2;
/** Reads of fewer pages than this (from the stream's head when it is read) stay on the store's connection. */
const READ_AHEAD_MIN_PAGES = 4;

/** How stale headPosition's answer about a replaced or deleted database file may be, at most (ms). */
export const FILE_CHECK_EVERY_MS = 500;

/**
 * Embedded adapter: one SQLite file in WAL mode. An append is acknowledged only once it is on
 * disk (it survives `kill -9` and a power cut): commits run with synchronous=NORMAL, and a group
 * fdatasync of the WAL off the event loop (`WalSync`) makes them durable before their callers
 * hear back. Appends run in BEGIN IMMEDIATE transactions, which also serialises writers from
 * several processes sharing the file; positions are the rowid, so the global order is commit
 * order and has no gaps.
 *
 * The connection is handed in by the storage (`src/storage/storage.ts`), which shares it with the
 * run stores and the decision log and closes it after this store; `{ file }` opens one of its own.
 */
export class SqliteEventStore extends TailedStore implements EventStore {
  readonly kind = 'sqlite';
  /** The store's connection (benchmarks and tests read and alter the file through it). */
  readonly db: Database.Database;
  private readonly maxEventBytes: number;
  private readonly readAllCache = new Map<string, Database.Statement>();
  private fullExtentBatch: Database.Statement | undefined;
  private readonly stmts;
  private readonly appendTx;
  private readonly batchTx;
  private readonly recordedTx;
  private pending: PendingAppend[] = [];
  private flushScheduled = false;
  private readonly wal: WalSync;
  private readonly readAhead: SqliteReadAhead;
  private pagesReadAhead = 0;
  private readAheadWaitMs = 0;
  private readonly options: SqliteStoreOptions;
  /** The resolved path of the database file. */
  private readonly file: string;
  /** The database file as it was opened: a path that names another file (or none) later means it was replaced. */
  private readonly fileIdentity: { dev: number; ino: number };
  /** When headPosition last looked whether the file was replaced (performance.now()). */
  private fileCheckedAt = -Infinity;
  /** Opened here from a file path (closed with the store), or handed in (closed by its owner). */
  private readonly ownsDb: boolean;

  constructor(source: SqliteStoreSource & SqliteStoreOptions) {
    // One process writes a SQLite file: all its news is its own, and a read costs no round trip.
    super({ lazyGatherMs: 0 });
    this.options = source;
    this.maxEventBytes = source.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    this.ownsDb = !('db' in source);
    this.db = 'db' in source ? source.db : openSqliteDatabase(source.file, source);
    try {
      if (this.db.memory || this.db.pragma('journal_mode', { simple: true }) !== 'wal') {
        throw new Error('the SQLite store needs a database file in WAL mode (openSqliteDatabase)');
      }
      migrateSqliteEventStore(this.db);
      // SQLite names the WAL after the database's resolved path (symlinks followed); opened now, so
      // a WAL that cannot be synced fails at startup, not at the first append.
      this.file = realpathSync(this.db.name);
      const opened = statSync(this.file);
      this.fileIdentity = { dev: opened.dev, ino: opened.ino };
      this.wal = new WalSync(`${this.file}-wal`);
      this.wal.open();
    } catch (err) {
      if (this.ownsDb) this.db.close();
      throw err;
    }
    this.readAhead = new SqliteReadAhead(this.file, require.resolve('better-sqlite3'));
    this.stmts = sqliteStatements(this.db);
    this.appendTx = this.db.transaction((streamId: string, expected, prepared: ReturnType<typeof prepareEvents>) => {
      const stored: StoredIdentity[] = [];
      for (const e of prepared) {
        const r = this.stmts.byId.get(e.id) as
          | { id: string; stream_id: string; revision: number; position: number; content_hash: string }
          | undefined;
        if (r) stored.push({ id: r.id, streamId: r.stream_id, revision: r.revision, position: r.position, contentHash: r.content_hash });
      }
      const replay = resolveIdempotentAppend(streamId, prepared, stored);
      if (replay) return replay;
      const head = (this.stmts.head.get(streamId) as { revision: number | null }).revision;
      checkExpectedRevision(streamId, expected, head);
      const recordedAt = new Date().toISOString();
      let revision = head ?? -1;
      let position = 0;
      for (const e of prepared) {
        revision += 1;
        const info = this.stmts.insert.run(e.id, streamId, revision, e.type, e.data, e.metadata, e.contentHash, recordedAt);
        position = Number(info.lastInsertRowid);
      }
      return { nextExpectedRevision: revision, position, fresh: true };
    });
    this.recordedTx = this.db.transaction((prepared: PreparedRecordedEvent[]) => {
      const stored: StoredIdentity[] = [];
      const heads = new Map<string, number>();
      const looked = new Set<string>();
      for (const e of prepared) {
        const r = this.stmts.byId.get(e.id) as
          | { id: string; stream_id: string; revision: number; position: number; content_hash: string }
          | undefined;
        if (r) stored.push({ id: r.id, streamId: r.stream_id, revision: r.revision, position: r.position, contentHash: r.content_hash });
        if (!looked.has(e.streamId)) {
          looked.add(e.streamId);
          const head = (this.stmts.head.get(e.streamId) as { revision: number | null }).revision;
          if (head !== null) heads.set(e.streamId, head);
        }
      }
      const headPosition = (this.stmts.headPosition.get() as { position: number }).position;
      const plan = planRecordedAppend(prepared, stored, heads, headPosition);
      for (const e of plan.write) {
        this.stmts.insertRecorded.run(e.position, e.id, e.streamId, e.revision, e.type, e.data, e.metadata, e.contentHash, e.recordedAt);
      }
      return plan;
    });
    // Nested transaction functions run in savepoints: a failed append rolls back alone.
    this.batchTx = this.db.transaction((batch: PendingAppend[], outcomes: unknown[]) => {
      for (const item of batch) {
        try {
          outcomes.push({ ok: true, result: this.appendTx(item.streamId, item.expected, item.prepared) });
        } catch (error) {
          outcomes.push({ ok: false, error });
        }
      }
    });
  }

  /**
   * One BEGIN IMMEDIATE transaction per batch (outside the group commit: a copy writes large
   * batches one after another), acknowledged after the WAL's fdatasync like every append.
   */
  async appendRecorded(events: readonly RecordedEvent[]): Promise<AppendResult> {
    const prepared = prepareRecordedEvents(events, this.maxEventBytes);
    const failure = this.wal.failure ?? this.fileReplaced();
    if (failure) throw failure;
    let outcome: { write: PreparedRecordedEvent[]; result: AppendResult };
    try {
      outcome = this.recordedTx.immediate(prepared);
    } catch (err) {
      throw classifyStoreError(err);
    }
    if (outcome.write.length === 0) return outcome.result;
    if (this.options.durable !== false) await this.wal.sync();
    this.notifier.notify(outcome.write[outcome.write.length - 1].position);
    return outcome.result;
  }

  /**
   * Group commit: appends that arrive within one turn of the event loop are written in one
   * transaction (up to MAX_APPENDS_PER_COMMIT of them; the rest in the next turn's) — each in its own savepoint, so one append's conflict does not touch the others —
   * and acknowledged after the fdatasync that follows the commit. That fdatasync runs off the
   * event loop and is shared by every batch committed while the one before it ran, so many
   * concurrent runs share syncs and the main thread does not wait for each commit's fsync (SQLite's
   * own WAL checkpoints, every 1,000 pages, still sync inside the commit that triggers them).
   */
  async append(streamId: string, events: NewEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    validateStreamId(streamId);
    const expected = validateExpectedRevision(options.expectedRevision);
    const prepared = prepareEvents(events, this.maxEventBytes);
    const failure = this.wal.failure;
    if (failure) throw failure;
    return new Promise<AppendResult>((resolve, reject) => {
      this.pending.push({ streamId, expected, prepared, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.pending.splice(0, MAX_APPENDS_PER_COMMIT);
    if (batch.length === 0) return;
    if (this.pending.length > 0) {
      // The rest in the next turn, after the loop has polled (timers, sockets, the sync's callback).
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
    const failure = this.wal.failure ?? this.fileReplaced();
    if (failure) {
      // Queued before the sync failed: refused like every append after it, and not written.
      for (const item of batch) item.reject(failure);
      return;
    }
    const outcomes: Array<{ ok: true; result: AppendResult & { fresh?: boolean } } | { ok: false; error: unknown }> = [];
    try {
      this.batchTx.immediate(batch, outcomes);
      this.options.health?.storeAnswered();
    } catch (err) {
      // The commit itself failed (disk full, I/O error, the file locked by another writer past
      // busy_timeout): nothing of the batch was written. A busy file is StoreUnavailableError.
      const error = classifyStoreError(err);
      if (error instanceof StoreUnavailableError) this.options.health?.storeFailed(error.detail);
      for (const item of batch) item.reject(error);
      return;
    }
    // A conflict wrote nothing: it is answered at once. Everything else (fresh appends, and
    // idempotent replays of appends that may still be syncing) is answered after the sync.
    let head = 0;
    const written: Array<{ item: PendingAppend; result: AppendResult }> = [];
    batch.forEach((item, i) => {
      const o = outcomes[i];
      // A statement of the append that met the lock past busy_timeout is a store fault too.
      if (!o.ok) return item.reject(classifyStoreError(o.error));
      if (o.result.fresh) head = Math.max(head, o.result.position);
      written.push({ item, result: { nextExpectedRevision: o.result.nextExpectedRevision, position: o.result.position } });
    });
    if (written.length === 0) return;
    const acknowledge = () => {
      for (const w of written) w.item.resolve(w.result);
      if (head > 0) this.notifier.notify(head);
    };
    if (this.options.durable === false) return acknowledge();
    this.wal.sync().then(
      acknowledge,
      (err: unknown) => {
        // Committed but not known to be on disk: the callers are told it failed, and the store
        // refuses writes until restarted (which replays the WAL from what reached the disk).
        for (const w of written) w.item.reject(err);
      },
    );
  }

  /**
   * Whether the database file was deleted or replaced while open (an operator's `rm` or `mv`):
   * SQLite would go on writing to the file it holds, which no restart would see. Every write and
   * `/health` check stat the path first (a microsecond or two); once it names another file or
   * none, the store refuses writes until restarted, and says why.
   */
  private fileReplaced(): DurabilityError | undefined {
    let now: { dev: number; ino: number } | undefined;
    try {
      now = statSync(this.file);
    } catch (err) {
      // Only a path that names nothing is a deleted file; any other failure to look (EIO, EACCES,
      // a stale network mount) says nothing either way, and the write goes on as it would have.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') return undefined;
      now = undefined;
    }
    if (now && now.dev === this.fileIdentity.dev && now.ino === this.fileIdentity.ino) return undefined;
    return this.wal.failWith(
      `the database file ${this.file} was ${now ? 'replaced' : 'deleted'} while triad had it open: writes are refused so that none goes to a file no restart would see; restart triad`,
    );
  }

  /** The group sync's counters: fdatasyncs of the WAL completed and their mean duration. */
  syncStats(): { syncs: number; meanSyncUs: number } {
    const { syncs, syncMs } = this.wal;
    return { syncs, meanSyncUs: syncs === 0 ? 0 : Math.round((syncMs * 1000) / syncs) };
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    validateStreamId(streamId);
    const w = streamWindow(options);
    if (w.maxCount === 0) return [];
    const stmt = w.direction === 'forwards' ? this.stmts.forwards : this.stmts.backwards;
    const rows = stmt.all(streamId, w.from, Math.min(w.maxCount, Number.MAX_SAFE_INTEGER)) as RawStreamRow[];
    const upcasters = this.options.upcasters;
    const out = new Array<RecordedEvent>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = decodeRawStreamRow(streamId, rows[i], upcasters);
    return out;
  }

  /**
   * Pages of one stream, the next ones read ahead on a second connection (`SqliteReadAhead`) while
   * the caller works on the current one, when the read spans READ_AHEAD_MIN_PAGES pages or more.
   * The first page, and every page until the read-ahead thread has started, is read here; so is
   * any page the thread fails to read.
   */
  async *readStreamPages(streamId: string, options: ReadStreamPagesOptions = {}): AsyncGenerator<RecordedEvent[]> {
    validateStreamId(streamId);
    const w = pagesWindow(options);
    // Pages asked of the thread, in order (undefined: the thread failed them); `next` is the first
    // revision not asked for yet.
    const ahead: { from: number; count: number; text: Promise<string | undefined> }[] = [];
    let next = w.from;
    // Short reads stay here: a page or two gains less from the thread than its messages cost.
    const last = w.to ?? (this.stmts.head.get(streamId) as { revision: number | null }).revision ?? -1;
    const useThread = last + 1 - w.from >= READ_AHEAD_MIN_PAGES * w.pageSize;
    for (let at = w.from; ; ) {
      const count = pageCount(w, at);
      if (count === 0) return;
      const asked = ahead.shift();
      let page: RecordedEvent[];
      if (asked) {
        const waitStarted = performance.now();
        const text = await asked.text;
        this.readAheadWaitMs += performance.now() - waitStarted;
        const decoded = text === undefined ? undefined : decodePageText(streamId, text, this.options.upcasters, asked.from);
        if (decoded === undefined) page = this.readPage(streamId, asked.from, asked.count);
        else {
          this.pagesReadAhead++;
          page = decoded;
        }
      } else page = this.readPage(streamId, at, count);
      if (next < at + count) next = at + count;
      if (useThread && page.length === count) {
        // Keep the thread READ_AHEAD_PAGES ahead (past the end it reads an empty page: one query).
        if (!this.readAhead.available) {
          if (this.options.readAhead !== false) this.readAhead.start();
        } else {
          for (let c = pageCount(w, next); ahead.length < READ_AHEAD_PAGES && c > 0; c = pageCount(w, next)) {
            // Handled when asked: the caller may hold this generator while the store closes or
            // the thread dies, and a rejection nobody has caught yet would end the process.
            ahead.push({ from: next, count: c, text: this.readAhead.read(streamId, next, c).catch(() => undefined) });
            next += c;
          }
        }
      }
      if (page.length > 0) yield page;
      if (page.length < count) return;
      at += page.length;
    }
  }

  /**
   * Starts the read-ahead thread now rather than at the first long read; resolves once it can take
   * reads (true) or failed to open the store (false, and reads stay on this connection).
   */
  startReadAhead(): Promise<boolean> {
    if (this.options.readAhead === false) return Promise.resolve(false);
    return this.readAhead.whenStarted();
  }

  /**
   * Pages of `readStreamPages` served by the read-ahead thread so far, and the time readers spent
   * waiting for them (the thread not being ahead).
   */
  readAheadStats(): { pages: number; waitMs: number } {
    return { pages: this.pagesReadAhead, waitMs: this.readAheadWaitMs };
  }

  private readPage(streamId: string, from: number, count: number): RecordedEvent[] {
    const rows = this.stmts.forwards.all(streamId, from, count) as RawStreamRow[];
    const upcasters = this.options.upcasters;
    const out = new Array<RecordedEvent>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = decodeRawStreamRow(streamId, rows[i], upcasters);
    return out;
  }

  async streamRevision(streamId: string): Promise<number | null> {
    return (this.stmts.head.get(streamId) as { revision: number | null }).revision;
  }

  /** One grouped read of the (stream_id, revision) index per batch; no event row is touched. */
  async streamExtents(streamIds: readonly string[]): Promise<Map<string, StreamExtent>> {
    const out = new Map<string, StreamExtent>();
    for (const batch of extentBatches(streamIds)) {
      // Full batches share one prepared statement; the last, shorter one is prepared for its size.
      let stmt: Database.Statement;
      if (batch.length === EXTENT_BATCH_STREAMS) stmt = this.fullExtentBatch ??= this.db.prepare(extentsQuery(batch.length)).raw(true);
      else stmt = this.db.prepare(extentsQuery(batch.length)).raw(true);
      for (const [streamId, count, first, last] of stmt.all(...batch) as [string, number, number, number][]) {
        out.set(streamId, { count, firstRevision: first, lastRevision: last });
      }
    }
    return out;
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const { stmt, params } = this.readAllStatement(options.filter);
    const rows = stmt.all(options.after ?? 0, ...params, options.maxCount ?? -1) as RawRow[];
    const upcasters = this.options.upcasters;
    const out = new Array<RecordedEvent>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = decodeRawRow(rows[i], upcasters);
    return out;
  }

  /** readAll's statement for a filter's shape (prepared once) and the filter's parameters. */
  private readAllStatement(filter: EventFilter | undefined): { stmt: Database.Statement; params: (string | number)[] } {
    return this.cachedStatement(readAllQuery(filter));
  }

  /** A read's statement, prepared once per shape. */
  private cachedStatement({ sql, params }: { sql: string; params: (string | number)[] }): { stmt: Database.Statement; params: (string | number)[] } {
    let stmt = this.readAllCache.get(sql);
    if (!stmt) {
      // Shapes vary with the number of filters and prefixes (the shared tail's union): a bound, not a leak.
      if (this.readAllCache.size >= 64) this.readAllCache.clear();
      stmt = this.db.prepare(sql).raw(true);
      this.readAllCache.set(sql, stmt);
    }
    return { stmt, params };
  }

  /**
   * Fails once the store cannot make writes durable, so health checks report it. A replaced or
   * deleted file is looked for here at most every FILE_CHECK_EVERY_MS (a `stat` per `/health`
   * was a sixth of its CPU); every write batch still looks before it commits.
   */
  async headPosition(): Promise<number> {
    const now = performance.now();
    const look = now - this.fileCheckedAt >= FILE_CHECK_EVERY_MS;
    if (look) this.fileCheckedAt = now;
    const failure = this.wal.failure ?? (look ? this.fileReplaced() : undefined);
    if (failure) throw failure;
    return (this.stmts.headPosition.get() as { position: number }).position;
  }

  /** The shared tail's read: the events after `after`, and how far a filtered read saw (the head read first). */
  protected async readAfter(after: number, maxCount: number, filters: readonly EventFilter[] | undefined): Promise<TailRead> {
    const toHeld = (r: RawRow) => ({ event: decodeRawRow(r, this.options.upcasters), storedType: r[4], size: r[5].length + r[6].length });
    if (!filters) {
      const events = (this.readAllStatement(undefined).stmt.all(after, maxCount) as RawRow[]).map(toHeld);
      return { events, scannedTo: scannedTo(after, events.at(-1)?.event.position, events.length === maxCount, 0) };
    }
    // The head first: every event at or below it is committed (one writer, positions in commit order).
    const head = (this.stmts.headPosition.get() as { position: number }).position;
    const { stmt, params } = this.cachedStatement(tailQuery(filters));
    const events = (stmt.all(after, ...params, maxCount) as RawRow[]).map(toHeld);
    return { events, scannedTo: scannedTo(after, events.at(-1)?.event.position, events.length === maxCount, head) };
  }

  async loadCheckpoint(name: string): Promise<number | null> {
    const row = this.stmts.loadCheckpoint.get(name) as { position: number } | undefined;
    return row?.position ?? null;
  }

  async saveCheckpoint(name: string, position: number): Promise<void> {
    this.stmts.saveCheckpoint.run(name, position, new Date().toISOString());
  }

  async close(): Promise<void> {
    while (this.pending.length > 0) this.flush();
    // Appends already committed are answered once their sync completes.
    await this.wal.close();
    await this.readAhead.close();
    this.notifier.releaseAll();
    if (this.ownsDb && this.db.open) this.db.close();
  }
}

