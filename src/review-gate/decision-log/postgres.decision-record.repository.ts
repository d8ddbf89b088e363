import type { Pool } from 'pg';
import { applyPgMigrations, PG_SCHEMA_NAME, quoteIdent } from '../../shared/postgres-tables';
import { GENESIS_PREV_HASH, type DecisionFilter, type DecisionRecord } from './decision-record';
import {
  BEFORE_FIRST_SEQ,
  decisionFilterSql,
  DecisionLogHeadMovedError,
  DEFAULT_PAGE_SIZE,
  iterateByPages,
  type AppendRecordResult,
  type DecisionRecordRepository,
} from './decision-record.repository';
import { DECISION_COLUMNS, recordOfRow, rowValues, type DecisionRow } from './decision-record.rows';

/**
 * The decision log's versioned schema in the event store's PostgreSQL schema, with its own
 * version table. Each entry runs once, in order, in one transaction under an advisory lock, so
 * processes starting at once neither race nor half-apply. Append new entries, never edit old ones.
 */
const MIGRATIONS: Array<(s: string) => string> = [
  (s) => `
    CREATE TABLE ${s}.decision_records (
      seq                 bigint PRIMARY KEY,
      decision_id         text NOT NULL CONSTRAINT decision_records_decision_id_key UNIQUE,
      run_id              text NOT NULL,
      review_id           text NOT NULL,
      iteration           integer NOT NULL,
      executor            text NOT NULL,
      decider             text NOT NULL,
      decider_kind        text NOT NULL,
      outcome             text NOT NULL,
      reason              text NOT NULL,
      policy              text,
      -- JSON text exactly as written, and decided_at as the event's ISO text (compared byte by
      -- byte: COLLATE "C"), so what is read back hashes as it did when written.
      acceptance_criteria text NOT NULL,
      artifact_hash       text NOT NULL,
      charter_version     text NOT NULL,
      decided_at          text COLLATE "C" NOT NULL,
      position            bigint NOT NULL,
      prev_hash           text NOT NULL,
      hash                text NOT NULL
    );
    CREATE INDEX decision_records_run ON ${s}.decision_records (run_id, seq);
    CREATE INDEX decision_records_decider ON ${s}.decision_records (decider, seq);
    CREATE INDEX decision_records_decided_at ON ${s}.decision_records (decided_at);`,
  // Tool approvals join the log: a review's own columns may be NULL, an approval's are added, and
  // the log's head at the upgrade is kept: approval decisions before it were never recorded.
  (s) => `
    ALTER TABLE ${s}.decision_records
      ALTER COLUMN review_id DROP NOT NULL,
      ALTER COLUMN iteration DROP NOT NULL,
      ALTER COLUMN executor DROP NOT NULL,
      ALTER COLUMN acceptance_criteria DROP NOT NULL,
      ALTER COLUMN artifact_hash DROP NOT NULL,
      ALTER COLUMN charter_version DROP NOT NULL,
      ADD COLUMN kind text,
      ADD COLUMN approval_id text,
      ADD COLUMN tool_name text,
      ADD COLUMN input_hash text,
      ADD COLUMN risk text,
      ADD COLUMN role text,
      ADD COLUMN turn integer;
    DROP INDEX ${s}.decision_records_decider;
    CREATE INDEX decision_records_decider ON ${s}.decision_records (lower(decider), seq);
    CREATE INDEX decision_records_hash ON ${s}.decision_records (hash);
    CREATE TABLE ${s}.decision_log_settings (key text PRIMARY KEY, value bigint NOT NULL);
    INSERT INTO ${s}.decision_log_settings (key, value) SELECT 'approvals_from', COALESCE(MAX(position), 0) FROM ${s}.decision_records;`,
];

export const POSTGRES_DECISION_LOG_SCHEMA_VERSION = MIGRATIONS.length;

const COLUMNS = DECISION_COLUMNS.join(', ');
const PARAM_TYPES = ['bigint', 'text', 'text', 'text', 'integer', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'bigint', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'integer'];

/**
 * PostgreSQL adapter: a `decision_records` table next to the events, on the storage's pool. An
 * append is one statement that inserts only when the record is the next one (its seq follows the
 * head and its prevHash is the head's hash) and its decision is not stored yet; the unique seq and
 * decision id settle concurrent appends from several processes (ON CONFLICT DO NOTHING), and a
 * client whose insert did not land re-reads to tell "already there" from "head moved".
 */
export class PostgresDecisionRecordRepository implements DecisionRecordRepository {
  readonly kind = 'postgres';
  private readonly table: string;
  private readonly sql;

