import fc from 'fast-check';
import { StoreUnavailableError } from '../../../src/events/errors';
import type { EventFilter, RecordedEvent } from '../../../src/events/event-store/event-store.port';
import { matchesFilter } from '../../../src/events/read-helpers';
import { SharedTail, unionOf, type TailRead, type TailSource } from '../../../src/events/event-store/shared-tail';

/** A store as the tail sees it: events at positions 1..n, a notified head, and a count of reads. */
class FakeSource implements TailSource {
  events: RecordedEvent[] = [];
  notified = 0;
  reads = 0;
  headReads = 0;
  announced: number[] = [];
  /** Types as stored, where a reader sees another (an upcaster renamed it). */
  storedTypes = new Map<number, string>();

  add(streamId: string, type: string, { notify = true } = {}): void {
    const position = this.events.length + 1;
    this.events.push({ id: `e${position}`, type, streamId, revision: 0, position, data: { n: position, nested: { list: [position] } }, metadata: { correlationId: 'c', causationId: null, actor: 'system', schemaVersion: 1 }, recordedAt: '2026-01-01T00:00:00.000Z' });
    if (notify) this.notified = position;
  }

  /** The filters of each read (undefined: every event). */
  readWith: (readonly EventFilter[] | undefined)[] = [];
  /** Called after the read's snapshot is taken, before it returns. */
  duringRead?: () => void;

  async readAfter(after: number, maxCount: number, filters?: readonly EventFilter[]): Promise<TailRead> {
    this.reads++;
    this.readWith.push(filters);
    const head = this.events.length;
    const storedType = (e: RecordedEvent) => this.storedTypes.get(e.position) ?? e.type;
    const matching = this.events.filter((e) => e.position > after && (!filters || filters.some((f) => matchesFilter(e.streamId, storedType(e), f))));
    // A fresh copy each time, as a store decodes rows.
    const events = matching.slice(0, maxCount).map((e) => structuredClone(e));
    this.duringRead?.();
    const last = events.length > 0 ? events[events.length - 1].position : after;
    return {
      events: events.map((event) => ({ event, storedType: storedType(event), size: 100 })),
      scannedTo: events.length === maxCount || !filters ? last : Math.max(last, head),
    };
  }

  announce(position: number): void {
    this.announced.push(position);
  }

  async readHead(): Promise<number> {
    this.headReads++;
    return this.events.length;
  }

  knownHead(): number {
    return this.notified;
  }

}

