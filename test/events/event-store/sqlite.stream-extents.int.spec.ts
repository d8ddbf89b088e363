import Database from 'better-sqlite3';
import { join } from 'node:path';
import { SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import { extentsQuery } from '../../../src/events/event-store/sqlite.queries';
import { EXTENT_BATCH_STREAMS } from '../../../src/events/read-helpers';
import { tempDir } from '../../support/temp-dir';

/** streamExtents on a real SQLite file: holes made outside triad show, and the query reads the index only. */
describe('sqlite streamExtents', () => {
  let dir: ReturnType<typeof tempDir>;
  let file: string;
  let store: SqliteEventStore;

  beforeEach(() => {
    dir = tempDir();
    file = join(dir.path, 'triad.db');
    store = new SqliteEventStore({ file });
  });

  afterEach(async () => {
    await store.close();
    dir.remove();
  });

  const events = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'Noted', data: { i } }));

  it('given rows deleted from the database file by another connection, then their streams show holes', async () => {
    await store.append('run-a', events(5));
    await store.append('run-b', events(3));
    await store.append('run-c', events(2));
    await store.append('run-d', events(2));
    const raw = new Database(file);
    try {
      raw.pragma('busy_timeout = 10000');
      raw.prepare('DELETE FROM events WHERE stream_id = ? AND revision = ?').run('run-a', 2);
      raw.prepare('DELETE FROM events WHERE stream_id = ? AND revision = ?').run('run-b', 0);
      // A revision moved below 0 keeps count = lastRevision + 1: the first revision shows it.
      raw.prepare('UPDATE events SET revision = -1 WHERE stream_id = ? AND revision = ?').run('run-d', 0);
    } finally {
      raw.close();
    }
    const extents = await store.streamExtents(['run-a', 'run-b', 'run-c', 'run-d']);
    expect(Object.fromEntries(extents)).toEqual({
      'run-a': { count: 4, firstRevision: 0, lastRevision: 4 },
      'run-b': { count: 2, firstRevision: 1, lastRevision: 2 },
      'run-c': { count: 2, firstRevision: 0, lastRevision: 1 },
      'run-d': { count: 2, firstRevision: -1, lastRevision: 1 },
    });
    const holed = [...extents].filter(([, e]) => e.firstRevision !== 0 || e.count !== e.lastRevision + 1).map(([id]) => id);
    expect(holed).toEqual(['run-a', 'run-b', 'run-d']);
  });

  it('reads the (stream_id, revision) index alone, one search per stream, for a full batch and a short one', () => {
    for (const n of [1, EXTENT_BATCH_STREAMS]) {
      const plan = store.db.prepare(`EXPLAIN QUERY PLAN ${extentsQuery(n)}`).all(...Array.from({ length: n }, (_, i) => `s-${i}`)) as { detail: string }[];
      expect(plan.map((p) => p.detail)).toEqual([expect.stringMatching(/^SEARCH events USING COVERING INDEX \S+ \(stream_id=\?\)$/)]);
    }
  });
});
