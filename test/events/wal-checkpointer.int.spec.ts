import { statSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteEventStore } from '../../src/events/sqlite.event-store';
import type { WalCheckpointer } from '../../src/events/wal-checkpointer';
import { tempDir } from '../support/temp-dir';

const checkpointerOf = (store: SqliteEventStore) => (store as unknown as { checkpointer: WalCheckpointer }).checkpointer;

async function until(cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('WAL checkpoints on a worker thread', () => {
  it('given many appends, then the worker copies the WAL into the database and the WAL file stays bounded, with no checkpoint inside a commit', async () => {
    const dir = tempDir();
    const file = join(dir.path, 'triad.db');
    const store = new SqliteEventStore({ file });
    try {
      expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
      const data = { text: 'x'.repeat(3000) };
      // ~8 MB of events: without checkpoints the WAL would hold all of it.
      for (let i = 0; i < 40; i++) {
        await store.append(`run-${i % 4}`, Array.from({ length: 60 }, () => ({ type: 'Noted', data })));
        await new Promise((r) => setTimeout(r, 30));
      }
      await until(() => checkpointerOf(store).framesCheckpointed > 0);
      await new Promise((r) => setTimeout(r, 500));
      // The database file holds the events, and the WAL was started over rather than grown.
      expect(statSync(file).size).toBeGreaterThan(4 * 1024 * 1024);
      expect(statSync(`${file}-wal`).size).toBeLessThan(6 * 1024 * 1024);
      expect(await store.readAll()).toHaveLength(2400);
    } finally {
      await store.close();
      dir.remove();
    }
  }, 30_000);

  it('given the worker dies, then SQLite checkpoints automatically again', async () => {
    const dir = tempDir();
    const store = new SqliteEventStore({ file: join(dir.path, 'triad.db') });
    try {
      await (checkpointerOf(store) as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
      await until(() => store.db.pragma('wal_autocheckpoint', { simple: true }) === 1000);
      await store.append('run-a', [{ type: 'Noted', data: {} }]);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('closes cleanly: the worker stops and the store can be reopened', async () => {
    const dir = tempDir();
    const file = join(dir.path, 'triad.db');
    const first = new SqliteEventStore({ file });
    await first.append('run-a', [{ type: 'Noted', data: { n: 1 } }]);
    await first.close();
    const again = new SqliteEventStore({ file });
    try {
      expect((await again.readStream('run-a')).map((e) => e.data)).toEqual([{ n: 1 }]);
    } finally {
      await again.close();
      dir.remove();
    }
  });
});
