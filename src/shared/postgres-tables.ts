import type { Pool, PoolClient } from 'pg';

/** A schema name triad accepts: a plain identifier of up to 63 characters (PostgreSQL's limit). */
export const PG_SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Double-quotes an identifier; names reaching here are validated, quoting keeps them literal. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export interface TableLogger {
  warn(message: string): void;
}

/**
 * A table next to the events in PostgreSQL (checkpoints, leases), created when missing: when the
 * storage opens, or at the first statement of a store built on its own (tests, tools).
 *
 * CREATE TABLE IF NOT EXISTS is not safe against itself in PostgreSQL: when two processes run it at
 * once, one fails with a unique violation on the catalog (23505) or "already exists" (42P07); either
 * means the table is there now. A creation that fails otherwise (a lost connection) is not cached:
 * the next call tries again.
 *
 * The table and its indexes are looked up first and created only when missing, so a role that may
 * write tables another role created needs no right to create anything: CREATE TABLE IF NOT EXISTS
 * wants CREATE on the schema, and CREATE INDEX IF NOT EXISTS wants to own the table, before either
 * looks for what is already there. Indexes only make reads faster: a role that may not add a
 * missing one (42501) goes on without it and says so once.
 */
export class LazyPgTable {
  /** The qualified, quoted name: `"schema".table`. */
  readonly name: string;
  private readonly schema: string;
  private ready?: Promise<void>;

  constructor(
    private readonly pool: Pool,
    schema: string,
    private readonly table: string,
    private readonly columns: string,
    /** Indexes on it (name suffix and column list), created with it or added to an older table. */
    private readonly indexes: ReadonlyArray<{ name: string; columns: string }> = [],
    /** Told of an index this role may not create (default: a process warning on stderr). */
    private readonly logger: TableLogger = { warn: (message) => process.emitWarning(message) },
  ) {
    this.schema = quoteIdent(schema);
    this.name = `${this.schema}.${table}`;
  }

  ensure(): Promise<void> {
    this.ready ??= this.create().catch((err: Error) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }

  private async create(): Promise<void> {
    if (!(await this.exists(this.table))) await this.createOnce(`CREATE TABLE IF NOT EXISTS ${this.name} (${this.columns})`);
    for (const index of this.indexes) await this.createIndex(`${this.table}_${index.name}`, index.columns);
  }

  /** Whether the relation is there, read without needing the right to create it. */
  private async exists(relation: string): Promise<boolean> {
    const found = await this.pool.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [`${this.schema}.${quoteIdent(relation)}`]);
    return found.rows[0]?.present === true;
  }

  private async createIndex(indexName: string, columns: string): Promise<void> {
    if (await this.exists(indexName)) return;
    try {
      await this.createOnce(`CREATE INDEX IF NOT EXISTS ${quoteIdent(indexName)} ON ${this.name} (${columns})`);
    } catch (err) {
      if ((err as { code?: string }).code !== '42501') throw err;
      this.logger.warn(`index ${indexName} is missing and this role may not create it (it does not own ${this.name}); reads of the table go on without it`);
    }
  }

  private async createOnce(sql: string): Promise<void> {
    try {
      await this.pool.query(sql);
    } catch (err) {
      // Two processes creating it at once: the loser sees a unique violation on the catalogue
      // (23505), the relation (42P07) or its row type (42710) already there; then it is there.
      const code = (err as { code?: string }).code;
      if (code !== '23505' && code !== '42P07' && code !== '42710') throw err;
      await this.pool.query(sql);
    }
  }
}

export interface PgMigrations<C> {
  schema: string;
  /** Key of the advisory lock the migrations run under (one per schema and migration set). */
  lockKey: string;
  /** Table recording the applied versions (in `schema`). */
  table: string;
  /** What the versions are of, for the "newer than this triad" refusal. */
  label: string;
  /** Each entry runs once, in order; append new entries, never edit old ones. */
  migrations: Array<(quotedSchema: string, context: C) => string>;
  /** Values the migrations need that are read inside the transaction. */
  context?: (client: PoolClient) => Promise<C>;
}

/**
 * Applies pending versioned migrations once, in order, in one transaction under an advisory lock,
 * so several processes starting at once neither race nor half-apply. A schema newer than the code
 * is refused. A schema that is up to date asks nothing of the role but to read its version table.
 */
export async function applyPgMigrations<C = undefined>(pool: Pool, m: PgMigrations<C>): Promise<void> {
  const s = quoteIdent(m.schema);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [m.lockKey]);
    // Looked up before they are created: CREATE ... IF NOT EXISTS checks the right to create before
    // it looks, so a role that may only use a schema migrated by another would be refused.
    const found = await client.query<{ schema: boolean; table: boolean }>(
      'SELECT to_regnamespace($1) IS NOT NULL AS schema, to_regclass($2) IS NOT NULL AS table',
      [s, `${s}.${m.table}`],
    );
    if (!found.rows[0].schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    if (!found.rows[0].table) await client.query(`CREATE TABLE IF NOT EXISTS ${s}.${m.table} (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)`);
    const { rows } = await client.query<{ v: number }>(`SELECT coalesce(max(version), 0)::int AS v FROM ${s}.${m.table}`);
    const current = rows[0].v;
    if (current > m.migrations.length) {
      throw new Error(`${m.label} in '${m.schema}' is at version ${current}, newer than this triad (${m.migrations.length}); upgrade triad`);
    }
    const context = m.context ? await m.context(client) : (undefined as C);
    for (let v = current + 1; v <= m.migrations.length; v++) {
      await client.query(m.migrations[v - 1](s, context));
      await client.query(`INSERT INTO ${s}.${m.table} (version, applied_at) VALUES ($1, now())`, [v]);
    }
    await client.query('COMMIT');
  } catch (err) {
    // The migration's own error is rethrown below; a ROLLBACK that fails means the connection is gone, which ends the transaction anyway.
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
