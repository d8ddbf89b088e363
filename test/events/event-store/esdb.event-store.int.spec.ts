import { randomUUID } from 'node:crypto';
import { EsdbConnection } from '../../../src/events/esdb.client';
import { StoreUnavailableError } from '../../../src/events/errors';
import { EsdbEventStore } from '../../../src/events/event-store/esdb.event-store';
import { eventStoreContract } from './event-store.contract';
import { esdbForFile, esdbTarget, freshNamespace, type EsdbTarget } from '../../support/esdb';
import { startFakeEsdb } from '../../support/esdb-server/esdb-server';
import { RecordedPositionError, WrongExpectedRevisionError } from '../../../src/events/errors';
import type { RecordedEvent } from '../../../src/events/event-store/event-store.port';
import { waitFor } from '../../support/wait-for';

const eventStoreOptions = (o: ConstructorParameters<typeof EsdbEventStore>[1]) => o;
const esdb = esdbForFile();
const connect = esdb.connect;

eventStoreContract(
  'esdb',
  () => {
    // In-process, each contract test gets a server of its own (cheap to start): reads of `$all`
    // then see only that test's events, as on a server triad has to itself. On a real server each
    // test has a namespace of its own.
    const namespace = freshNamespace();
    let own: Promise<EsdbTarget> | undefined;
    const url = async () => (process.env.TRIAD_ESDB_URL ? esdb.target.url : (await (own ??= esdbTarget())).url);
    const open = async (o?: Parameters<typeof eventStoreOptions>[0]) => new EsdbEventStore(connect(await url()), eventStoreOptions({ namespace, ...o }));
    return {
      open,
      reopen: open,
      cleanup: async () => {
        await esdb.closeConnections();
        await (await own)?.stop();
      },
    };
  },
  // Extents are read stream by stream, 32 at a time: 97 streams are three full rounds and a part.
  { manyWritersEvents: 400, concurrentAppenders: 8, densePositions: false, idsUniqueAcrossStreams: false, recordedPositions: 'kept', extentStreams: 97 },
);

