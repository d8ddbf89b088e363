import type Database from 'better-sqlite3';
import { join } from 'node:path';
import { SqliteRunLeases } from '../../../src/team/leases/sqlite.run-leases';
import { openWalDatabase } from '../../support/sqlite';
import { tempDir } from '../../support/temp-dir';
import { runLeasesContract } from './run-leases.contract';

/** How this suite builds the adapter: its own constructor, on a connection to the events file. */
const makeAdapter = (db: Database.Database) => new SqliteRunLeases(db);

runLeasesContract('sqlite', async () => {
  const dir = tempDir('triad-leases-');
  const file = join(dir.path, 'triad.db');
  const connections: Database.Database[] = [];
  return {
    // Each handle on a connection of its own, as another process has.
    open: async () => {
      const db = openWalDatabase(file);
      connections.push(db);
      return makeAdapter(db);
    },
    cleanup: async () => {
      for (const db of connections) db.close();
      dir.remove();
    },
  };
});
