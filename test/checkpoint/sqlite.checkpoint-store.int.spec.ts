import type Database from 'better-sqlite3';
import { join } from 'node:path';
import { CHECKPOINT_SCHEMA_VERSION, type Checkpoint } from '../../src/checkpoint/checkpoint';
import { SqliteCheckpointStore } from '../../src/checkpoint/sqlite.checkpoint-store';
import { openWalDatabase } from '../support/sqlite';
import { tempDir } from '../support/temp-dir';
import { checkpointStoreContract } from './checkpoint-store.contract';

/** How this suite builds the adapter: its own constructor, on a connection to the events file. */
const makeAdapter = (db: Database.Database) => new SqliteCheckpointStore(db);

checkpointStoreContract('sqlite', async () => {
  const dir = tempDir('triad-checkpoints-');
  const file = join(dir.path, 'triad.db');
  const connections: Database.Database[] = [];
  const connect = () => {
    const db = openWalDatabase(file);
    connections.push(db);
    return db;
  };
  const editor = connect();
  return {
    // Each store on a connection of its own, as another process has.
    open: async () => makeAdapter(connect()),
    overwrite: async (runId, text) => {
      editor.prepare('UPDATE checkpoints SET body = ? WHERE run_id = ?').run(text, runId);
    },
    cleanup: async () => {
      for (const db of connections) db.close();
      dir.remove();
    },
  };
});

describe('SQLite checkpoint store: saves made at once', () => {
  const runCheckpoint = (runId: string, revision: number): Checkpoint => ({
    runId,
    revision,
    position: revision,
    schemaVersion: CHECKPOINT_SCHEMA_VERSION,
    contentHash: `sha256:${'0'.repeat(64)}`,
    createdAt: '2025-04-01T08:00:00.000Z',
    reason: 'phase',
    state: { runId, revision },
  });

  it('given saves made in one turn of the loop, one of which the database refuses, then only that one fails and the others are stored', async () => {
    const dir = tempDir('triad-checkpoints-batch-');
    const db = openWalDatabase(join(dir.path, 'triad.db'));
    const store = makeAdapter(db);
    try {
      // Given: the database refuses one run's checkpoint (as a full disk or a constraint would one row).
      db.exec(`CREATE TRIGGER refuse_one BEFORE INSERT ON checkpoints WHEN NEW.run_id = 'run_refused' BEGIN SELECT RAISE(ABORT, 'refused'); END`);
      const runIds = ['run_a', 'run_b', 'run_refused', 'run_c'];
      // When: all four are saved at once (one batch).
      const outcomes = await Promise.allSettled(runIds.map((runId, i) => store.save(runCheckpoint(runId, i + 1))));
      // Then: the refused one fails with the database's reason; the rest are stored.
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      expect(String((outcomes[2] as PromiseRejectedResult).reason)).toMatch(/refused/);
      for (const [i, runId] of runIds.entries()) {
        if (runId === 'run_refused') expect(await store.latest(runId)).toBeUndefined();
        else expect(await store.latest(runId)).toEqual(runCheckpoint(runId, i + 1));
      }
    } finally {
      await store.close();
      db.close();
      dir.remove();
    }
  });

  it('given saves made just before close, then close writes them first', async () => {
    const dir = tempDir('triad-checkpoints-close-');
    const file = join(dir.path, 'triad.db');
    const db = openWalDatabase(file);
    const store = makeAdapter(db);
    // Given: saves made, not yet written (they go in the next turn of the loop).
    const saves = ['run_x', 'run_y'].map((runId) => store.save(runCheckpoint(runId, 3)));
    // When: the store closes at once.
    await store.close();
    await Promise.all(saves);
    // Then: another store over the same file reads them.
    const reader = makeAdapter(db);
    try {
      for (const runId of ['run_x', 'run_y']) expect(await reader.latest(runId)).toEqual(runCheckpoint(runId, 3));
    } finally {
      await reader.close();
      db.close();
      dir.remove();
    }
  });
});
