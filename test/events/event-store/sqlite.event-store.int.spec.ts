import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import type { RecordedEvent } from '../../../src/events/event-store/event-store.port';
import { SqliteReadAhead } from '../../../src/events/event-store/sqlite-read-ahead';
import { FILE_CHECK_EVERY_MS, MAX_APPENDS_PER_COMMIT, SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import { UpcasterRegistry } from '../../../src/events/upcasting';
import { DurabilityError } from '../../../src/events/wal-sync';
import { StoreUnavailableError } from '../../../src/events/errors';
import { HealthRegistry } from '../../../src/shared/health';
import { openUnsyncedConnection } from '../../../src/shared/sqlite-side-connection';
import { tempDir } from '../../support/temp-dir';
import { waitFor } from '../../support/wait-for';
import { eventStoreContract } from './event-store.contract';

/** Ways the database file stops being the one the store opened. */
const FILE_CHANGES: Array<[string, (file: string) => void]> = [
  ['deleted', (file) => fs.rmSync(file)],
  [
    'replaced',
    (file) => {
      fs.writeFileSync(`${file}.other`, 'another file');
      fs.renameSync(`${file}.other`, file);
    },
  ],
];

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
  it('runs in WAL mode, commits with synchronous=NORMAL (the group sync makes them durable) and records its schema version', async () => {
    const dir = tempDir();
    const store = new SqliteEventStore({ file: join(dir.path, 'x', 'triad.db') });
    try {
      expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(store.db.pragma('synchronous', { simple: true })).toBe(1);
      expect(store.db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get()).toEqual({ v: 1 });
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('given more concurrent appends than one commit takes, then every one is written, in order, over several transactions', async () => {
    const dir = tempDir();
    const store = new SqliteEventStore({ file: join(dir.path, 'triad.db') });
    try {
      const n = MAX_APPENDS_PER_COMMIT * 2 + 3;
      const results = await Promise.all(Array.from({ length: n }, (_, i) => store.append(`run-${i % 7}`, [{ type: 'Noted', data: { i } }])));
      expect(results.map((r) => r.position)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      const all = await store.readAll();
      expect(all.map((e) => (e.data as { i: number }).i)).toEqual(Array.from({ length: n }, (_, i) => i));
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('given more appends queued than one commit takes, when the store closes, then every one is still written and answered', async () => {
    const dir = tempDir();
    const file = join(dir.path, 'triad.db');
    const store = new SqliteEventStore({ file });
    const n = MAX_APPENDS_PER_COMMIT + 10;
    const appends = Array.from({ length: n }, (_, i) => store.append('run-a', [{ type: 'Noted', data: { i } }]));
    await store.close();
    await expect(Promise.all(appends)).resolves.toHaveLength(n);
    const reopened = new SqliteEventStore({ file });
    try {
      expect(await reopened.readStream('run-a')).toHaveLength(n);
    } finally {
      await reopened.close();
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

  it('given the database path is a symlink, then the store syncs the WAL SQLite writes, next to the real file', async () => {
    const dir = tempDir();
    fs.mkdirSync(join(dir.path, 'real'));
    const real = join(dir.path, 'real', 'triad.db');
    await new SqliteEventStore({ file: real }).close();
    const link = join(dir.path, 'link.db');
    fs.symlinkSync(real, link);
    const store = new SqliteEventStore({ file: link });
    try {
      await expect(store.append('run-a', [{ type: 'Noted', data: {} }])).resolves.toMatchObject({ position: 1 });
      expect(store.syncStats().syncs).toBe(1);
      expect(fs.existsSync(`${real}-wal`)).toBe(true);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('the connection for run checkpoints commits without fsync but never copies the WAL unsynced', async () => {
    const dir = tempDir();
    const store = new SqliteEventStore({ file: join(dir.path, 'triad.db') });
    const side = openUnsyncedConnection(store.db)!;
    try {
      expect(side.pragma('synchronous', { simple: true })).toBe(1);
      expect(side.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    } finally {
      side.close();
      await store.close();
      dir.remove();
    }
  });

  it('given a commit the file refuses (read-only), then the append is an outage told to the health sink, until a commit succeeds', async () => {
    const dir = tempDir();
    const health = new HealthRegistry();
    const store = new SqliteEventStore({ file: join(dir.path, 'triad.db'), health });
    try {
      store.db.pragma('query_only = 1');
      await expect(store.append('run-a', [{ type: 'Noted', data: { n: 1 } }])).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(health.assess()).toEqual({ ok: false, reasons: ['the event store is not reachable'] });
      store.db.pragma('query_only = 0');
      await store.append('run-a', [{ type: 'Noted', data: { n: 1 } }]);
      expect(health.assess().ok).toBe(true);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it.each(FILE_CHANGES)('given the database file %s while open, then writes and the head are refused with why, and nothing more is written', async (how, change) => {
    const dir = tempDir();
    const file = join(dir.path, 'triad.db');
    const store = new SqliteEventStore({ file });
    try {
      await store.append('run-a', [{ type: 'Noted', data: { n: 1 } }]);
      change(file);
      await expect(store.append('run-b', [{ type: 'Noted', data: { n: 2 } }])).rejects.toThrow(new RegExp(`was ${how} while triad had it open.*restart triad`));
      await expect(store.headPosition()).rejects.toBeInstanceOf(DurabilityError);
      expect(store.db.prepare('SELECT stream_id FROM events').pluck().all()).toEqual(['run-a']);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it.each(FILE_CHANGES)('given the database file %s while open and no write since, then the head is refused with why within FILE_CHECK_EVERY_MS', async (how, change) => {
    const dir = tempDir();
    const file = join(dir.path, 'triad.db');
    const store = new SqliteEventStore({ file });
    try {
      await store.append('run-a', [{ type: 'Noted', data: { n: 1 } }]);
      await expect(store.headPosition()).resolves.toBe(1);
      change(file);
      const refused = await waitFor('the head refused', () => store.headPosition().then(() => undefined, (err: unknown) => err), 10 * FILE_CHECK_EVERY_MS, 20);
      expect(refused).toBeInstanceOf(DurabilityError);
      expect(String(refused)).toMatch(new RegExp(`was ${how} while triad had it open.*restart triad`));
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('given many head reads in one window, then the file is looked at once in it', async () => {
    const dir = tempDir();
    const store = new SqliteEventStore({ file: join(dir.path, 'triad.db') });
    const stat = jest.spyOn(fs, 'statSync');
    try {
      await store.headPosition();
      const before = stat.mock.calls.length;
      for (let i = 0; i < 100; i++) await store.headPosition();
      // At most one more look, should the window have closed during the loop.
      expect(stat.mock.calls.length - before).toBeLessThanOrEqual(1);
      expect(FILE_CHECK_EVERY_MS).toBeLessThanOrEqual(1000);
    } finally {
      stat.mockRestore();
      await store.close();
      dir.remove();
    }
  });

  describe('acknowledged only once durable', () => {
    // fdatasync held until the test completes it; whatever a test leaves held is completed after it.
    let held: Array<{ fd: number; done: (err: NodeJS.ErrnoException | null) => void; settled: boolean }>;
    let spy: jest.SpyInstance;
    let dir: ReturnType<typeof tempDir>;
    let file: string;
    let store: SqliteEventStore;
    beforeEach(() => {
      held = [];
      spy = jest.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, done: (err: NodeJS.ErrnoException | null) => void) => {
        const entry = {
          fd,
          settled: false,
          done: (err: NodeJS.ErrnoException | null) => {
            entry.settled = true;
            done(err);
          },
        };
        held.push(entry);
      }) as typeof fs.fdatasync);
      dir = tempDir();
      file = join(dir.path, 'triad.db');
      store = new SqliteEventStore({ file });
    });
    afterEach(async () => {
      const closing = store.close();
      // Completing a sync may start the next one: complete until none is left.
      for (let i = 0; i < 100 && held.some((h) => !h.settled); i++) {
        for (const h of held) if (!h.settled) h.done(null);
        await new Promise((r) => setImmediate(r));
      }
      await closing;
      spy.mockRestore();
      dir.remove();
    });

    const ticks = async (n = 5) => {
      for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
    };

    it('given an append committed, when its fdatasync of the WAL has not completed, then it is neither answered nor notified', async () => {
      let answered = false;
      const append = store.append('run-a', [{ type: 'Noted', data: { n: 1 } }]).then((r) => ((answered = true), r));
      const woken = store.waitForEvents(0, 10_000).then(() => 'woken');
      await ticks();
      expect(held).toHaveLength(1);
      expect(fs.fstatSync(held[0].fd).ino).toBe(fs.statSync(`${file}-wal`).ino);
      expect(answered).toBe(false);
      const notified = await Promise.race([woken, new Promise((r) => setTimeout(() => r('not yet'), 50))]);
      expect(notified).toBe('not yet');
      held[0].done(null);
      await expect(append).resolves.toEqual({ nextExpectedRevision: 0, position: 1 });
      await expect(woken).resolves.toBe('woken');
      expect((await store.readAll()).map((e) => e.type)).toEqual(['Noted']);
    });

    it('given appends arriving while a sync runs, then they share the next sync', async () => {
      const first = store.append('run-a', [{ type: 'Noted', data: { n: 1 } }]);
      await ticks();
      const later = [store.append('run-b', [{ type: 'Noted', data: { n: 2 } }])];
      await ticks();
      later.push(store.append('run-c', [{ type: 'Noted', data: { n: 3 } }]));
      await ticks();
      expect(held).toHaveLength(1);
      let laterAnswered = 0;
      later.forEach((p) => p.then(() => laterAnswered++));
      held[0].done(null);
      await first;
      await ticks();
      // Committed after the first sync had started: they wait for the second one.
      expect(laterAnswered).toBe(0);
      expect(held).toHaveLength(2);
      held[1].done(null);
      expect((await Promise.all(later)).map((r) => r.position)).toEqual([2, 3]);
    });

    it('given the fdatasync fails, then the append fails and the store refuses later appends', async () => {
      const append = store.append('run-a', [{ type: 'Noted', data: { n: 1 } }]);
      await ticks();
      held[0].done(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
      await expect(append).rejects.toBeInstanceOf(DurabilityError);
      await expect(store.append('run-b', [{ type: 'Noted', data: { n: 2 } }])).rejects.toThrow(/restart triad/);
      expect(held).toHaveLength(1);
    });

    it('given appends queued before a sync fails, then they are refused without being written', async () => {
      const first = store.append('run-a', [{ type: 'Noted', data: { n: 1 } }]);
      await ticks();
      // Queued (its flush is scheduled) while the first sync is still running; then that sync fails.
      const queued = store.append('run-b', [{ type: 'Noted', data: { n: 2 } }]);
      held[0].done(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
      await expect(first).rejects.toBeInstanceOf(DurabilityError);
      await expect(queued).rejects.toBeInstanceOf(DurabilityError);
      expect(store.db.prepare('SELECT stream_id FROM events').pluck().all()).toEqual(['run-a']);
      await expect(store.headPosition()).rejects.toThrow(/restart triad/);
    });

    it('given an append whose sync is in flight, when the store closes, then close waits for it and the append is answered', async () => {
      const append = store.append('run-a', [{ type: 'Noted', data: { n: 1 } }]);
      await ticks();
      let closed = false;
      const closing = store.close().then(() => (closed = true));
      await ticks();
      expect(closed).toBe(false);
      held[0].done(null);
      await expect(append).resolves.toEqual({ nextExpectedRevision: 0, position: 1 });
      await closing;
      await expect(store.append('run-a', [{ type: 'Noted', data: { n: 2 } }])).rejects.toThrow();
    });

    it('given the WAL truncated by a checkpoint, then the next append syncs the same WAL file', async () => {
      const first = store.append('run-a', [{ type: 'Noted', data: { n: 1 } }]);
      await ticks();
      held[0].done(null);
      await first;
      store.db.pragma('wal_checkpoint(TRUNCATE)');
      expect(fs.statSync(`${file}-wal`).size).toBe(0);
      const second = store.append('run-a', [{ type: 'Noted', data: { n: 2 } }]);
      await ticks();
      expect(held).toHaveLength(2);
      expect(fs.fstatSync(held[1].fd).ino).toBe(fs.statSync(`${file}-wal`).ino);
      expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(0);
      held[1].done(null);
      await second;
    });

    it('given a conflicting append in the batch, then it is refused at once and the others wait for the sync', async () => {
      let okAnswered = false;
      const ok = store.append('run-a', [{ type: 'Noted', data: { n: 1 } }], { expectedRevision: 'no_stream' }).then((r) => ((okAnswered = true), r));
      const conflict = store.append('run-b', [{ type: 'Noted', data: { n: 2 } }], { expectedRevision: 3 });
      await expect(conflict).rejects.toThrow(/wrong expected revision/);
      await ticks();
      expect(okAnswered).toBe(false);
      expect(held).toHaveLength(1);
      held[0].done(null);
      await expect(ok).resolves.toEqual({ nextExpectedRevision: 0, position: 1 });
    });
  });

  describe('reads', () => {
    let dir: ReturnType<typeof tempDir>;
    let store: SqliteEventStore;
    beforeEach(() => {
      dir = tempDir();
      store = new SqliteEventStore({ file: join(dir.path, 'triad.db') });
    });
    afterEach(async () => {
      await store.close();
      dir.remove();
    });

    it('given 300 events on two streams, when reading them in both directions, with starts and limits, then every event comes once, in order', async () => {
      for (let i = 0; i < 300; i += 30) {
        await store.append('run-a', Array.from({ length: 20 }, (_, k) => ({ type: k % 2 ? 'Odd' : 'Even', data: { i: i + k } })));
        await store.append('run-b', Array.from({ length: 10 }, (_, k) => ({ type: 'Other', data: { i: i + 20 + k } })));
      }
      const a = await store.readStream('run-a');
      expect(a.map((e) => e.revision)).toEqual(Array.from({ length: 200 }, (_, i) => i));
      expect((await store.readStream('run-a', { fromRevision: 127, maxCount: 3 })).map((e) => e.revision)).toEqual([127, 128, 129]);
      const back = await store.readStream('run-a', { direction: 'backwards', fromRevision: 199, maxCount: 150 });
      expect(back.map((e) => e.revision)).toEqual(Array.from({ length: 150 }, (_, i) => 199 - i));
      expect((await store.readStream('run-a', { direction: 'backwards' })).map((e) => e.revision)).toEqual(Array.from({ length: 200 }, (_, i) => 199 - i));
      const all = await store.readAll();
      expect(all.map((e) => e.position)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
      expect((await store.readAll({ after: 50, maxCount: 150 })).map((e) => e.position)).toEqual(Array.from({ length: 150 }, (_, i) => 51 + i));
      const odd = await store.readAll({ filter: { types: ['Odd'] } });
      expect(odd).toHaveLength(100);
      expect(odd.every((e) => e.type === 'Odd' && e.streamId === 'run-a')).toBe(true);
      expect((await store.readAll({ filter: { streamPrefixes: ['run-b'] } })).map((e) => (e.data as { i: number }).i)).toEqual(
        all.filter((e) => e.streamId === 'run-b').map((e) => (e.data as { i: number }).i),
      );
      // Exactly the stored JSON.
      const rows = store.db.prepare('SELECT data FROM events ORDER BY position').pluck().all() as string[];
      expect(all.map((e) => e.data)).toEqual(rows.map((t) => JSON.parse(t)));
    });

    it('given stream ids and types with quotes, backslashes, control characters and non-ASCII text, then they read back exactly', async () => {
      const stream = 'run-"quoted" \\back\\slash é 😀';
      const type = 'Type "with" \\ and \t tab\u0001';
      await store.append(stream, [{ type, data: { text: 'line\nbreak "q" \\ é 😀 \u2028' }, metadata: { correlationId: 'c', actor: 'user:"x"' } }]);
      const [e] = await store.readStream(stream);
      expect(e.streamId).toBe(stream);
      expect(e.type).toBe(type);
      expect(e.data).toEqual({ text: 'line\nbreak "q" \\ é 😀 \u2028' });
      expect(e.metadata.actor).toBe('user:"x"');
      expect((await store.readAll())[0]).toEqual(e);
    });

    it('given a stored row whose JSON is broken, then the read fails with the parse error', async () => {
      await store.append('run-a', [{ type: 'Ok', data: { n: 1 } }, { type: 'Broken', data: { n: 2 } }]);
      store.db.prepare(`UPDATE events SET data = '{"n": 2' WHERE type = 'Broken'`).run();
      await expect(store.readStream('run-a')).rejects.toThrow(SyntaxError);
      await expect(store.readAll()).rejects.toThrow(SyntaxError);
      expect(await store.readStream('run-a', { maxCount: 1 })).toHaveLength(1);
    });
  });

  describe('read-ahead thread for long stream reads', () => {
    let dir: ReturnType<typeof tempDir>;
    let file: string;
    let store: SqliteEventStore;
    const pagesOf = async (s: SqliteEventStore, streamId: string, pageSize: number) => {
      const pages: RecordedEvent[][] = [];
      for await (const page of s.readStreamPages(streamId, { pageSize })) pages.push(page);
      return pages;
    };
    beforeEach(() => {
      dir = tempDir();
      file = join(dir.path, 'triad.db');
      store = new SqliteEventStore({ file });
    });
    afterEach(async () => {
      await store.close();
      dir.remove();
    });

    it('given a stream of many pages with awkward text and changing metadata, when read in pages through the thread, then the events are exactly those of readStream', async () => {
      const stream = 'run-"q" \\ é 😀';
      for (let b = 0; b < 10; b++) {
        await store.append(
          stream,
          Array.from({ length: 50 }, (_, k) => ({
            type: k % 3 ? 'Plain' : 'Type "odd" \t\u0001',
            data: { i: b * 50 + k, text: 'line\nbreak "q" \\ é 😀 \u2028', nested: [{ a: null, b: true, n: -1.5e-7 }] },
            // Runs of one metadata text, and texts that come back after others.
            metadata: { correlationId: `c-${Math.floor(k / 7) % 3}`, actor: k % 2 ? 'user:"x"' : 'system', causationId: null },
          })),
        );
        await store.append('run-other', [{ type: 'Other', data: { b } }]);
      }
      expect(await store.startReadAhead()).toBe(true);
      const pages = await pagesOf(store, stream, 64);
      expect(store.readAheadStats().pages).toBeGreaterThan(0);
      expect(pages.map((p) => p.length)).toEqual([...Array.from({ length: 7 }, () => 64), 52]);
      expect(pages.flat()).toEqual(await store.readStream(stream));
    });

    it('given upcasters, then pages read by the thread are upcast like any read', async () => {
      const upcasters = new UpcasterRegistry().register({ type: 'Old', fromVersion: 1, upcast: (d) => ({ type: 'New', data: { ...(d as object), upcast: true } }) });
      const s = new SqliteEventStore({ file, upcasters });
      try {
        await s.append('run-u', Array.from({ length: 300 }, (_, i) => ({ type: i % 2 ? 'Old' : 'Kept', data: { i } })));
        expect(await s.startReadAhead()).toBe(true);
        const events = (await pagesOf(s, 'run-u', 40)).flat();
        expect(s.readAheadStats().pages).toBeGreaterThan(0);
        expect(events).toEqual(await s.readStream('run-u'));
        expect(events[1]).toMatchObject({ type: 'New', data: { i: 1, upcast: true }, metadata: { schemaVersion: 2 } });
      } finally {
        await s.close();
      }
    });

    it('given a broken row on a page the thread reads, then the read fails with the parse error', async () => {
      await store.append('run-a', Array.from({ length: 100 }, (_, i) => ({ type: 'Ok', data: { i } })));
      store.db.prepare(`UPDATE events SET data = '{"i": 90' WHERE revision = 90`).run();
      expect(await store.startReadAhead()).toBe(true);
      await expect(pagesOf(store, 'run-a', 10)).rejects.toThrow(SyntaxError);
      expect(store.readAheadStats().pages).toBeGreaterThan(0);
    });

    it('given stored ids and times with quotes, backslashes and escape-like text (written around the store), then the thread reads them exactly', async () => {
      await store.append('run-a', Array.from({ length: 100 }, (_, i) => ({ type: 'Ok', data: { i } })));
      store.db.prepare(`UPDATE events SET id = 'odd"id\\' WHERE revision = 55`).run();
      // Text that JSON would read as an escape if it were pasted in unquoted.
      store.db.prepare(`UPDATE events SET id = 'x\\u0041', recorded_at = 'when "now"' WHERE revision = 77`).run();
      expect(await store.startReadAhead()).toBe(true);
      const events = (await pagesOf(store, 'run-a', 10)).flat();
      expect(events).toEqual(await store.readStream('run-a'));
      expect(events[55].id).toBe('odd"id\\');
      expect(events[77]).toMatchObject({ id: 'x\\u0041', recordedAt: 'when "now"' });
      // Pages 2-10 and the empty one after them, all from the thread.
      expect(store.readAheadStats().pages).toBe(10);
    });

    it.each([
      ['data holding two values', `UPDATE events SET data = '{"i": 35}, {"j": 1}' WHERE revision = 35`],
      ['data that closes its row and opens another', `UPDATE events SET data = '{"i": 35}, 0], ["forged", 36, 37, "Ok", "t", {"i": 36}' WHERE revision = 35`],
      ['metadata holding two values', `UPDATE events SET metadata = '{"a": 1}, {"b": 2}' WHERE revision = 35`],
    ])('given a stored row with %s, which the page text would parse around, then the thread page is not taken and the read fails like readStream', async (_, update) => {
      await store.append('run-a', Array.from({ length: 100 }, (_, i) => ({ type: 'Ok', data: { i } })));
      store.db.prepare(update).run();
      await expect(store.readStream('run-a')).rejects.toThrow(SyntaxError);
      expect(await store.startReadAhead()).toBe(true);
      const seen: number[] = [];
      await expect(
        (async () => {
          for await (const page of store.readStreamPages('run-a', { pageSize: 10 })) seen.push(...page.map((e) => e.revision));
        })(),
      ).rejects.toThrow(SyntaxError);
      // Pages 2 and 3 came from the thread; page 4 (revisions 30-39) was read again here and failed.
      expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => i));
      expect(store.readAheadStats().pages).toBe(2);
    });

    it('given the thread dies in the middle of a read, then the pages it owed are read on the store connection and nothing is lost', async () => {
      await store.append('run-a', Array.from({ length: 200 }, (_, i) => ({ type: 'Ok', data: { i } })));
      expect(await store.startReadAhead()).toBe(true);
      const worker = (store as unknown as { readAhead: { worker: Worker } }).readAhead.worker;
      const seen: number[] = [];
      for await (const page of store.readStreamPages('run-a', { pageSize: 20 })) {
        seen.push(...page.map((e) => e.revision));
        if (seen.length === 40) await worker.terminate();
      }
      expect(seen).toEqual(Array.from({ length: 200 }, (_, i) => i));
    });

    it('given a read of fewer than four pages, then it stays on the store connection; from four pages on, the thread serves all but the first', async () => {
      await store.append('run-a', Array.from({ length: 120 }, (_, i) => ({ type: 'Ok', data: { i } })));
      expect(await store.startReadAhead()).toBe(true);
      expect((await pagesOf(store, 'run-a', 40)).flat()).toHaveLength(120);
      expect(store.readAheadStats().pages).toBe(0);
      expect((await pagesOf(store, 'run-a', 30)).flat()).toEqual(await store.readStream('run-a'));
      // Pages 2 to 4, and the empty page after them that ends the read.
      expect(store.readAheadStats().pages).toBe(4);
    });

    it('given readAhead: false, then long reads stay on the store connection', async () => {
      const s = new SqliteEventStore({ file, readAhead: false });
      try {
        await s.append('run-a', Array.from({ length: 300 }, (_, i) => ({ type: 'Ok', data: { i } })));
        expect(await s.startReadAhead()).toBe(false);
        expect((await pagesOf(s, 'run-a', 20)).flat()).toEqual(await s.readStream('run-a'));
        expect(s.readAheadStats().pages).toBe(0);
      } finally {
        await s.close();
      }
    });

    it('given the thread cannot open the store, then it reports so and reads stay on the store connection', async () => {
      const broken = new SqliteReadAhead(file, join(dir.path, 'no-such-driver.js'));
      expect(await broken.whenStarted()).toBe(false);
      await expect(broken.read('run-a', 0, 10)).rejects.toThrow('not available');
      await broken.close();
      const missing = new SqliteReadAhead(join(dir.path, 'missing.db'), require.resolve('better-sqlite3'));
      expect(await missing.whenStarted()).toBe(false);
      await missing.close();
      // A thread that dies before it can say anything.
      const crashing = join(dir.path, 'crashing-driver.js');
      fs.writeFileSync(crashing, 'process.exit(3);\n');
      const crashed = new SqliteReadAhead(file, crashing);
      expect(await crashed.whenStarted()).toBe(false);
      await crashed.close();
    });

    it('given a process reading a long stream without closing the store, then it waits for the thread pages it needs and then exits on its own', async () => {
      await store.append('run-a', Array.from({ length: 5000 }, (_, i) => ({ type: 'Ok', data: { i, pad: 'p'.repeat(100) } })));
      const script = `
        const { SqliteEventStore } = require(${JSON.stringify(join(__dirname, '..', '..', '..', 'dist', 'events', 'event-store', 'sqlite.event-store.js'))});
        (async () => {
          const store = new SqliteEventStore({ file: ${JSON.stringify(file)} });
          await store.startReadAhead();
          let n = 0;
          for await (const page of store.readStreamPages('run-a', { pageSize: 500 })) n += page.length;
          console.log(JSON.stringify({ n, ahead: store.readAheadStats().pages }));
        })();`;
      const out = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 });
      const result = JSON.parse(out.trim()) as { n: number; ahead: number };
      expect(result.n).toBe(5000);
      expect(result.ahead).toBeGreaterThan(0);
    });

    it('given a read left waiting by its caller, when the store closes, then the pages the thread owed it do not end the process', async () => {
      await store.append('run-a', Array.from({ length: 5000 }, (_, i) => ({ type: 'Ok', data: { i } })));
      const script = `
        const { SqliteEventStore } = require(${JSON.stringify(join(__dirname, '..', '..', '..', 'dist', 'events', 'event-store', 'sqlite.event-store.js'))});
        (async () => {
          const store = new SqliteEventStore({ file: ${JSON.stringify(file)} });
          await store.startReadAhead();
          const pages = store.readStreamPages('run-a', { pageSize: 500 });
          const first = await pages.next();
          // The caller is busy elsewhere (a slow client, say) while the daemon shuts down.
          await store.close();
          await new Promise((resolve) => setTimeout(resolve, 200));
          console.log(JSON.stringify({ first: first.value.length }));
        })();`;
      const out = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 });
      expect(JSON.parse(out.trim())).toEqual({ first: 500 });
    });
  });
});

