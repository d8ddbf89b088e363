import { randomUUID } from 'node:crypto';
import type { EventStore, NewEvent, RecordedEvent } from '../../../src/events/event-store/event-store.port';
import { EventIdConflictError, EventTooLargeError, InvalidAppendError, RecordedPositionError, RecordedPositionsNotKeptError, WrongExpectedRevisionError } from '../../../src/events/errors';
import { UpcasterRegistry } from '../../../src/events/upcasting';
import { EXTENT_BATCH_STREAMS } from '../../../src/events/read-helpers';
import { waitFor } from '../../support/wait-for';

/**
 * The event store contract: every adapter runs this same suite.
 *
 * `open` gives a store over the test's database, empty when the test starts (the in-memory adapter gives
 * a new store each time); `reopen` (durable adapters only) opens a second
 * store over the same database, as a restarted process would.
 */
export interface ContractHarness {
  open(options?: { upcasters?: UpcasterRegistry; maxEventBytes?: number }): Promise<EventStore>;
  reopen?(options?: { upcasters?: UpcasterRegistry }): Promise<EventStore>;
  cleanup(): Promise<void>;
}

export interface ContractOptions {
  /** Events written by the many-writers test; larger for stores with real concurrency. */
  manyWritersEvents?: number;
  concurrentAppenders?: number;
  /**
   * Whether positions are dense (1, 2, 3 … with no gaps: the SQL and in-memory stores). EventStoreDB's
   * are log offsets: strictly increasing in commit order, never skipping an event, but not dense.
   */
  densePositions?: boolean;
  /** Whether an id reused in another stream is refused (EventStoreDB keeps no index by id). */
  idsUniqueAcrossStreams?: boolean;
  /**
   * What `appendRecorded` keeps of recorded positions: `sparse` (default: the SQL stores) any
   * increasing positions after the head, `dense` (in-memory) only head + 1, `kept` (EventStoreDB,
   * which assigns its own places in its log) any increasing positions, kept with the events, and
   * ordinary appends numbered above the highest (not necessarily next to it), `none` nothing: every
   * batch is refused.
   */
  recordedPositions?: 'sparse' | 'dense' | 'kept' | 'none';
  /**
   * Streams asked of `streamExtents` at once in the many-streams test. By default two full batches
   * of EXTENT_BATCH_STREAMS and a partial one, for the stores that read extents in batches; a store
   * that asks stream by stream a few at a time (EventStoreDB) needs only more than it asks at once.
   */
  extentStreams?: number;
}

/** Events as another store recorded them: two streams interleaved, at positions 1..n, in 2020. */
const recorded = (n: number): RecordedEvent[] => {
  const revisions = new Map<string, number>();
  return Array.from({ length: n }, (_, i) => {
    const streamId = i % 3 === 2 ? 'apikeys' : 'run-r1';
    const revision = revisions.get(streamId) ?? 0;
    revisions.set(streamId, revision + 1);
    return {
      id: randomUUID(),
      type: `T${i}`,
      streamId,
      revision,
      position: i + 1,
      data: { i, text: 'é 𝄞', nested: { b: [1, 2], a: null } },
      metadata: { runId: 'r1', correlationId: `c${i}`, causationId: null, actor: 'user:ann', schemaVersion: 2, extra: 'kept' },
      recordedAt: new Date(Date.UTC(2020, 0, 2, 3, 4, 5, i)).toISOString(),
    };
  });
};

const ev = (type: string, data: unknown = {}, extra: Partial<NewEvent> = {}): NewEvent => ({ id: randomUUID(), type, data, ...extra });

