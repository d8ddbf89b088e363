import { join } from 'node:path';
import { SqliteEventStore } from '../../src/events/sqlite.event-store';
import { tempDir } from '../support/temp-dir';
import { eventStoreContract } from './event-store.contract';

eventStoreContract('sqlite', () => {
  const dir = tempDir();
  const file = join(dir.path, 'triad.db');
  return {
    open: async (o) => new SqliteEventStore({ file, ...o }),
    reopen: async (o) => new SqliteEventStore({ file, ...o }),
    cleanup: async () => dir.remove(),
  };
});

describe('sqlite store specifics', () => {
  it('runs in WAL mode with synchronous=FULL and records its schema version', async () => {
    const dir = tempDir();
    const store = new SqliteEventStore({ file: join(dir.path, 'x', 'triad.db') });
    try {
      expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(store.db.pragma('synchronous', { simple: true })).toBe(2);
      expect(store.db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get()).toEqual({ v: 1 });
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('refuses a database whose schema is newer than this build', async () => {
    const dir = tempDir();
    const file = join(dir.path, 'triad.db');
    const store = new SqliteEventStore({ file });
    store.db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (99, ?)').run(new Date().toISOString());
    await store.close();
    expect(() => new SqliteEventStore({ file })).toThrow(/newer than this triad/);
    dir.remove();
  });
});