describe('SharedTail', () => {
  let now = 0;
  const clock = () => now;
  beforeEach(() => (now = 1_000));

  it('given a tail at the head, when several subscriptions wake for one append, then the store is read once and each gets its filtered events', async () => {
    const source = new FakeSource();
    source.add('run-a', 'RunLaunched');
    const tail = new SharedTail(source, { now: clock });
    expect(await tail.read(1, 10)).toEqual({ events: [], scannedTo: 1 });
    const readsBefore = source.reads;

    source.add('run-a', 'TurnCompleted');
    source.add('apikeys', 'ApiKeyIssued');
    source.add('run-b', 'RunLaunched');
    const [all, runs, launches] = await Promise.all([
      tail.read(1, 10),
      tail.read(1, 10, { streamPrefixes: ['run-'] }),
      tail.read(1, 10, { streamPrefixes: ['run-'], types: ['RunLaunched'] }),
    ]);

    expect(source.reads - readsBefore).toBe(1);
    expect(all!.events.map((e) => e.position)).toEqual([2, 3, 4]);
    expect(runs!.events.map((e) => e.position)).toEqual([2, 4]);
    expect(launches).toEqual({ events: [expect.objectContaining({ position: 4 })], scannedTo: 4 });
    // The same objects for everyone, frozen so that no reader can change another's view.
    expect(runs!.events[1]).toBe(all!.events[2]);
    expect(Object.isFrozen(all!.events[0].data)).toBe(true);
    expect(() => (all!.events[0].data as { nested: { list: number[] } }).nested.list.push(9)).toThrow(/not extensible/);
  });

  it('given a full page of matches, then the scan stops at the last event returned', async () => {
    const source = new FakeSource();
    const tail = new SharedTail(source, { now: clock });
    await tail.read(0, 10);
    for (let i = 0; i < 5; i++) source.add('run-a', 'T');
    const page = await tail.read(0, 2);
    expect(page).toEqual({ events: [expect.objectContaining({ position: 1 }), expect.objectContaining({ position: 2 })], scannedTo: 2 });
    expect((await tail.read(2, 10))!.events.map((e) => e.position)).toEqual([3, 4, 5]);
  });

  it('given many small pages, then a read from any position inside gets exactly what follows it', async () => {
    const source = new FakeSource();
    const tail = new SharedTail(source, { now: clock, pageEvents: 3 });
    await tail.read(0, 10);
    for (let i = 0; i < 40; i++) {
      source.add(i % 2 ? 'run-a' : 'apikeys', 'T');
      await tail.read(source.events.length, 10);
    }
    for (const after of [0, 1, 17, 38, 39, 40]) {
      const page = await tail.read(after, 100);
      expect(page!.events.map((e) => e.position)).toEqual(Array.from({ length: 40 - after }, (_, i) => after + i + 1));
    }
    expect((await tail.read(10, 3, { streamPrefixes: ['run-'] }))!.events.map((e) => e.position)).toEqual([12, 14, 16]);
  });

  it('given a subscription behind the tail, then it is not served (it reads the store itself)', async () => {
    const source = new FakeSource();
    for (let i = 0; i < 5; i++) source.add('run-a', 'T');
    const tail = new SharedTail(source, { now: clock });
    expect(await tail.read(2, 10)).toBeUndefined();
    expect(await tail.read(5, 10)).toEqual({ events: [], scannedTo: 5 });
  });

  it('given no notification, then the store is read again only once the tail is stale (one poll for all subscriptions)', async () => {
    const source = new FakeSource();
    const tail = new SharedTail(source, { now: clock, staleMs: 250 });
    await tail.read(0, 10);
    const reads = source.reads;
    source.add('run-a', 'T', { notify: false });
    expect((await tail.read(0, 10))!.events).toEqual([]);
    expect(source.reads).toBe(reads);

    now += 250;
    const [a, b] = await Promise.all([tail.read(0, 10), tail.read(0, 10)]);
    expect(a!.events.map((e) => e.position)).toEqual([1]);
    expect(b!.events.map((e) => e.position)).toEqual([1]);
    expect(source.reads).toBe(reads + 1);
  });

  it('given more bytes than it keeps, then the oldest pages go and a subscription that far behind reads the store', async () => {
    const source = new FakeSource();
    const tail = new SharedTail(source, { now: clock, pageEvents: 2, maxChars: 400 });
    await tail.read(0, 10);
    for (let round = 0; round < 4; round++) {
      source.add('run-a', 'T');
      source.add('run-a', 'T');
      await tail.read(source.events.length, 10);
    }
    // Pages of 2 events at 100 bytes each: 2 pages kept, positions 5..8.
    expect(await tail.read(3, 10)).toBeUndefined();
    expect((await tail.read(4, 10))!.events.map((e) => e.position)).toEqual([5, 6, 7, 8]);
  });

  it('given a store that does not answer, then every waiting reader gets the outage and the next read tries again', async () => {
    const source = new FakeSource();
    const tail = new SharedTail(source, { now: clock });
    await tail.read(0, 10);
    source.add('run-a', 'T');
    const failing = jest.spyOn(source, 'readAfter').mockRejectedValueOnce(new StoreUnavailableError('gone'));
    const results = await Promise.allSettled([tail.read(0, 10), tail.read(0, 10)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    failing.mockRestore();
    expect((await tail.read(0, 10))!.events.map((e) => e.position)).toEqual([1]);
  });

  it('given an event that does not decode, then no reader is failed by the tail: each reads the store itself, and the tail starts again at the head', async () => {
    const source = new FakeSource();
    const tail = new SharedTail(source, { now: clock });
    await tail.read(0, 10);
    source.add('run-a', 'T');
    const failing = jest.spyOn(source, 'readAfter').mockRejectedValueOnce(new SyntaxError('Unexpected token'));
    expect(await Promise.all([tail.read(0, 10), tail.read(0, 10, { streamPrefixes: ['apikeys'] })])).toEqual([undefined, undefined]);
    failing.mockRestore();

    source.add('apikeys', 'KeyIssued');
    // Behind the new start (the head when it started again): the store's business.
    expect(await tail.read(0, 10)).toBeUndefined();
    expect(await tail.read(2, 10)).toEqual({ events: [], scannedTo: 2 });
    source.add('apikeys', 'KeyIssued');
    expect((await tail.read(2, 10, { streamPrefixes: ['apikeys'] }))!.events.map((e) => e.position)).toEqual([3]);
  });

  it('given a reader inside the tail, then it is served from memory without a read, and a read that finds news wakes every waiter', async () => {
    const source = new FakeSource();
    const tail = new SharedTail(source, { now: clock });
    await tail.read(0, 10);
    for (let i = 0; i < 4; i++) source.add('run-a', 'T');
    await tail.read(0, 1);
    expect(source.announced).toEqual([4]);
    const reads = source.reads;
    source.add('run-a', 'T');
    expect((await tail.read(1, 10))!.events.map((e) => e.position)).toEqual([2, 3, 4]);
    expect(source.reads).toBe(reads);
    expect((await tail.read(4, 10))!.events.map((e) => e.position)).toEqual([5]);
    expect(source.reads).toBe(reads + 1);
    expect(source.announced).toEqual([4, 5]);
  });

  it('given one read larger than the tail keeps, then the oldest events of it go and the newest stays', async () => {
    const source = new FakeSource();
    const tail = new SharedTail(source, { now: clock, maxChars: 250 });
    await tail.read(0, 10);
    for (let i = 0; i < 5; i++) source.add('run-a', 'T');
    // 100 characters each: the newest two are kept.
    expect((await tail.read(5, 10))!.events).toEqual([]);
    expect(await tail.read(2, 10)).toBeUndefined();
    expect((await tail.read(3, 10))!.events.map((e) => e.position)).toEqual([4, 5]);

    const huge = new SharedTail(source, { now: clock, maxChars: 50 });
    await huge.read(5, 10);
    source.add('run-a', 'T');
    expect((await huge.read(5, 10))!.events.map((e) => e.position)).toEqual([6]);
  });

  it('given an upcaster that renamed a type, then filters match the stored type, as the store\'s own filters do', async () => {
    const source = new FakeSource();
    const tail = new SharedTail(source, { now: clock });
    await tail.read(0, 10);
    source.add('run-a', 'PlanRecorded');
    source.storedTypes.set(1, 'PlanSubmitted');
    expect((await tail.read(0, 10, { types: ['PlanSubmitted'] }))!.events.map((e) => e.type)).toEqual(['PlanRecorded']);
    expect((await tail.read(0, 10, { types: ['PlanRecorded'] }))!.events).toEqual([]);
  });

  describe('reads what its readers ask for', () => {
    const runs = { streamPrefixes: ['run-'], types: ['RunLaunched', 'RunEnded'] };
    const keys = { streamPrefixes: ['apikeys'] };

    it('given readers with filters only, when news arrives, then the store is read for their union, and the head seen bounds the scan', async () => {
      const source = new FakeSource();
      const tail = new SharedTail(source, { now: clock });
      await tail.read(0, 10, runs);
      expect(await tail.read(0, 10, runs)).toEqual({ events: [], scannedTo: 0 });
      // A second filter at the end widens the tail: one read with both filters, from where it was.
      const reads = source.reads;
      expect(await tail.read(0, 10, keys)).toEqual({ events: [], scannedTo: 0 });
      expect(source.reads).toBe(reads + 1);
      expect(source.headReads).toBe(1);
      source.add('run-a', 'RunLaunched');
      source.add('run-a', 'ModelCallStarted');
      source.add('apikeys', 'ApiKeyIssued');
      source.add('run-a', 'ModelCallStarted');

      const [launches, issued] = await Promise.all([tail.read(0, 10, runs), tail.read(0, 10, keys)]);

      expect(source.readWith.at(-1)).toEqual([{ types: ['RunEnded', 'RunLaunched'], streamPrefixes: ['run-'] }, { streamPrefixes: ['apikeys'] }]);
      expect(launches).toEqual({ events: [expect.objectContaining({ position: 1 })], scannedTo: 4 });
      expect(issued).toEqual({ events: [expect.objectContaining({ position: 3 })], scannedTo: 4 });
      // Only what someone asked for was read and held.
      expect(tail.eventsRead).toBe(2);
    });

    it('given a new reader whose filter the held events do not cover, then it reads the store once, and from the next read on the tail covers it too', async () => {
      const source = new FakeSource();
      const tail = new SharedTail(source, { now: clock });
      await tail.read(0, 10, runs);
      source.add('run-a', 'RunLaunched');
      source.add('run-a', 'ModelCallStarted');
      expect((await tail.read(0, 10, runs))!.events.map((e) => e.position)).toEqual([1]);

      const stream = { streamPrefixes: ['run-a'] };
      expect(await tail.read(0, 10, stream)).toBeUndefined();
      // At the end, the reader has the tail read on with both filters (not start again at the head).
      expect(await tail.read(2, 10, stream)).toEqual({ events: [], scannedTo: 2 });
      expect(source.headReads).toBe(1);
      expect(source.readWith.at(-1)).toEqual([{ types: ['RunEnded', 'RunLaunched'], streamPrefixes: ['run-'] }, { streamPrefixes: ['run-a'] }]);
      source.add('run-a', 'ModelCallStarted');
      source.add('run-a', 'RunEnded');
      expect((await tail.read(2, 10, stream))!.events.map((e) => e.position)).toEqual([3, 4]);
      expect((await tail.read(2, 10, runs))!.events.map((e) => e.position)).toEqual([4]);
    });

    it('given a filter widened while a read is under way, then that read serves the readers it was for, and the new one from the next read on', async () => {
      const source = new FakeSource();
      const tail = new SharedTail(source, { now: clock });
      await tail.read(0, 10, runs);
      source.add('run-a', 'ModelCallStarted');
      let widened: Promise<unknown> | undefined;
      source.duringRead = () => {
        source.duringRead = undefined;
        widened = tail.read(0, 10, { streamPrefixes: ['run-a'] });
      };
      // That read did not ask for the new filter: its reader is told to read the store; the old reader is served.
      expect(await tail.read(0, 10, runs)).toEqual({ events: [], scannedTo: 1 });
      expect(await widened).toBeUndefined();
      source.add('run-a', 'RunLaunched');
      expect(await tail.read(0, 10, { streamPrefixes: ['run-a'] })).toBeUndefined();
      expect(await tail.read(2, 10, runs)).toEqual({ events: [], scannedTo: 2 });
      source.add('run-a', 'ModelCallStarted');
      expect((await tail.read(2, 10, { streamPrefixes: ['run-a'] }))!.events.map((e) => e.position)).toEqual([3]);
      expect(source.readWith.at(-1)).toEqual([{ types: ['RunEnded', 'RunLaunched'], streamPrefixes: ['run-'] }, { streamPrefixes: ['run-a'] }]);
    });

    it('given a reader that has not asked for a while, then its filter is dropped from the reads, and asking again widens the tail', async () => {
      const source = new FakeSource();
      const tail = new SharedTail(source, { now: clock, interestTtlMs: 1_000 });
      await tail.read(0, 10, runs);
      await tail.read(0, 10, keys);
      now += 1_001;
      source.add('run-a', 'RunLaunched');
      await tail.read(0, 10, runs);
      expect(source.readWith.at(-1)).toEqual([runs].map((f) => ({ types: [...f.types].sort(), streamPrefixes: f.streamPrefixes })));
      // Asking again: not served from inside what the tail read without it, and covered again from the next read on.
      expect(await tail.read(0, 10, keys)).toBeUndefined();
      expect(await tail.read(1, 10, keys)).toEqual({ events: [], scannedTo: 1 });
      expect(source.readWith.at(-1)).toEqual(expect.arrayContaining([keys]));
    });

    it('given a filter dropped by one read and asked for again before the next, then the tail never claims the events of it that the first read skipped', async () => {
      const a = { types: ['A'] };
      const b = { types: ['B'] };
      const source = new FakeSource();
      const tail = new SharedTail(source, { now: clock, interestTtlMs: 100 });
      source.add('x', 'A');
      source.add('x', 'B');
      await tail.read(2, 10, a);
      expect(await tail.read(2, 10, b)).toEqual({ events: [], scannedTo: 2 });
      source.add('x', 'A');
      source.add('x', 'A');
      source.add('x', 'B');
      expect((await tail.read(2, 1, a))!.events.map((e) => e.position)).toEqual([3]);
      expect((await tail.read(2, 10, b))!.events.map((e) => e.position)).toEqual([5]);

      // A stays quiet past the TTL (busy with its last event); B reads on, without A's filter.
      source.add('x', 'A');
      source.add('x', 'B');
      now += 1_000;
      let during: Promise<unknown> | undefined;
      source.duringRead = () => {
        source.duringRead = undefined;
        // A comes back while that read is under way: served from what was held, and its filter is wanted again.
        during = tail.read(3, 1, a);
      };
      await tail.read(5, 10, b);
      expect(source.readWith.at(-1)).toEqual([b]);
      expect(((await during) as { events: RecordedEvent[] }).events.map((e) => e.position)).toEqual([4]);
      source.add('x', 'B');
      now += 10;
      await tail.read(7, 10, b);
      expect(source.readWith.at(-1)).toEqual(expect.arrayContaining([a, b]));

      // Position 6 was never read for A: A reads the store rather than be told nothing is there.
      expect(await tail.read(4, 10, a)).toBeUndefined();
    });

    it('given an unfiltered reader, then the tail reads every event and serves any filter without starting again', async () => {
      const source = new FakeSource();
      const tail = new SharedTail(source, { now: clock });
      await tail.read(0, 10);
      source.add('run-a', 'ModelCallStarted');
      await tail.read(0, 10, runs);
      expect(source.readWith.at(-1)).toBeUndefined();
      expect((await tail.read(0, 10, { streamPrefixes: ['run-a'] }))!.events.map((e) => e.position)).toEqual([1]);
    });
    it('given a filter covered from where the read that first asked for it began, then a reader of it further behind is not served, and the readers already there never read the store', async () => {
      const a = { types: ['A'] };
      const b = { types: ['B'] };
      const source = new FakeSource();
      const tail = new SharedTail(source, { now: clock });
      await tail.read(0, 10, a);
      source.add('x', 'B');
      source.add('x', 'A');
      expect((await tail.read(0, 10, a))!.events.map((e) => e.position)).toEqual([2]);
      // B is new: its reader inside the tail reads the store; at the end, it has the tail read with B.
      expect(await tail.read(0, 10, b)).toBeUndefined();
      expect(await tail.read(2, 10, b)).toEqual({ events: [], scannedTo: 2 });
      // Another reader of B behind that point would miss position 1: it reads the store.
      expect(await tail.read(0, 10, { types: ['B'] })).toBeUndefined();
      // A's reader was never sent to the store, and the tail never started again at the head.
      const reads = source.reads;
      expect((await tail.read(0, 10, a))!.events.map((e) => e.position)).toEqual([2]);
      expect(source.reads).toBe(reads);
      expect(source.headReads).toBe(1);

      // A reader of every event: from the next read on, and not behind it.
      source.add('x', 'C');
      expect(await tail.read(2, 10)).toEqual({ events: [expect.objectContaining({ position: 3 })], scannedTo: 3 });
      expect(await tail.read(1, 10)).toBeUndefined();
      expect(source.readWith.at(-1)).toBeUndefined();
    });

    it('given readers coming, going and reading at random, then every page served is exactly what the store holds for that reader', async () => {
      // Readers, some with equal filters (one key, each reader at its own position).
      const filters: (EventFilter | undefined)[] = [undefined, { types: ['A'] }, { types: ['B'] }, { streamPrefixes: ['x'] }, { types: ['A'], streamPrefixes: ['y'] }, { types: ['A', 'B'] }, { types: ['A'] }, { types: ['B', 'A'] }, undefined];
      const op = fc.oneof(
        fc.record({ kind: fc.constant('add' as const), stream: fc.constantFrom('x', 'y', 'z'), type: fc.constantFrom('A', 'B', 'C'), notify: fc.boolean() }),
        fc.record({ kind: fc.constant('read' as const), readers: fc.uniqueArray(fc.nat(filters.length - 1), { minLength: 1, maxLength: 3 }), maxCount: fc.integer({ min: 1, max: 4 }) }),
        fc.record({ kind: fc.constant('during' as const), reader: fc.nat(filters.length - 1), then: fc.nat(filters.length - 1) }),
        fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 300 }) }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
          now = 1_000;
          const source = new FakeSource();
          const tail = new SharedTail(source, { now: clock, interestTtlMs: 200, staleMs: 250, gatherMs: 0, lazyGatherMs: 0, pageEvents: 3, maxChars: 600 });
          const after = filters.map(() => 0);
          // A reader the tail does not serve reads the store, as a subscription does.
          const readAs = async (r: number, maxCount: number) => {
            const from = after[r];
            const filter = filters[r];
            let page: { events: RecordedEvent[]; scannedTo: number } | undefined = await tail.read(from, maxCount, filter);
            if (!page) {
              const read = await source.readAfter(from, maxCount, filter ? [filter] : undefined);
              page = { events: read.events.map((h) => h.event), scannedTo: read.scannedTo };
            }
            const truth = source.events.filter((e) => e.position > from && e.position <= page.scannedTo && (!filters[r] || matchesFilter(e.streamId, e.type, filters[r])));
            expect(page.events.map((e) => e.position)).toEqual(truth.map((e) => e.position));
            expect(page.scannedTo).toBeGreaterThanOrEqual(from);
            expect(page.scannedTo).toBeLessThanOrEqual(source.events.length);
            after[r] = page.scannedTo;
          };
          for (const o of ops) {
            if (o.kind === 'add') source.add(o.stream, o.type, { notify: o.notify });
            else if (o.kind === 'tick') now += o.ms;
            else if (o.kind === 'read') await Promise.all(o.readers.map((r) => readAs(r, o.maxCount)));
            else {
              let during: Promise<unknown> | undefined;
              source.duringRead = () => {
                source.duringRead = undefined;
                during = readAs(o.then, 4).then(() => undefined, (err: unknown) => err);
              };
              await readAs(o.reader, 4);
              source.duringRead = undefined;
              const failed = await during;
              if (failed) throw failed;
            }
          }
        }),
        { numRuns: 300 },
      );
    });
  });

  describe('unionOf', () => {
    it('merges the prefixes of readers of the same types, and lets a reader of every stream or every event widen its group or the whole', () => {
      expect(unionOf([{ streamPrefixes: ['run-b'] }, { streamPrefixes: ['run-a', 'run-b'] }])).toEqual([{ streamPrefixes: ['run-a', 'run-b'] }]);
      expect(unionOf([{ types: ['B', 'A'], streamPrefixes: ['run-'] }, { types: ['A', 'B'] }, { streamPrefixes: ['k'] }])).toEqual([{ types: ['A', 'B'] }, { streamPrefixes: ['k'] }]);
      expect(unionOf([{ types: ['A'] }, { streamPrefixes: [], types: [] }])).toBeUndefined();
      expect(unionOf([{ types: ['A'] }, undefined])).toBeUndefined();
      expect(unionOf([])).toEqual([]);
    });
  });

  describe('gathers news no one waits for longer than news someone does', () => {
    afterEach(() => jest.useRealTimers());

    /** A tail that has read once (so that the next read gathers), with a lazy gathering of 1 s. */
    async function gathering(source: FakeSource, urgent?: EventFilter): Promise<SharedTail> {
      const tail = new SharedTail(source, { now: clock, gatherMs: 5, lazyGatherMs: 1_000 });
      const first = tail.read(0, 10);
      await jest.advanceTimersByTimeAsync(5);
      await first;
      // Served from what the unfiltered read holds: no read of the store.
      if (urgent) await tail.read(0, 10, urgent, true);
      return tail;
    }

    it('given news no urgent reader asked for, then the read waits the lazy gathering, even after an append here of it', async () => {
      jest.useFakeTimers();
      const source = new FakeSource();
      const tail = await gathering(source, { streamPrefixes: ['run-'], types: ['RunLaunched'] });
      const reads = source.reads;

      source.add('run-a', 'ModelCallStarted');
      tail.appended([{ streamId: 'run-a', type: 'ModelCallStarted' }]);
      const waiting = tail.read(0, 10);
      await jest.advanceTimersByTimeAsync(500);
      expect(source.reads).toBe(reads);

      await jest.advanceTimersByTimeAsync(500);
      expect((await waiting)!.events.map((e) => e.position)).toEqual([1]);
    });

    it('given a lazy wait under way, when this process appends what an urgent reader asked for, then the read happens at the short gathering', async () => {
      jest.useFakeTimers();
      const source = new FakeSource();
      const tail = await gathering(source, { streamPrefixes: ['run-'], types: ['RunLaunched'] });
      const reads = source.reads;

      source.add('run-a', 'ModelCallStarted');
      const waiting = tail.read(0, 10);
      await jest.advanceTimersByTimeAsync(100);
      expect(source.reads).toBe(reads);

      source.add('run-b', 'RunLaunched');
      tail.appended([{ streamId: 'run-b', type: 'RunLaunched' }]);
      await jest.advanceTimersByTimeAsync(5);
      expect((await waiting)!.events.map((e) => e.position)).toEqual([1, 2]);
      expect(source.reads).toBe(reads + 1);
    });

    it('given a lazy wait under way, when a query waits for the head (hurry), then the read happens at the short gathering', async () => {
      jest.useFakeTimers();
      const source = new FakeSource();
      const tail = await gathering(source);
      source.add('run-a', 'ModelCallStarted');
      const waiting = tail.read(0, 10);
      await jest.advanceTimersByTimeAsync(100);
      tail.hurry();
      await jest.advanceTimersByTimeAsync(5);
      expect((await waiting)!.events.map((e) => e.position)).toEqual([1]);
    });

    it('given a read that filled its page, then the next read does not wait to gather (a backlog drains at the store\'s speed)', async () => {
      jest.useFakeTimers();
      const source = new FakeSource();
      const tail = new SharedTail(source, { now: clock, gatherMs: 5, lazyGatherMs: 1_000, pageEvents: 2 });
      const first = tail.read(0, 10);
      await jest.advanceTimersByTimeAsync(5);
      await first;
      for (let i = 0; i < 5; i++) source.add('run-a', 'ModelCallStarted');
      const page = tail.read(0, 10);
      await jest.advanceTimersByTimeAsync(1_000);
      expect((await page)!.events.map((e) => e.position)).toEqual([1, 2]);
      const reads = source.reads;

      const next = tail.read(2, 10);
      await jest.advanceTimersByTimeAsync(0);
      expect(source.reads).toBe(reads + 1);
      expect((await next)!.events.map((e) => e.position)).toEqual([3, 4]);
    });

    it('given a hurried read that an outage throws away, then the read after it is still hurried', async () => {
      jest.useFakeTimers();
      const source = new FakeSource();
      const tail = await gathering(source);
      source.add('run-a', 'ModelCallStarted');
      tail.hurry();
      const failing = jest.spyOn(source, 'readAfter').mockRejectedValueOnce(new StoreUnavailableError('gone'));
      const lost = tail.read(0, 10).catch((err: Error) => err);
      await jest.advanceTimersByTimeAsync(5);
      expect(await lost).toBeInstanceOf(StoreUnavailableError);
      failing.mockRestore();

      const again = tail.read(0, 10);
      await jest.advanceTimersByTimeAsync(5);
      expect((await again)!.events.map((e) => e.position)).toEqual([1]);
    });

    it('given an urgent reader that has not asked for longer than the interest TTL, then its events no longer cut the wait', async () => {
      jest.useFakeTimers();
      const source = new FakeSource();
      const tail = new SharedTail(source, { now: clock, gatherMs: 5, lazyGatherMs: 1_000, interestTtlMs: 30_000 });
      const first = tail.read(0, 10);
      await jest.advanceTimersByTimeAsync(5);
      await first;
      await tail.read(0, 10, { types: ['RunLaunched'] }, true);
      now += 30_001;
      // A read at the new time (stale, so at once), so that the next one gathers.
      await tail.read(0, 10);
      const reads = source.reads;
      source.add('run-a', 'RunLaunched');
      const waiting = tail.read(0, 10);
      tail.appended([{ streamId: 'run-a', type: 'RunLaunched' }]);
      await jest.advanceTimersByTimeAsync(500);
      expect(source.reads).toBe(reads);
      await jest.advanceTimersByTimeAsync(500);
      expect((await waiting)!.events.map((e) => e.position)).toEqual([1]);
    });
  });
});