export function eventStoreContract(name: string, makeHarness: () => ContractHarness, options: ContractOptions = {}): void {
  describe(`event store contract: ${name}`, () => {
    let harness: ContractHarness;
    let store: EventStore;
    const opened: EventStore[] = [];

    const open = async (o?: Parameters<ContractHarness['open']>[0]) => {
      const s = await harness.open(o);
      opened.push(s);
      return s;
    };

    beforeEach(async () => {
      harness = makeHarness();
      store = await open();
    });

    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
      await harness.cleanup();
    });

    describe('append with expected revision', () => {
      it('given no stream, when appending with no_stream, then revisions start at 0', async () => {
        const r = await store.append('run-1', [ev('A'), ev('B')], { expectedRevision: 'no_stream' });
        expect(r.nextExpectedRevision).toBe(1);
        expect(r.position).toBeGreaterThanOrEqual(2);
        const read = await store.readStream('run-1');
        expect(read.map((e) => [e.type, e.revision])).toEqual([
          ['A', 0],
          ['B', 1],
        ]);
      });

      it('given a stream, when appending with no_stream, then a typed conflict carries expected and actual', async () => {
        await store.append('run-1', [ev('A')]);
        const err = await store.append('run-1', [ev('B')], { expectedRevision: 'no_stream' }).catch((e) => e);
        expect(err).toBeInstanceOf(WrongExpectedRevisionError);
        expect(err).toMatchObject({ streamId: 'run-1', expected: 'no_stream', actual: 0 });
      });

      it('given no stream, when appending with stream_exists, then conflict with actual null', async () => {
        const err = await store.append('run-1', [ev('A')], { expectedRevision: 'stream_exists' }).catch((e) => e);
        expect(err).toBeInstanceOf(WrongExpectedRevisionError);
        expect(err).toMatchObject({ expected: 'stream_exists', actual: null });
        expect(await store.streamRevision('run-1')).toBeNull();
      });

      it('given a stream, stream_exists and the exact revision succeed; a stale revision conflicts', async () => {
        await store.append('run-1', [ev('A')]);
        await expect(store.append('run-1', [ev('B')], { expectedRevision: 'stream_exists' })).resolves.toMatchObject({ nextExpectedRevision: 1 });
        await expect(store.append('run-1', [ev('C')], { expectedRevision: 1 })).resolves.toMatchObject({ nextExpectedRevision: 2 });
        const err = await store.append('run-1', [ev('D')], { expectedRevision: 1 }).catch((e) => e);
        expect(err).toBeInstanceOf(WrongExpectedRevisionError);
        expect(err).toMatchObject({ expected: 1, actual: 2 });
        const err2 = await store.append('run-1', [ev('D')], { expectedRevision: 7 }).catch((e) => e);
        expect(err2).toMatchObject({ expected: 7, actual: 2 });
        expect(await store.streamRevision('run-1')).toBe(2);
      });

      it('given an exact revision on a missing stream, then conflict', async () => {
        await expect(store.append('run-1', [ev('A')], { expectedRevision: 0 })).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      });

      it('any appends whatever the stream state', async () => {
        await store.append('run-1', [ev('A')], { expectedRevision: 'any' });
        await store.append('run-1', [ev('B')], { expectedRevision: 'any' });
        expect(await store.streamRevision('run-1')).toBe(1);
      });

      it('positions grow across streams in append order and the envelope is complete', async () => {
        const a = await store.append('s-a', [ev('A', { n: 1 }, { metadata: { runId: 'r1', actor: 'user:ann', correlationId: 'c1' } })]);
        const b = await store.append('s-b', [ev('B')]);
        if (options.densePositions === false) expect(b.position).toBeGreaterThan(a.position);
        else expect(b.position).toBe(a.position + 1);
        const [e] = await store.readStream('s-a');
        expect(e).toEqual({
          id: expect.any(String),
          type: 'A',
          streamId: 's-a',
          revision: 0,
          position: a.position,
          data: { n: 1 },
          metadata: { runId: 'r1', actor: 'user:ann', correlationId: 'c1', causationId: null, schemaVersion: 1 },
          recordedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        });
        expect(await store.headPosition()).toBe(b.position);
      });
    });

    describe('concurrency', () => {
      it('concurrent appenders to one stream: exactly one wins each revision and no update is lost', async () => {
        const appenders = options.concurrentAppenders ?? 8;
        const perAppender = 5;
        let conflicts = 0;
        await Promise.all(
          Array.from({ length: appenders }, async (_, a) => {
            for (let i = 0; i < perAppender; i++) {
              for (;;) {
                const revision = await store.streamRevision('counter');
                try {
                  await store.append('counter', [ev('Inc', { a, i })], { expectedRevision: revision ?? 'no_stream' });
                  break;
                } catch (err) {
                  if (!(err instanceof WrongExpectedRevisionError)) throw err;
                  conflicts++;
                }
              }
            }
          }),
        );
        const events = await store.readStream('counter');
        expect(events.map((e) => e.revision)).toEqual(Array.from({ length: appenders * perAppender }, (_, i) => i));
        const seen = new Set(events.map((e) => JSON.stringify(e.data)));
        expect(seen.size).toBe(appenders * perAppender);
        // Every appender read before writing, so concurrent ones must have collided at least once
        // unless the adapter serialised them; either way nothing was lost or duplicated.
        expect(conflicts).toBeGreaterThanOrEqual(0);
      });

      it('two appends racing on the same expected revision: one succeeds, one conflicts', async () => {
        await store.append('race', [ev('A')]);
        const results = await Promise.allSettled([
          store.append('race', [ev('B')], { expectedRevision: 0 }),
          store.append('race', [ev('C')], { expectedRevision: 0 }),
        ]);
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
        expect(rejected.reason).toBeInstanceOf(WrongExpectedRevisionError);
        expect(await store.streamRevision('race')).toBe(1);
      });

      it.each([
        ['', false],
        [', one reusing a stored id with other content', true],
      ])('given appends made at once to many streams, some conflicting or replayed%s, then each is judged as if alone, in the order made', async (_, withThief) => {
        const stored = [ev('S1'), ev('S2')];
        const storedResult = await store.append('held', stored, { expectedRevision: 'no_stream' });
        await store.append('busy', [ev('B0')]);
        const reused = randomUUID();
        await store.append('owner', [{ id: reused, type: 'R', data: { v: 1 } }]);
        const results = await Promise.allSettled([
          store.append('busy', [ev('B1')], { expectedRevision: 0 }), // appended: busy at 1
          store.append('busy', [ev('B2')], { expectedRevision: 0 }), // conflict: busy is at 1 now
          store.append('fresh', [ev('F0'), ev('F1')], { expectedRevision: 'no_stream' }),
          store.append('held', stored, { expectedRevision: 'no_stream' }), // replay of the stored batch
          // An id stored with other content (in the same stream where ids are unique per stream only).
          // Without it, a plain append in its place.
          withThief ? store.append(options.idsUniqueAcrossStreams === false ? 'owner' : 'thief', [{ id: reused, type: 'R', data: { v: 2 } }]) : store.append('thief', [ev('T')]),
          store.append('busy', [ev('B3')], { expectedRevision: 1 }), // after the first: appended
          store.append('fresh', [ev('F2')], { expectedRevision: 1 }),
        ]);
        const value = (i: number) => (results[i] as PromiseFulfilledResult<{ nextExpectedRevision: number; position: number }>).value;
        const reason = (i: number) => (results[i] as PromiseRejectedResult).reason as unknown;
        expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', withThief ? 'rejected' : 'fulfilled', 'fulfilled', 'fulfilled']);
        expect(value(0).nextExpectedRevision).toBe(1);
        expect(reason(1)).toBeInstanceOf(WrongExpectedRevisionError);
        expect(value(2).nextExpectedRevision).toBe(1);
        expect(value(3)).toEqual(storedResult);
        if (withThief) expect(reason(4)).toBeInstanceOf(EventIdConflictError);
        expect(value(5).nextExpectedRevision).toBe(2);
        expect(value(6).nextExpectedRevision).toBe(2);
        expect((await store.readStream('busy')).map((e) => e.type)).toEqual(['B0', 'B1', 'B3']);
        expect((await store.readStream('fresh')).map((e) => e.type)).toEqual(['F0', 'F1', 'F2']);
        expect(await store.readStream('held')).toHaveLength(2);
        expect(await store.streamRevision('thief')).toBe(withThief ? null : 0);
        expect(await store.streamRevision('owner')).toBe(0);
        // Positions follow the order the appends were made in (with no gaps where they are dense).
        const all = await store.readAll();
        if (options.densePositions !== false) expect(all.map((e) => e.position)).toEqual(all.map((_, i) => all[0].position + i));
        expect(value(0).position).toBeLessThan(value(2).position);
        expect(value(2).position).toBeLessThan(value(5).position);
        expect(value(5).position).toBeLessThan(value(6).position);
      });

      it('many writers on many streams while a subscriber follows all: each event once, in order, none skipped', async () => {
        const total = options.manyWritersEvents ?? 2000;
        const writers = 8;
        const streams = 24;
        const perWriter = Math.ceil(total / writers);
        const written = new Set<string>();
        const sub = store.subscribe({ batchSize: 64 });
        const seen: RecordedEvent[] = [];
        const reader = (async () => {
          for await (const e of sub) {
            seen.push(e);
          }
        })();
        await Promise.all(
          Array.from({ length: writers }, async (_, w) => {
            for (let i = 0; i < perWriter; i++) {
              // Every seventh append is a batch of two, so batches interleave with single events.
              const batch = i % 7 === 0 ? [ev('W', { w, i }), ev('W', { w, i, second: true })] : [ev('W', { w, i })];
              await store.append(`stream-${(w * 31 + i) % streams}`, batch);
              for (const e of batch) written.add(e.id!);
            }
          }),
        );
        const expected = written.size;
        let deadline: NodeJS.Timeout | undefined;
        await Promise.race([
          (async () => {
            while (seen.length < expected) await new Promise((r) => setTimeout(r, 20));
          })(),
          new Promise((_, reject) => {
            deadline = setTimeout(() => reject(new Error(`subscriber saw ${seen.length} of ${expected}`)), 20000);
          }),
        ]).finally(() => clearTimeout(deadline));
        sub.close();
        await reader.catch(() => undefined);
        const ids = seen.map((e) => e.id);
        expect(new Set(ids).size).toBe(ids.length);
        expect(new Set(ids)).toEqual(written);
        for (let i = 1; i < seen.length; i++) expect(seen[i].position).toBeGreaterThan(seen[i - 1].position);
        // Per stream, the subscriber saw revisions 0, 1, 2... with none missing.
        const nextRevision = new Map<string, number>();
        for (const e of seen) {
          expect(e.revision).toBe(nextRevision.get(e.streamId) ?? 0);
          nextRevision.set(e.streamId, e.revision + 1);
        }
        // The global read agrees with what the subscriber saw.
        const all = await store.readAll();
        expect(all.map((e) => e.id)).toEqual(ids);
      });

      it('many subscribers of one process, each with its filter, while this and another process write: each sees exactly what a filtered read returns', async () => {
        const other = harness.reopen ? await harness.reopen() : store;
        if (harness.reopen) opened.push(other);
        await store.append('run-early', [ev('RunLaunched')]);
        const filters = [undefined, { streamPrefixes: ['run-'] }, { types: ['RunLaunched'] }, { streamPrefixes: ['run-', 'apikeys'], types: ['RunLaunched', 'KeyIssued'] }, { streamPrefixes: ['nothing-'] }];
        // One subscriber starts behind (from the beginning), the others at the head.
        const head = await store.headPosition();
        const subs = filters.map((filter, i) => store.subscribe({ filter, after: i === 0 ? 0 : head, batchSize: 16 }));
        const seen = subs.map(() => [] as RecordedEvent[]);
        const readers = subs.map((sub, i) =>
          (async () => {
            for await (const e of sub) seen[i].push(e);
          })(),
        );
        const types = ['RunLaunched', 'TurnCompleted', 'KeyIssued'];
        const streamsOf = ['run-a', 'run-b', 'apikeys', 'workspace-x'];
        await Promise.all(
          [store, other].map(async (writer, w) => {
            for (let i = 0; i < 60; i++) {
              const batch = i % 5 === 0 ? [ev(types[i % 3], { w, i }), ev(types[(i + 1) % 3], { w, i })] : [ev(types[i % 3], { w, i })];
              await writer.append(`${streamsOf[(i + w) % 4]}-${w}`, batch);
            }
          }),
        );
        const last = await store.headPosition();
        const expected = await Promise.all(filters.map(async (filter, i) => (await store.readAll({ after: i === 0 ? 0 : head, filter })).map((e) => e.id)));
        // One more event, which every filter but the last matches: each subscriber sees it right after
        // what it saw before, so nothing was pending, skipped or seen twice.
        await other.append('run-z', [ev('RunLaunched')]);
        const [final] = await store.readAll({ after: last });
        const want = expected.map((ids, i) => (i === 4 ? ids : [...ids, final.id]));
        let deadline: NodeJS.Timeout | undefined;
        await Promise.race([
          (async () => {
            while (seen.some((got, i) => got.length < want[i].length)) await new Promise((r) => setTimeout(r, 20));
          })(),
          new Promise((_, reject) => {
            deadline = setTimeout(() => reject(new Error(`subscribers saw ${seen.map((g) => g.length).join('/')} of ${want.map((w) => w.length).join('/')}`)), 20000);
          }),
        ]).finally(() => clearTimeout(deadline));
        for (const sub of subs) sub.close();
        await Promise.all(readers.map((r) => r.catch(() => undefined)));
        seen.forEach((got, i) => expect(got.map((e) => e.id)).toEqual(want[i]));
        expect(want[4]).toEqual([]);
      });
    });

    describe('idempotent append by event id', () => {
      it('re-appending the same batch returns the original result and writes nothing', async () => {
        const batch = [ev('A', { x: 1 }), ev('B', { y: 2 })];
        const first = await store.append('idem', batch, { expectedRevision: 'no_stream' });
        await store.append('other', [ev('Z')]);
        const again = await store.append('idem', batch, { expectedRevision: 'no_stream' });
        expect(again).toEqual(first);
        const again2 = await store.append('idem', batch);
        expect(again2).toEqual(first);
        expect(await store.readStream('idem')).toHaveLength(2);
        expect(await store.readAll()).toHaveLength(3);
      });

      it('a reused id with different content is refused and nothing is written', async () => {
        const id = randomUUID();
        await store.append('idem', [{ id, type: 'A', data: { x: 1 } }]);
        const head = await store.headPosition();
        await expect(store.append('idem', [{ id, type: 'A', data: { x: 2 } }])).rejects.toBeInstanceOf(EventIdConflictError);
        if (options.idsUniqueAcrossStreams !== false) {
          await expect(store.append('elsewhere', [{ id, type: 'A', data: { x: 1 } }])).rejects.toBeInstanceOf(EventIdConflictError);
        }
        await expect(store.append('idem', [{ id, type: 'A', data: { x: 1 } }, ev('New')])).rejects.toBeInstanceOf(EventIdConflictError);
        expect(await store.headPosition()).toBe(head);
        expect(await store.streamRevision('elsewhere')).toBeNull();
      });

      it('an id twice in one batch is refused', async () => {
        const id = randomUUID();
        await expect(
          store.append('dup', [
            { id, type: 'A', data: {} },
            { id, type: 'A', data: {} },
          ]),
        ).rejects.toBeInstanceOf(InvalidAppendError);
        expect(await store.headPosition()).toBe(0);
      });
    });

    // Each adapter runs the part of the contract its kind of positions makes true (no skipped tests).
    const recordedPositions = options.recordedPositions ?? 'sparse';
    if (recordedPositions === 'none') {
      describe('appendRecorded: refused by a store that assigns its own positions', () => {
        it('refuses every batch with RecordedPositionsNotKeptError, writing nothing', async () => {
          await expect(store.appendRecorded(recorded(3))).rejects.toBeInstanceOf(RecordedPositionsNotKeptError);
          expect(await store.readAll()).toEqual([]);
        });
      });
    }

    if (recordedPositions === 'sparse') {
      describe('appendRecorded: sparse positions (a source whose positions are log offsets)', () => {
        it('given recorded events at sparse positions, then they keep them, reads after any position work, and appends continue after the highest', async () => {
          const gaps = [10, 25, 26, 40];
          const events = recorded(4).map((e, i) => ({ ...e, position: gaps[i] }));
          await expect(store.appendRecorded(events.slice(0, 2))).resolves.toEqual({ nextExpectedRevision: events[1].revision, position: 25 });
          await store.appendRecorded(events.slice(2));
          expect(await store.readAll()).toEqual(events);
          expect((await store.readAll({ after: 11 })).map((e) => e.position)).toEqual([25, 26, 40]);
          expect(await store.headPosition()).toBe(40);
          // A position at or below the head is taken (or skipped over) already.
          await expect(store.appendRecorded([{ ...recorded(1)[0], streamId: 'x', revision: 0, position: 33 }])).rejects.toBeInstanceOf(RecordedPositionError);
          const next = await store.append('run-r1', [ev('After')], { expectedRevision: 2 });
          expect(next).toEqual({ nextExpectedRevision: 3, position: 41 });
          const reopened = harness.reopen ? await harness.reopen() : store;
          if (reopened !== store) opened.push(reopened);
          await expect(reopened.append('other', [ev('Later')])).resolves.toEqual({ nextExpectedRevision: 0, position: 42 });
        });
      });
    }

    if (recordedPositions !== 'none') {
      describe('appendRecorded: events recorded by another store, stored as they were', () => {
        it('given recorded events, when appended in batches, then every envelope reads back unchanged and appends continue after them', async () => {
          const events = recorded(7);
          await expect(store.appendRecorded(events.slice(0, 4))).resolves.toEqual({ nextExpectedRevision: events[3].revision, position: 4 });
          await store.appendRecorded(events.slice(4));
          expect(await store.readAll()).toEqual(events);
          expect(await store.headPosition()).toBe(7);
          expect(await store.readStream('apikeys')).toEqual(events.filter((e) => e.streamId === 'apikeys'));
          const next = await store.append('run-r1', [ev('After')], { expectedRevision: 4 });
          if (recordedPositions === 'kept') expect(next).toEqual({ nextExpectedRevision: 5, position: expect.any(Number) });
          else expect(next).toEqual({ nextExpectedRevision: 5, position: 8 });
          expect(next.position).toBeGreaterThan(7);
          expect((await store.readAll({ after: 7 })).map((e) => e.type)).toEqual(['After']);
          expect((await store.readAll({ after: 3 })).map((e) => e.id)).toEqual([...events.slice(3).map((e) => e.id), expect.any(String)]);
        });

        it('given a batch already stored, when appended again (alone or followed by new events), then only the new ones are written', async () => {
          const events = recorded(6);
          const first = await store.appendRecorded(events.slice(0, 3));
          await expect(store.appendRecorded(events.slice(0, 3))).resolves.toEqual(first);
          await store.appendRecorded(events.slice(1, 6));
          expect(await store.readAll()).toEqual(events);
        });

        it('refuses, writing nothing, a batch that does not continue the store or reuses an id differently', async () => {
          const events = recorded(6);
          await store.appendRecorded(events.slice(0, 2));
          // A position the store holds already.
          await expect(store.appendRecorded([{ ...events[2], position: 2 }])).rejects.toBeInstanceOf(RecordedPositionError);
          // A gap in the global order, where positions are dense.
          if (recordedPositions === 'dense') await expect(store.appendRecorded(events.slice(3, 5))).rejects.toBeInstanceOf(RecordedPositionError);
          // The next position, but not its stream's next revision.
          const skipsRevision = { ...events[2], revision: events[2].revision + 1 };
          await expect(store.appendRecorded([skipsRevision])).rejects.toBeInstanceOf(WrongExpectedRevisionError);
          // A stored id with other content, or at another place.
          await expect(store.appendRecorded([{ ...events[1], data: { other: true } }, events[2]])).rejects.toBeInstanceOf(EventIdConflictError);
          // (An id reused in another stream is found only where ids are unique across streams.)
          if (options.idsUniqueAcrossStreams !== false) await expect(store.appendRecorded([{ ...events[2], id: events[0].id }])).rejects.toBeInstanceOf(EventIdConflictError);
          // After a normal append the recorded next position is taken.
          await store.append('other', [ev('X')]);
          await expect(store.appendRecorded([events[2]])).rejects.toBeInstanceOf(RecordedPositionError);
          expect((await store.readAll()).map((e) => e.id)).toEqual([events[0].id, events[1].id, expect.any(String)]);
        });

        it('refuses malformed recorded events with nothing written', async () => {
          const [a, b] = recorded(2);
          const bad: unknown[][] = [
            [],
            [{ ...a, recordedAt: 'yesterday' }],
            [{ ...a, position: 0 }],
            [{ ...a, revision: -1 }],
            [{ ...a, streamId: '' }],
            [{ ...a, position: 3 }, { ...b, position: 3 }],
            [{ ...a, data: { s: 'nul \u0000' } }],
          ];
          for (const batch of bad) {
            await expect(store.appendRecorded(batch as RecordedEvent[])).rejects.toBeInstanceOf(InvalidAppendError);
          }
          expect(await store.headPosition()).toBe(0);
        });

        it('wakes subscribers like any append', async () => {
          const events = recorded(3);
          const sub = store.subscribe();
          const got: string[] = [];
          const done = (async () => {
            for await (const e of sub) {
              got.push(e.id);
              if (got.length === 3) break;
            }
          })();
          await store.appendRecorded(events);
          await done;
          expect(got).toEqual(events.map((e) => e.id));
        });
      });
    }

    describe('malformed input is refused with nothing written', () => {
      const circular: Record<string, unknown> = {};
      circular.self = circular;
      const cases: Array<[string, () => Promise<unknown>, new (...a: never[]) => Error]> = [
        ['empty stream id', () => store.append('', [ev('A')]), InvalidAppendError],
        ['non-string stream id', () => store.append(42 as unknown as string, [ev('A')]), InvalidAppendError],
        ['no events', () => store.append('s', []), InvalidAppendError],
        ['missing type', () => store.append('s', [{ data: {} } as NewEvent]), InvalidAppendError],
        ['undefined data', () => store.append('s', [{ type: 'A', data: undefined }]), InvalidAppendError],
        ['bigint data', () => store.append('s', [ev('A', { n: BigInt(1) })]), InvalidAppendError],
        ['circular data', () => store.append('s', [ev('A', circular)]), InvalidAppendError],
        ['function data', () => store.append('s', [ev('A', { f: () => 1 })]), InvalidAppendError],
        ['NaN data', () => store.append('s', [ev('A', { n: Number.NaN })]), InvalidAppendError],
        ['Date data', () => store.append('s', [ev('A', { d: new Date() })]), InvalidAppendError],
        ['negative revision', () => store.append('s', [ev('A')], { expectedRevision: -1 }), InvalidAppendError],
        ['fractional revision', () => store.append('s', [ev('A')], { expectedRevision: 1.5 }), InvalidAppendError],
        ['unknown revision word', () => store.append('s', [ev('A')], { expectedRevision: 'latest' as never }), InvalidAppendError],
        ['bad event id', () => store.append('s', [{ id: 'has space', type: 'A', data: {} }]), InvalidAppendError],
        ['bad schema version', () => store.append('s', [ev('A', {}, { metadata: { schemaVersion: 0 } })]), InvalidAppendError],
        ['oversized event', () => store.append('s', [ev('A', { blob: 'x'.repeat(1024 * 1024 + 1) })]), EventTooLargeError],
        ['NUL in data', () => store.append('s', [ev('A', { reason: 'a\u0000b' })]), InvalidAppendError],
        ['lone high surrogate in data', () => store.append('s', [ev('A', { list: ['ok', 'x\ud800'] })]), InvalidAppendError],
        ['lone low surrogate in a data key', () => store.append('s', [ev('A', { ['\udc00']: 1 })]), InvalidAppendError],
        ['NUL in metadata', () => store.append('s', [ev('A', {}, { metadata: { actor: 'user:a\u0000' } })]), InvalidAppendError],
        ['lone surrogate in the type', () => store.append('s', [ev('A\ud800')]), InvalidAppendError],
        ['lone surrogate in the stream id', () => store.append('s\udfff', [ev('A')]), InvalidAppendError],
      ];
      it.each(cases)('%s', async (_label, act, errorType) => {
        const kept = await store.append('keep', [ev('Keep')]);
        await expect(act()).rejects.toBeInstanceOf(errorType);
        expect(await store.headPosition()).toBe(kept.position);
        expect(await store.streamRevision('s')).toBeNull();
      });

      it('a batch with one bad event writes none of it', async () => {
        await expect(store.append('s', [ev('A'), ev('B', { n: BigInt(2) })])).rejects.toBeInstanceOf(InvalidAppendError);
        await expect(store.append('s', [ev('A'), ev('B', { blob: 'y'.repeat(1024 * 1024) })])).rejects.toBeInstanceOf(EventTooLargeError);
        expect(await store.headPosition()).toBe(0);
      });

      it('ill-formed text is refused naming the JSON path; escaped look-alikes and astral text are stored as they are', async () => {
        await expect(store.append('s', [ev('A', { team: { tools: ['x', 'y\u0000'] } })])).rejects.toThrow(/data\.team\.tools\[1\] holds a NUL character/);
        await expect(store.append('s', [ev('A', {}, { metadata: { note: '\ud83d' } })])).rejects.toThrow(/metadata\.note holds an unpaired UTF-16 surrogate/);
        const fine = { text: '\\u0000 and \\ud800 as text, 😀, \u241b, \u0001' };
        await store.append('s', [ev('A', fine, { metadata: { note: '\\\\u0000' } })]);
        const [read] = await store.readStream('s');
        expect(read.data).toEqual(fine);
        expect(read.metadata.note).toBe('\\\\u0000');
      });

      it('the size limit is configurable', async () => {
        const small = await open({ maxEventBytes: 200 });
        await expect(small.append('s2', [ev('A', { blob: 'z'.repeat(300) })])).rejects.toThrow(/over the limit of 200 bytes/);
      });
    });

    describe('reading', () => {
      beforeEach(async () => {
        await store.append('s-1', [ev('A', { i: 0 }), ev('B', { i: 1 }), ev('A', { i: 2 })]);
        await store.append('t-1', [ev('C', { i: 3 })]);
        await store.append('s-2', [ev('B', { i: 4 })]);
      });

      it('reads a stream forwards and backwards from a revision, bounded by maxCount', async () => {
        expect((await store.readStream('s-1', { fromRevision: 1 })).map((e) => e.revision)).toEqual([1, 2]);
        expect((await store.readStream('s-1', { direction: 'backwards' })).map((e) => e.revision)).toEqual([2, 1, 0]);
        expect((await store.readStream('s-1', { direction: 'backwards', fromRevision: 1 })).map((e) => e.revision)).toEqual([1, 0]);
        expect((await store.readStream('s-1', { maxCount: 2 })).map((e) => e.revision)).toEqual([0, 1]);
        expect(await store.readStream('missing')).toEqual([]);
      });

      it('reads all events in global order after a position, filtered by stream prefix or type', async () => {
        const all = await store.readAll();
        expect(all.map((e) => (e.data as { i: number }).i)).toEqual([0, 1, 2, 3, 4]);
        expect((await store.readAll({ after: all[2].position })).map((e) => (e.data as { i: number }).i)).toEqual([3, 4]);
        expect((await store.readAll({ filter: { streamPrefixes: ['s-'] } })).map((e) => (e.data as { i: number }).i)).toEqual([0, 1, 2, 4]);
        expect((await store.readAll({ filter: { types: ['B'] } })).map((e) => (e.data as { i: number }).i)).toEqual([1, 4]);
        expect((await store.readAll({ filter: { types: ['A'], streamPrefixes: ['t-'] } })).length).toBe(0);
        expect((await store.readAll({ maxCount: 2 })).length).toBe(2);
      });

      it('reads a stream in pages: full pages but the last, the same events as readStream, within the revisions asked', async () => {
        const pagesOf = async (streamId: string, o?: Parameters<EventStore['readStreamPages']>[1]) => {
          const pages: RecordedEvent[][] = [];
          for await (const page of store.readStreamPages(streamId, o)) pages.push(page);
          return pages;
        };
        await store.append('p-1', Array.from({ length: 11 }, (_, i) => ev('P', { i })));
        const pages = await pagesOf('p-1', { pageSize: 4 });
        expect(pages.map((p) => p.length)).toEqual([4, 4, 3]);
        expect(pages.flat()).toEqual(await store.readStream('p-1'));
        expect((await pagesOf('p-1', { pageSize: 4, fromRevision: 3, toRevision: 9 })).map((p) => p.map((e) => e.revision))).toEqual([
          [3, 4, 5, 6],
          [7, 8, 9],
        ]);
        expect((await pagesOf('p-1', { pageSize: 11 })).map((p) => p.length)).toEqual([11]);
        expect((await pagesOf('p-1')).flat().length).toBe(11);
        expect(await pagesOf('p-1', { fromRevision: 11 })).toEqual([]);
        expect(await pagesOf('p-1', { fromRevision: 5, toRevision: 4 })).toEqual([]);
        expect(await pagesOf('p-1', { toRevision: -1 })).toEqual([]);
        expect(await pagesOf('missing')).toEqual([]);
        for (const bad of [{ pageSize: 0 }, { pageSize: 1.5 }, { fromRevision: -1 }, { toRevision: -2 }]) {
          await expect(pagesOf('p-1', bad)).rejects.toThrow(InvalidAppendError);
        }
      });

      it('events read with the same metadata do not share changes to it', async () => {
        const metadata = { correlationId: 'c-1', causationId: null, actor: 'user:ann', schemaVersion: 1, trace: { span: 's-1' } };
        await store.append('m-1', [ev('A', {}, { metadata }), ev('B', {}, { metadata })]);
        for (const read of [await store.readStream('m-1'), await store.readAll({ filter: { streamPrefixes: ['m-'] } })]) {
          const [first, second] = read;
          expect(second.metadata).toEqual(first.metadata);
          // A reader that changes what it read (or is stopped from doing so) cannot change another event.
          try {
            first.metadata.actor = 'user:mallory';
            (first.metadata.trace as { span: string }).span = 's-2';
          } catch {
            // frozen: the change is refused
          }
          expect(second.metadata).toMatchObject({ actor: 'user:ann', trace: { span: 's-1' } });
          expect((await store.readStream('m-1'))[1].metadata).toMatchObject({ actor: 'user:ann', trace: { span: 's-1' } });
        }
      });

      it('events of one append sharing a metadata object each get it, over the defaults; an event with its own keeps its own', async () => {
        const shared = { actor: 'user:ann' };
        await store.append('m-2', [ev('A', {}, { metadata: shared }), ev('B', {}, { metadata: { actor: 'user:bob' } }), ev('C', {}, { metadata: shared }), ev('D')]);
        const [a, b, c, d] = await store.readStream('m-2');
        // Without a correlation id of their own, the events of an append are correlated by the first one's id.
        const defaults = { correlationId: a.id, causationId: null, schemaVersion: 1 };
        expect(a.metadata).toMatchObject({ ...defaults, actor: 'user:ann' });
        expect(b.metadata).toMatchObject({ ...defaults, actor: 'user:bob' });
        expect(c.metadata).toEqual(a.metadata);
        expect(d.metadata).toMatchObject({ ...defaults, actor: 'system' });
      });

      it('a prefix with LIKE wildcards matches literally', async () => {
        await store.append('a%b_c', [ev('X')]);
        await store.append('aXbYc', [ev('Y')]);
        expect((await store.readAll({ filter: { streamPrefixes: ['a%b_'] } })).map((e) => e.type)).toEqual(['X']);
      });
    });

    describe('stream extents', () => {
      it('given streams of several lengths, then each existing stream reports its count and last revision', async () => {
        await store.append('x-1', [ev('A'), ev('B'), ev('C')]);
        await store.append('x-2', [ev('A')]);
        await store.append('x-1', [ev('D')]);
        const extents = await store.streamExtents(['x-1', 'x-2']);
        expect(Object.fromEntries(extents)).toEqual({ 'x-1': { count: 4, firstRevision: 0, lastRevision: 3 }, 'x-2': { count: 1, firstRevision: 0, lastRevision: 0 } });
      });

      it('given missing streams, then they are absent, alone or among existing ones, and no ids asks nothing', async () => {
        await store.append('x-1', [ev('A'), ev('B')]);
        expect((await store.streamExtents(['missing', 'also-missing'])).size).toBe(0);
        expect(await store.streamExtents([])).toEqual(new Map());
        const mixed = await store.streamExtents(['missing', 'x-1', 'x-1', 'also-missing']);
        expect([...mixed]).toEqual([['x-1', { count: 2, firstRevision: 0, lastRevision: 1 }]]);
      });

      it('given more streams than one statement takes, then every one is reported', async () => {
        const ids = Array.from({ length: options.extentStreams ?? 2 * EXTENT_BATCH_STREAMS + 1 }, (_, i) => `many-${i}`);
        // Stream i holds 1 + i % 3 events.
        await Promise.all(ids.map((id, i) => store.append(id, Array.from({ length: 1 + (i % 3) }, () => ev('N')))));
        const extents = await store.streamExtents([...ids, 'missing']);
        expect(extents.size).toBe(ids.length);
        ids.forEach((id, i) => expect([id, extents.get(id)]).toEqual([id, { count: 1 + (i % 3), firstRevision: 0, lastRevision: i % 3 }]));
      });

      it('refuses a malformed stream id, as reads do', async () => {
        await expect(store.streamExtents(['ok', ''])).rejects.toThrow(InvalidAppendError);
      });
    });

    describe('catch-up subscription', () => {
      it('delivers history, then live events, and filters', async () => {
        await store.append('s-1', [ev('A'), ev('B')]);
        await store.append('t-1', [ev('C')]);
        const sub = store.subscribe({ filter: { streamPrefixes: ['s-'] } });
        const got: string[] = [];
        const done = (async () => {
          for await (const e of sub) {
            got.push(e.type);
            if (got.length === 4) break;
          }
        })();
        // History first: the appends below come once the subscription has caught up.
        await waitFor('the history', () => got.length === 2, 5000, 5);
        await store.append('t-1', [ev('D')]);
        await store.append('s-1', [ev('E')]);
        await store.append('s-9', [ev('F')]);
        await done;
        expect(got).toEqual(['A', 'B', 'E', 'F']);
      });

      it('pulls pages only as the consumer drains them (backpressure)', async () => {
        for (let i = 0; i < 10; i++) await store.append('bp', [ev('N', { i })]);
        let reads = 0;
        const counting = new Proxy(store, {
          get(target, prop, receiver) {
            if (prop === 'readAll') return (o: unknown) => (reads++, target.readAll(o as never));
            const v = Reflect.get(target, prop, receiver);
            return typeof v === 'function' ? v.bind(target) : v;
          },
        });
        const { CatchUpSubscription } = await import('../../../src/events/subscription');
        const sub = new CatchUpSubscription(counting, { batchSize: 3 });
        const it = sub[Symbol.asyncIterator]();
        await it.next();
        expect(reads).toBe(1);
        await it.next();
        await it.next();
        expect(reads).toBe(1);
        await it.next();
        expect(reads).toBe(2);
        sub.close();
      });

      it('resumes from its durable named checkpoint after a restart', async () => {
        await store.append('s', [ev('A'), ev('B'), ev('C')]);
        const first = store.subscribe({ name: 'projector' });
        const seen: string[] = [];
        let savedAt = 0;
        for await (const e of first) {
          seen.push(e.type);
          if (e.type === 'B') {
            savedAt = e.position;
            await first.checkpoint(e.position);
            break;
          }
        }
        const restarted = harness.reopen ? await harness.reopen() : store;
        if (harness.reopen) opened.push(restarted);
        await restarted.append('s', [ev('D')]);
        const second = restarted.subscribe({ name: 'projector' });
        const after: string[] = [];
        for await (const e of second) {
          after.push(e.type);
          if (e.type === 'D') break;
        }
        expect(seen).toEqual(['A', 'B']);
        expect(after).toEqual(['C', 'D']);
        expect(await restarted.loadCheckpoint('projector')).toBe(savedAt);
        if (options.densePositions !== false) expect(savedAt).toBe(2);
      });

      it('stops when closed or aborted while waiting for live events', async () => {
        const controller = new AbortController();
        const sub = store.subscribe({ signal: controller.signal });
        const done = (async () => {
          const got: unknown[] = [];
          for await (const e of sub) got.push(e);
          return got;
        })();
        setTimeout(() => controller.abort(), 30);
        await expect(done).resolves.toEqual([]);
      });
    });

    describe('upcasting on read', () => {
      it('turns stored old versions into the current one in every read path; stored bytes unchanged', async () => {
        const upcasters = new UpcasterRegistry([
          { type: 'PlanSubmitted', fromVersion: 1, upcast: (d) => ({ data: { plan: (d as { text: string }).text } }) },
          { type: 'PlanSubmitted', fromVersion: 2, upcast: (d) => ({ data: { ...(d as object), steps: [] } }) },
        ]);
        const s = await open({ upcasters });
        await s.append('up', [ev('PlanSubmitted', { text: 'do it' }, { metadata: { schemaVersion: 1 } })]);
        await s.append('up', [ev('PlanSubmitted', { plan: 'v3 already', steps: ['x'] }, { metadata: { schemaVersion: 3 } })]);
        const [a, b] = await s.readStream('up');
        expect(a.data).toEqual({ plan: 'do it', steps: [] });
        expect(a.metadata.schemaVersion).toBe(3);
        expect(b.data).toEqual({ plan: 'v3 already', steps: ['x'] });
        expect((await s.readAll({ filter: { streamPrefixes: ['up'] } }))[0].data).toEqual({ plan: 'do it', steps: [] });
        for await (const e of s.subscribe({ filter: { streamPrefixes: ['up'] } })) {
          expect(e.data).toEqual({ plan: 'do it', steps: [] });
          break;
        }
        // Re-appending the original (old-version) batch is still idempotent: the stored bytes are the old ones.
      });
    });
  });
}
