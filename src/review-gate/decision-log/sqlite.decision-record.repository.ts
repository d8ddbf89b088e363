import type Database from 'better-sqlite3';
import type { DecisionFilter, DecisionRecord } from './decision-record';
import {
  BEFORE_FIRST_SEQ,
  decisionFilterSql,
  DecisionLogHeadMovedError,
  DEFAULT_PAGE_SIZE,
  followsHead,
  iterateByPages,
  type AppendRecordResult,
  type DecisionRecordRepository,
} from './decision-record.repository';
import { DECISION_COLUMNS, recordOfRow, recordOfValues, rowValues, type DecisionRow } from './decision-record.rows';

/**
 * The decision log's own versioned schema, kept apart from the event store's migrations (its own
 * version table), so the two evolve independently in one database file. Each entry runs once, in
 * order, in one transaction. Append new entries, never edit old ones.
 */
/** The columns of schema version 1 (the rows copied when version 2 rebuilds the table). */
const V1_COLUMNS = DECISION_COLUMNS.slice(0, DECISION_COLUMNS.indexOf('hash') + 1).join(', ');

const MIGRATIONS: string[] = [
  `CREATE TABLE decision_records (
     seq                 INTEGER PRIMARY KEY,
     decision_id         TEXT NOT NULL UNIQUE,
     run_id              TEXT NOT NULL,
     review_id           TEXT NOT NULL,
     iteration           INTEGER NOT NULL,
     executor            TEXT NOT NULL,
     decider             TEXT NOT NULL,
     decider_kind        TEXT NOT NULL,
     outcome             TEXT NOT NULL,
     reason              TEXT NOT NULL,
     policy              TEXT,
     acceptance_criteria TEXT NOT NULL,
     artifact_hash       TEXT NOT NULL,
     charter_version     TEXT NOT NULL,
     decided_at          TEXT NOT NULL,
     position            INTEGER NOT NULL,
     prev_hash           TEXT NOT NULL,
     hash                TEXT NOT NULL
   );
   CREATE INDEX decision_records_run ON decision_records (run_id, seq);
   CREATE INDEX decision_records_decider ON decision_records (decider, seq);
   CREATE INDEX decision_records_decided_at ON decision_records (decided_at);`,
  // Tool approvals join the log: a review's own columns may be NULL (SQLite cannot drop NOT NULL,
  // so the table is rebuilt, rows copied as they are), an approval's columns are added, and the log's
  // head at the upgrade is kept: approval decisions before it were never recorded.
  `CREATE TABLE decision_records_v2 (
     seq                 INTEGER PRIMARY KEY,
     decision_id         TEXT NOT NULL UNIQUE,
     run_id              TEXT NOT NULL,
     review_id           TEXT,
     iteration           INTEGER,
     executor            TEXT,
     decider             TEXT NOT NULL,
     decider_kind        TEXT NOT NULL,
     outcome             TEXT NOT NULL,
     reason              TEXT NOT NULL,
     policy              TEXT,
     acceptance_criteria TEXT,
     artifact_hash       TEXT,
     charter_version     TEXT,
     decided_at          TEXT NOT NULL,
     position            INTEGER NOT NULL,
     prev_hash           TEXT NOT NULL,
     hash                TEXT NOT NULL,
     kind                TEXT,
     approval_id         TEXT,
     tool_name           TEXT,
     input_hash          TEXT,
     risk                TEXT,
     role                TEXT,
     turn                INTEGER
   );
   INSERT INTO decision_records_v2 (${V1_COLUMNS}) SELECT ${V1_COLUMNS} FROM decision_records;
   DROP TABLE decision_records;
   ALTER TABLE decision_records_v2 RENAME TO decision_records;
   CREATE INDEX decision_records_run ON decision_records (run_id, seq);
   CREATE INDEX decision_records_decider ON decision_records (lower(decider), seq);
   CREATE INDEX decision_records_decided_at ON decision_records (decided_at);
   CREATE INDEX decision_records_hash ON decision_records (hash);
   CREATE TABLE decision_log_settings (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
   INSERT INTO decision_log_settings (key, value) SELECT 'approvals_from', COALESCE(MAX(position), 0) FROM decision_records;`,
];

export const SQLITE_DECISION_LOG_SCHEMA_VERSION = MIGRATIONS.length;

const COLUMNS = DECISION_COLUMNS.join(', ');

/**
 * SQLite adapter: a `decision_records` table in the events database file, on the storage's shared
 * connection (the event store's). Appends run in BEGIN IMMEDIATE transactions (the check that the
 * record is the next one and the insert are atomic, also against other processes sharing the file).
 *
 * Durability: records are a projection of the events, so an append commits with the
 * connection's synchronous=NORMAL and waits for no fsync of its own: the WAL is synced by the
 * event store's next group sync or checkpoint, and WAL order keeps what survives a crash a
 * prefix. A power cut can lose only the last records, and the projector writes them again from
 * the events, since it resumes after the last record that survived.
 */
