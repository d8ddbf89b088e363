import type { Pool } from 'pg';
import { LazyPgTable } from '../shared/postgres-tables';
import { GroupCommit, settleOneByOne, takeUpTo, type Waiting } from '../shared/group-commit';
import { isStoreUnavailable } from '../events/errors';
import { settledWithin } from '../shared/pause';
import { checkpointJson, type Checkpoint } from './checkpoint';
import type { CheckpointStore } from './checkpoint-store.port';
import { MAX_BATCH_BYTES, MAX_SAVES_PER_BATCH, parseCheckpointText, type SavedCheckpoint } from './stored-checkpoint';

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