  private constructor(
    private readonly pool: Pool,
    readonly schema: string,
  ) {
    const s = quoteIdent(schema);
    this.table = `${s}.decision_records`;
    const params = PARAM_TYPES.map((t, i) => `$${i + 1}::${t}`);
    this.sql = {
      append: `
        WITH head AS (SELECT seq, hash FROM ${this.table} ORDER BY seq DESC LIMIT 1)
        INSERT INTO ${this.table} (${COLUMNS})
        SELECT ${params.join(', ')}
        WHERE NOT EXISTS (SELECT 1 FROM ${this.table} WHERE decision_id = $2::text)
          AND CASE WHEN EXISTS (SELECT 1 FROM head)
                   THEN (SELECT seq FROM head) = $1::bigint - 1 AND (SELECT hash FROM head) = $17::text
                   ELSE $1::bigint = 1 AND $17::text = '${GENESIS_PREV_HASH}' END
        ON CONFLICT DO NOTHING
        RETURNING seq`,
      byId: `SELECT ${COLUMNS} FROM ${this.table} WHERE decision_id = $1`,
      last: `SELECT ${COLUMNS} FROM ${this.table} ORDER BY seq DESC LIMIT 1`,
      byHash: `SELECT ${COLUMNS} FROM ${this.table} WHERE hash = $1 ORDER BY seq ASC LIMIT 1`,
      approvalsFrom: `SELECT value FROM ${s}.decision_log_settings WHERE key = 'approvals_from'`,
      count: `SELECT count(*)::bigint AS n FROM ${this.table}`,
    };
  }

  /** Opens the repository on a pool (the storage's, shared with the event store), bringing its schema up to date. */
  static async open(pool: Pool, schema = 'public'): Promise<PostgresDecisionRecordRepository> {
    if (!PG_SCHEMA_NAME.test(schema)) throw new Error(`invalid PostgreSQL schema name '${schema}'`);
    const repo = new PostgresDecisionRecordRepository(pool, schema);
    await repo.migrate();
    return repo;
  }

  private async migrate(): Promise<void> {
    await applyPgMigrations(this.pool, {
      schema: this.schema,
      lockKey: `triad.decision-log.migrations.${this.schema}`,
      table: 'decision_log_migrations',
      label: 'the decision log schema',
      migrations: MIGRATIONS,
    });
  }

  async append(record: DecisionRecord): Promise<AppendRecordResult> {
    const { rowCount } = await this.pool.query(this.sql.append, rowValues(record));
    if (rowCount === 1) return { appended: true };
    const existing = await this.get(record.decisionId);
    if (existing) return { appended: false, existing };
    throw new DecisionLogHeadMovedError(record, await this.last());
  }

  async get(decisionId: string): Promise<DecisionRecord | null> {
    const { rows } = await this.pool.query<DecisionRow>(this.sql.byId, [decisionId]);
    return rows.length > 0 ? recordOfRow(rows[0]) : null;
  }

  async last(): Promise<DecisionRecord | null> {
    const { rows } = await this.pool.query<DecisionRow>(this.sql.last);
    return rows.length > 0 ? recordOfRow(rows[0]) : null;
  }

  async getByHash(hash: string): Promise<DecisionRecord | null> {
    const { rows } = await this.pool.query<DecisionRow>(this.sql.byHash, [hash]);
    return rows.length > 0 ? recordOfRow(rows[0]) : null;
  }

  async approvalsFrom(): Promise<number> {
    const { rows } = await this.pool.query<{ value: string }>(this.sql.approvalsFrom);
    return Number(rows[0]?.value ?? 0);
  }

  async list(filter: DecisionFilter = {}, page: { afterSeq?: number; limit?: number } = {}): Promise<DecisionRecord[]> {
    return this.listPage(filter, page.afterSeq ?? BEFORE_FIRST_SEQ, page.limit ?? DEFAULT_PAGE_SIZE);
  }

  iterate(options: { filter?: DecisionFilter; afterSeq?: number; pageSize?: number } = {}): AsyncIterable<DecisionRecord> {
    return iterateByPages((after, limit) => this.listPage(options.filter ?? {}, after, limit), options.pageSize, options.afterSeq);
  }

  async count(): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(this.sql.count);
    return Number(rows[0].n);
  }

  async close(): Promise<void> {
    // The pool belongs to the storage, which ends it.
  }

  private async listPage(filter: DecisionFilter, afterSeq: number, limit: number): Promise<DecisionRecord[]> {
    const values: unknown[] = [afterSeq];
    const where = ['seq > $1', ...decisionFilterSql(filter, (v) => `$${values.push(v)}`)];
    values.push(limit);
    const { rows } = await this.pool.query<DecisionRow>(
      `SELECT ${COLUMNS} FROM ${this.table} WHERE ${where.join(' AND ')} ORDER BY seq ASC LIMIT $${values.length}`,
      values,
    );
    return rows.map(recordOfRow);
  }
}

