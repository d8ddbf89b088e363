import type Database from 'better-sqlite3';
import { openUnsyncedConnection } from '../shared/sqlite-side-connection';
import type { Pool } from 'pg';
import { LazyPgTable } from '../shared/postgres-tables';
import { checkpointJson, type Checkpoint } from './checkpoint';
import type { CheckpointStore } from './checkpoint-store.port';

/** Keeps checkpoints as JSON round trips, so tests behave like the durable stores. */
export class InMemoryCheckpointStore implements CheckpointStore {
  private readonly rows = new Map<string, string>();
  private readonly revisions = new Map<string, number>();

  async save(cp: Checkpoint): Promise<void> {
    if ((this.revisions.get(cp.runId) ?? -1) > cp.revision) return;
    this.revisions.set(cp.runId, cp.revision);
    this.rows.set(cp.runId, checkpointJson(cp));
  }

  async latest(runId: string): Promise<Checkpoint | { corrupt: string } | undefined> {
    const row = this.rows.get(runId);
    return row === undefined ? undefined : parseCheckpointText(row);
  }

  /** Test hook: replace the stored text (to simulate corruption). */
  overwrite(runId: string, text: string): void {
    this.rows.set(runId, text);
  }

  async close(): Promise<void> {}
}

/** A stored checkpoint text: the checkpoint, or why it cannot be one. */
export function parseCheckpointText(text: string): Checkpoint | { corrupt: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { corrupt: `unparseable checkpoint: ${(err as Error).message}` };
  }
  // Valid JSON that is not an object (a string, a number, null) is as unusable as broken JSON.
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { corrupt: 'the checkpoint is not a JSON object' };
  return value as Checkpoint;
}

/**
 * SQLite: a `checkpoints` table in the events database, the latest checkpoint per run (a newer
 * revision replaces an older one; an older one never replaces a newer). Written through a
 * connection without fsync (`openUnsyncedConnection`): losing the latest checkpoint to a power cut
 * only means a longer replay.
 */
export class SqliteCheckpointStore implements CheckpointStore {
  private readonly upsert;
  private readonly select;
  private readonly own?: Database.Database;

  constructor(shared: Database.Database) {
    this.own = openUnsyncedConnection(shared);
    const db = this.own ?? shared;
    db.exec(`CREATE TABLE IF NOT EXISTS checkpoints (
      run_id TEXT PRIMARY KEY,
      revision INTEGER NOT NULL,
      schema_version INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      body TEXT NOT NULL
    )`);
    this.upsert = db.prepare(
      `INSERT INTO checkpoints (run_id, revision, schema_version, created_at, body) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, schema_version = excluded.schema_version,
         created_at = excluded.created_at, body = excluded.body
       WHERE excluded.revision >= checkpoints.revision`,
    );
    this.select = db.prepare('SELECT body FROM checkpoints WHERE run_id = ?');
  }

  async save(cp: Checkpoint): Promise<void> {
    this.upsert.run(cp.runId, cp.revision, cp.schemaVersion, cp.createdAt, checkpointJson(cp));
  }

  async latest(runId: string): Promise<Checkpoint | { corrupt: string } | undefined> {
    const row = this.select.get(runId) as { body: string } | undefined;
    return row ? parseCheckpointText(row.body) : undefined;
  }

  async close(): Promise<void> {
    if (this.own?.open) this.own.close();
  }
}

export class PostgresCheckpointStore implements CheckpointStore {
  private readonly table: LazyPgTable;

  constructor(
    private readonly pool: Pool,
    schema: string,
  ) {
    this.table = new LazyPgTable(pool, schema, 'checkpoints', 'run_id TEXT PRIMARY KEY, revision BIGINT NOT NULL, schema_version INT NOT NULL, created_at TIMESTAMPTZ NOT NULL, body TEXT NOT NULL');
  }

  /** Creates the table now when it is missing (opening the storage does, so that it is there for a role that may not create it). */
  ensureTables(): Promise<void> {
    return this.table.ensure();
  }

  async save(cp: Checkpoint): Promise<void> {
    await this.table.ensure();
    await this.pool.query(
      `INSERT INTO ${this.table.name} (run_id, revision, schema_version, created_at, body) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (run_id) DO UPDATE SET revision = EXCLUDED.revision, schema_version = EXCLUDED.schema_version,
         created_at = EXCLUDED.created_at, body = EXCLUDED.body
       WHERE EXCLUDED.revision >= ${this.table.name}.revision`,
      [cp.runId, cp.revision, cp.schemaVersion, cp.createdAt, checkpointJson(cp)],
    );
  }

  async latest(runId: string): Promise<Checkpoint | { corrupt: string } | undefined> {
    await this.table.ensure();
    const { rows } = await this.pool.query<{ body: string }>(`SELECT body FROM ${this.table.name} WHERE run_id = $1`, [runId]);
    return rows[0] ? parseCheckpointText(rows[0].body) : undefined;
  }

  async close(): Promise<void> {}
}