export class SqliteDecisionRecordRepository implements DecisionRecordRepository {
  readonly kind = 'sqlite';
  private readonly stmts;
  private readonly appendTx;
  private readonly listCache = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {
    this.migrate();
    this.stmts = {
      byId: db.prepare(`SELECT ${COLUMNS} FROM decision_records WHERE decision_id = ?`),
      last: db.prepare(`SELECT ${COLUMNS} FROM decision_records ORDER BY seq DESC LIMIT 1`),
      byHash: db.prepare(`SELECT ${COLUMNS} FROM decision_records WHERE hash = ? ORDER BY seq ASC LIMIT 1`),
      approvalsFrom: db.prepare("SELECT value FROM decision_log_settings WHERE key = 'approvals_from'"),
      count: db.prepare('SELECT COUNT(*) AS n FROM decision_records'),
      insert: db.prepare(`INSERT INTO decision_records (${COLUMNS}) VALUES (${DECISION_COLUMNS.map(() => '?').join(', ')})`),
    };
    this.appendTx = db.transaction((record: DecisionRecord): AppendRecordResult => {
      const existing = this.stmts.byId.get(record.decisionId) as DecisionRow | undefined;
      if (existing) return { appended: false, existing: recordOfRow(existing) };
      const headRow = this.stmts.last.get() as DecisionRow | undefined;
      const head = headRow ? recordOfRow(headRow) : null;
      if (!followsHead(record, head)) throw new DecisionLogHeadMovedError(record, head);
      this.stmts.insert.run(...rowValues(record));
      return { appended: true };
    });
  }

  private migrate(): void {
    this.db.exec('CREATE TABLE IF NOT EXISTS decision_log_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
    const tx = this.db.transaction(() => {
      const { v } = this.db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM decision_log_migrations').get() as { v: number };
      if (v > MIGRATIONS.length) {
        throw new Error(`the decision log schema is at version ${v}, newer than this triad (${MIGRATIONS.length}); upgrade triad`);
      }
      for (let next = v + 1; next <= MIGRATIONS.length; next++) {
        this.db.exec(MIGRATIONS[next - 1]);
        this.db.prepare('INSERT INTO decision_log_migrations (version, applied_at) VALUES (?, ?)').run(next, new Date().toISOString());
      }
    });
    tx.immediate();
  }

  async append(record: DecisionRecord): Promise<AppendRecordResult> {
    return this.appendTx.immediate(record);
  }

  async get(decisionId: string): Promise<DecisionRecord | null> {
    const row = this.stmts.byId.get(decisionId) as DecisionRow | undefined;
    return row ? recordOfRow(row) : null;
  }

  async last(): Promise<DecisionRecord | null> {
    const row = this.stmts.last.get() as DecisionRow | undefined;
    return row ? recordOfRow(row) : null;
  }

  async getByHash(hash: string): Promise<DecisionRecord | null> {
    const row = this.stmts.byHash.get(hash) as DecisionRow | undefined;
    return row ? recordOfRow(row) : null;
  }

  async approvalsFrom(): Promise<number> {
    const row = this.stmts.approvalsFrom.get() as { value: number } | undefined;
    return Number(row?.value ?? 0);
  }

  async list(filter: DecisionFilter = {}, page: { afterSeq?: number; limit?: number } = {}): Promise<DecisionRecord[]> {
    return this.listSync(filter, page.afterSeq ?? BEFORE_FIRST_SEQ, page.limit ?? DEFAULT_PAGE_SIZE);
  }

  iterate(options: { filter?: DecisionFilter; afterSeq?: number; pageSize?: number } = {}): AsyncIterable<DecisionRecord> {
    return iterateByPages(async (after, limit) => this.listSync(options.filter ?? {}, after, limit), options.pageSize, options.afterSeq);
  }

  async count(): Promise<number> {
    return (this.stmts.count.get() as { n: number }).n;
  }

  async close(): Promise<void> {
    // The connection belongs to the storage, which closes it.
  }

  private listSync(filter: DecisionFilter, afterSeq: number, limit: number): DecisionRecord[] {
    const params: unknown[] = [afterSeq];
    const where = ['seq > ?', ...decisionFilterSql(filter, (v) => (params.push(v), '?'))];
    const sql = `SELECT ${COLUMNS} FROM decision_records WHERE ${where.join(' AND ')} ORDER BY seq ASC LIMIT ?`;
    let stmt = this.listCache.get(sql);
    if (!stmt) {
      // Raw mode: rows as arrays of column values, cheaper to build than objects with named keys
      // (reading the whole log is most of what verification costs).
      stmt = this.db.prepare(sql).raw(true);
      this.listCache.set(sql, stmt);
    }
    return (stmt.all(...params, limit) as unknown[][]).map(recordOfValues);
  }
}
