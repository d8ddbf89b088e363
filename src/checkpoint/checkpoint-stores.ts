import type Database from 'better-sqlite3';
import { openUnsyncedConnection } from '../shared/sqlite-side-connection';
import type { Pool } from 'pg';
import { LazyPgTable } from '../shared/postgres-tables';
import { GroupCommit, settleOneByOne, takeUpTo, type Waiting } from '../shared/group-commit';
import { isStoreUnavailable } from '../events/errors';
import { settledWithin } from '../shared/pause';
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

/** Checkpoints in one batch (one upsert on PostgreSQL, one transaction on SQLite), at most; and their state's JSON, at most (one larger goes alone). */
const MAX_SAVES_PER_BATCH = 64;
const MAX_BATCH_BYTES = 8 * 1024 * 1024;

/** A checkpoint waiting to be saved, with its stored text. */
interface SavedCheckpoint {
  cp: Checkpoint;
  body: string;
}

/**
 * SQLite: a `checkpoints` table in the events database, the latest checkpoint per run (a newer
 * revision replaces an older one; an older one never replaces a newer). Written through a
 * connection without fsync (`openUnsyncedConnection`): losing the latest checkpoint to a power cut
 * only means a longer replay. Saves made in one turn of the event loop go in one transaction (a
 * process driving many runs takes many checkpoints at once, and a commit costs more than an upsert).
 */
export class SqliteCheckpointStore implements CheckpointStore {
  private readonly upsert;
  private readonly upsertAll;
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
    // In the order made: the upsert's own condition keeps the latest revision of a run saved twice.
    this.upsertAll = db.transaction((saved: SavedCheckpoint[]) => {
      for (const s of saved) this.write(s);
    });
    this.select = db.prepare('SELECT body FROM checkpoints WHERE run_id = ?');
  }

  private readonly group = new GroupCommit<SavedCheckpoint, void>(
    async (batch) => this.saveBatch(batch),
    (waiting) => takeUpTo(waiting, MAX_SAVES_PER_BATCH, MAX_BATCH_BYTES, (saved) => saved.body.length),
  );

  save(cp: Checkpoint): Promise<void> {
    return this.group.push({ cp, body: checkpointJson(cp) });
  }

  private write({ cp, body }: SavedCheckpoint): void {
    this.upsert.run(cp.runId, cp.revision, cp.schemaVersion, cp.createdAt, body);
  }

  /**
   * One transaction for the batch. When it fails, nothing of it was written: on an outage (the file
   * locked past the busy timeout) every save of the batch fails with that error; otherwise (a row
   * the database refuses) they are written one by one, so that only what cannot be written fails.
   * Errors are SQLite's own, as a single save would throw them.
   */
  private async saveBatch(batch: Array<Waiting<SavedCheckpoint, void>>): Promise<void> {
    try {
      if (batch.length === 1) this.write(batch[0].item);
      else this.upsertAll.immediate(batch.map((w) => w.item));
      for (const w of batch) w.resolve();
    } catch (err) {
      if (batch.length === 1 || isStoreUnavailable(err)) throw err;
      await settleOneByOne(batch, async (saved) => this.write(saved), isStoreUnavailable);
    }
  }

  async latest(runId: string): Promise<Checkpoint | { corrupt: string } | undefined> {
    const row = this.select.get(runId) as { body: string } | undefined;
    return row ? parseCheckpointText(row.body) : undefined;
  }

  /**
   * Writes the saves already made (they are written in the next turn of the loop; SQLite's writes
   * are synchronous, so that is one turn), then closes its connection.
   */
  async close(): Promise<void> {
    await settledWithin(this.group.idle(), 1000);
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

  /** Saves made while one statement is in flight go together in the next (one transaction, one WAL flush). */
  private readonly group = new GroupCommit<SavedCheckpoint, void>(
    (batch) => this.saveBatch(batch),
    (waiting) => takeUpTo(waiting, MAX_SAVES_PER_BATCH, MAX_BATCH_BYTES, (saved) => saved.body.length),
  );

  async save(cp: Checkpoint): Promise<void> {
    await this.table.ensure();
    return this.group.push({ cp, body: checkpointJson(cp) });
  }

  /**
   * One upsert of the batch's checkpoints, the latest per run (an older revision never replaces a
   * newer one, in the batch or stored). A failure other than an outage (a statement that one
   * checkpoint breaks) saves them one by one, so that only that one fails.
   */
  private async saveBatch(batch: Array<Waiting<SavedCheckpoint, void>>): Promise<void> {
    try {
      await this.upsert(batch.map((w) => w.item));
      for (const w of batch) w.resolve();
    } catch (err) {
      if (batch.length === 1 || isStoreUnavailable(err)) throw err;
      await settleOneByOne(batch, (saved) => this.upsert([saved]), isStoreUnavailable);
    }
  }

  private async upsert(saved: SavedCheckpoint[]): Promise<void> {
    const latest = new Map<string, SavedCheckpoint>();
    for (const s of saved) if ((latest.get(s.cp.runId)?.cp.revision ?? -1) <= s.cp.revision) latest.set(s.cp.runId, s);
    // In one order (by run), so two processes' batches over the same runs never wait on each other in a cycle.
    const rows = [...latest.values()].sort((a, b) => (a.cp.runId < b.cp.runId ? -1 : a.cp.runId > b.cp.runId ? 1 : 0));
    await this.pool.query(
      `INSERT INTO ${this.table.name} (run_id, revision, schema_version, created_at, body)
         SELECT * FROM unnest($1::text[], $2::bigint[], $3::int[], $4::timestamptz[], $5::text[])
       ON CONFLICT (run_id) DO UPDATE SET revision = EXCLUDED.revision, schema_version = EXCLUDED.schema_version,
         created_at = EXCLUDED.created_at, body = EXCLUDED.body
       WHERE EXCLUDED.revision >= ${this.table.name}.revision`,
      [rows.map((r) => r.cp.runId), rows.map((r) => r.cp.revision), rows.map((r) => r.cp.schemaVersion), rows.map((r) => r.cp.createdAt), rows.map((r) => r.body)],
    );
  }

  async latest(runId: string): Promise<Checkpoint | { corrupt: string } | undefined> {
    await this.table.ensure();
    const { rows } = await this.pool.query<{ body: string }>(`SELECT body FROM ${this.table.name} WHERE run_id = $1`, [runId]);
    return rows[0] ? parseCheckpointText(rows[0].body) : undefined;
  }

  /** Waits (1 s at most) for the saves already made: the storage ends the pool after this. */
  async close(): Promise<void> {
    await settledWithin(this.group.idle(), 1000);
  }
}
