import type Database from 'better-sqlite3';
import { openUnsyncedConnection } from '../shared/sqlite-side-connection';
import { GroupCommit, settleOneByOne, takeUpTo, type Waiting } from '../shared/group-commit';
import { isStoreUnavailable } from '../events/errors';
import { settledWithin } from '../shared/pause';
import { checkpointJson, type Checkpoint } from './checkpoint';
import type { CheckpointStore } from './checkpoint-store.port';
import { MAX_BATCH_BYTES, MAX_SAVES_PER_BATCH, parseCheckpointText, type SavedCheckpoint } from './stored-checkpoint';

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
