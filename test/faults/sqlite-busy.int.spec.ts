import Database from 'better-sqlite3';
import { join } from 'node:path';
import { StoreUnavailableError } from '../../src/events/errors';
import { SqliteEventStore } from '../../src/events/event-store/sqlite.event-store';
import { tempDir } from '../support/temp-dir';

// Another connection holding the SQLite write lock past the busy timeout: the append fails as
// StoreUnavailableError (nothing written), and succeeds once the lock is gone.

describe('a busy SQLite file', () => {
  it('an append that cannot get the write lock is StoreUnavailableError and writes nothing', async () => {
    const dir = tempDir('triad-busy-');
    const file = join(dir.path, 'triad.db');
    const store = new SqliteEventStore({ file, busyTimeoutMs: 50 });
    const other = new Database(file);
    try {
      await store.append('s-1', [{ type: 'T', data: { n: 1 } }]);
      other.exec('BEGIN IMMEDIATE');
      await expect(store.append('s-1', [{ id: 'e-2', type: 'T', data: { n: 2 } }])).rejects.toBeInstanceOf(StoreUnavailableError);
      other.exec('ROLLBACK');
      expect((await store.readStream('s-1')).map((e) => e.data)).toEqual([{ n: 1 }]);
      // The same append made again, once the lock is gone, lands once.
      await store.append('s-1', [{ id: 'e-2', type: 'T', data: { n: 2 } }], { expectedRevision: 0 });
      expect((await store.readStream('s-1')).map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }]);
    } finally {
      other.close();
      await store.close();
      dir.remove();
    }
  });
});