describe('esdb store specifics', () => {
  it('events copied in keep their positions and times; a fresh process reads after any of them, numbers its own appends above them and takes no more copies', async () => {
    const namespace = freshNamespace();
    const copier = new EsdbEventStore(connect(), { namespace });
    const events: RecordedEvent[] = [3, 7, 8, 20, 21].map((position, i) => ({
      id: randomUUID(),
      type: 'Copied',
      streamId: i % 2 === 0 ? 'run-a' : 'run-b',
      revision: Math.floor(i / 2),
      position,
      data: { i },
      metadata: { correlationId: 'c', causationId: null, actor: 'system', schemaVersion: 1 },
      recordedAt: new Date(Date.UTC(2021, 5, 6, 7, 8, 9, i)).toISOString(),
    }));
    // Two batches, as a copy writes them: the map has an entry for each.
    await copier.appendRecorded(events.slice(0, 2));
    await copier.appendRecorded(events.slice(2));
    const reader = new EsdbEventStore(connect(), { namespace });
    expect(await reader.readAll()).toEqual(events);
    expect(await reader.headPosition()).toBe(21);
    for (const after of [0, 3, 5, 8, 20]) {
      const fresh = new EsdbEventStore(connect(), { namespace });
      expect((await fresh.readAll({ after })).map((e) => e.position)).toEqual(events.filter((e) => e.position > after).map((e) => e.position));
    }
    const own = await reader.append('run-a', [{ type: 'Own', data: {} }], { expectedRevision: 2 });
    expect(own.position).toBeGreaterThan(21);
    const later = new EsdbEventStore(connect(), { namespace });
    expect((await later.readAll({ after: 20 })).map((e) => e.type)).toEqual(['Copied', 'Own']);
    expect(await later.headPosition()).toBe(own.position);
    const more = { ...events[0], id: randomUUID(), streamId: 'run-c', revision: 0, position: own.position + 1000 };
    await expect(later.appendRecorded([more])).rejects.toBeInstanceOf(RecordedPositionError);
  });

  it('an append of several events resumes mid-append: a reader after its first event gets the rest, from a fresh process', async () => {
    const namespace = freshNamespace();
    const writer = new EsdbEventStore(connect(), { namespace });
    await writer.append('a', [{ type: 'X', data: {} }]);
    await writer.append('b', [1, 2, 3].map((n) => ({ id: randomUUID(), type: 'N', data: { n } })));
    const all = await writer.readAll();
    expect(all.map((e) => e.type)).toEqual(['X', 'N', 'N', 'N']);
    // A store that has seen none of these positions finds where to resume by itself.
    const reader = new EsdbEventStore(connect(), { namespace });
    for (let i = 0; i < all.length; i++) {
      expect((await reader.readAll({ after: all[i].position })).map((e) => e.id)).toEqual(all.slice(i + 1).map((e) => e.id));
    }
  });

  it("events of other applications and the server's own are not triad's: not read, not the head", async () => {
    const namespace = freshNamespace();
    const store = new EsdbEventStore(connect(), { namespace });
    const { position } = await store.append('mine', [{ type: 'A', data: {} }]);
    esdb.target.fake?.foreign('orders-1', 'OrderPlaced');
    esdb.target.fake?.foreign('$stats-127.0.0.1:2113', '$statsCollected');
    expect(await store.headPosition()).toBe(position);
    expect((await store.readAll()).map((e) => e.streamId)).toEqual(['mine']);
  });

  it('a re-append after a lost answer, at the old expected revision, returns the original result', async () => {
    const store = new EsdbEventStore(connect(), { namespace: freshNamespace() });
    await store.append('r', [{ type: 'A', data: {} }]);
    const batch = [{ id: randomUUID(), type: 'B', data: {} }, { id: randomUUID(), type: 'C', data: {} }];
    const first = await store.append('r', batch, { expectedRevision: 0 });
    await store.append('r', [{ type: 'D', data: {} }], { expectedRevision: 2 });
    expect(await store.append('r', batch, { expectedRevision: 0 })).toEqual(first);
    expect((await store.readStream('r')).map((e) => e.type)).toEqual(['A', 'B', 'C', 'D']);
  });

  it("given five live subscriptions with different filters, when events are appended one by one, then they share one reader of $all: the server's reads grow with the appends, not with the subscriptions", async () => {
    const own = await startFakeEsdb();
    const subs: Array<{ close(): void }> = [];
    try {
      const store = new EsdbEventStore(connect(own.url), { namespace: freshNamespace() });
      await store.append('run-0', [{ type: 'RunLaunched', data: {} }], { expectedRevision: 'no_stream' });
      const head = await store.headPosition();
      const filters = [undefined, { streamPrefixes: ['run-'] }, { types: ['RunLaunched'] }, { types: ['TurnCompleted'] }, { streamPrefixes: ['nothing-'] }];
      const seen = filters.map(() => [] as string[]);
      const readers = filters.map((filter, i) => {
        const sub = store.subscribe({ filter, after: head, urgent: true });
        subs.push(sub);
        return (async () => {
          for await (const e of sub) seen[i].push(e.type);
        })();
      });
      const appends = 20;
      const readsBefore = own.calls.get('read') ?? 0;
      const startedAt = Date.now();
      for (let i = 0; i < appends; i++) {
        const type = i % 2 === 0 ? 'RunLaunched' : 'TurnCompleted';
        await store.append('run-1', [{ type, data: { i } }], { expectedRevision: i === 0 ? 'no_stream' : i - 1 });
        // Each append is seen by every subscription it matches before the next is made.
        const want = [i + 1, i + 1, Math.floor(i / 2) + 1, Math.ceil(i / 2)];
        await waitFor(`append ${i} seen by every subscription it matches`, async () => want.every((n, k) => seen[k].length === n), 20_000, 5);
      }
      const reads = (own.calls.get('read') ?? 0) - readsBefore;
      // Per append: one read of its position, and one read of what is new for every subscription.
      // Besides: each subscription's first page, read from the store before the tail covers its
      // filter (the head and `$all`), the tail's own first reads, and its polls (one per 250 ms).
      // Five readers of their own would read the head and `$all` each: ten per append.
      const polls = Math.ceil((Date.now() - startedAt) / 250);
      expect(reads).toBeLessThanOrEqual(2 * appends + 2 * filters.length + 4 + polls);
      expect(seen[4]).toEqual([]);
      for (const sub of subs) sub.close();
      await Promise.all(readers);
    } finally {
      for (const sub of subs) sub.close();
      await own.stop();
    }
  });

  it('a server without BatchAppend (before 21.10) is written through Append, with the same rules', async () => {
    const old = await startFakeEsdb({ batchAppend: false });
    try {
      const store = new EsdbEventStore(connect(old.url), { namespace: freshNamespace() });
      const batch = [{ id: randomUUID(), type: 'A', data: {} }];
      const first = await store.append('s', batch, { expectedRevision: 'no_stream' });
      await expect(store.append('s', [{ type: 'B', data: {} }], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      expect(await store.append('s', batch, { expectedRevision: 'no_stream' })).toEqual(first);
      expect(old.calls.get('append')).toBeGreaterThan(0);
      expect(old.calls.get('batchAppend')).toBeUndefined();
    } finally {
      await old.stop();
    }
  });

  it('a server that takes a read and never answers: the read fails as unavailable at its deadline, and the health sink hears of it', async () => {
    const hung = await startFakeEsdb({ stallReads: true });
    const conn = new EsdbConnection(hung.url, { readDeadlineMs: 300 });
    const failures: string[] = [];
    try {
      const store = new EsdbEventStore(conn, { namespace: freshNamespace(), health: { storeFailed: (r) => failures.push(r), storeAnswered: () => undefined } });
      const started = Date.now();
      await expect(store.readStream('s')).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(failures).toEqual([expect.stringMatching(/no answer within 300 ms/)]);
    } finally {
      await conn.close();
      await hung.stop();
    }
  });
});
