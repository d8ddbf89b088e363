import type Database from 'better-sqlite3';
import { join } from 'node:path';
import { SqliteCheckpointStore } from '../../src/checkpoint/checkpoint-stores';
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
