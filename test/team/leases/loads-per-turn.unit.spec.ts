import { LoadsPerTurn } from '../../../src/team/leases/loads-per-turn';
import { placeRun, type ProcessLoad } from '../../../src/team/dispatch/placement';

/** A store of adverts that counts its reads, and a turn that ends when the test says so. */
function given(loads: ProcessLoad[]) {
  let reads = 0;
  let endTurn: (() => void) | undefined;
  const cache = new LoadsPerTurn(
    async () => {
      reads++;
      return loads;
    },
    (callback) => (endTurn = callback),
  );
  return { cache, reads: () => reads, endTurn: () => endTurn?.() };
}

const me: ProcessLoad = { owner: 'me', active: 2, cap: 2 };

describe('LoadsPerTurn', () => {
  it('given launches placed in one turn, when each asks for the loads, then the store is read once', async () => {
    const { cache, reads } = given([{ owner: 'a', active: 0, cap: 5 }]);
    const answers = await Promise.all([cache.get(), cache.get(), cache.get()]);
    await cache.get();
    expect(reads()).toBe(1);
    expect(answers[0]).toEqual([{ owner: 'a', active: 0, cap: 5 }]);
  });

  it('given the turn is over, when the loads are asked for, then the store is read again', async () => {
    const { cache, reads, endTurn } = given([{ owner: 'a', active: 0, cap: 5 }]);
    await cache.get();
    endTurn();
    await cache.get();
    expect(reads()).toBe(2);
  });

  it('given runs handed from one read, when the next launch of the turn is placed, then it sees them and spreads', async () => {
    const { cache } = given([
      { owner: 'a', active: 1, cap: 5 },
      { owner: 'b', active: 1, cap: 5 },
    ]);
    const placements: string[] = [];
    for (let i = 0; i < 4; i++) {
      const loads = await cache.get();
      const placement = placeRun(me, loads);
      if (placement.kind !== 'hand') throw new Error(`expected a hand-off, got ${placement.kind}`);
      cache.handed(loads, placement.to);
      placements.push(placement.to);
    }
    expect(placements).toEqual(['a', 'b', 'a', 'b']);
  });

  it('given a process filled by hand-offs this turn, when another launch is placed, then it is queued, not handed past the cap', async () => {
    const { cache } = given([{ owner: 'a', active: 3, cap: 5 }]);
    const loads = await cache.get();
    expect(placeRun(me, loads)).toEqual({ kind: 'hand', to: 'a' });
    cache.handed(loads, 'a');
    expect(placeRun(me, await cache.get())).toEqual({ kind: 'hand', to: 'a' });
    cache.handed(loads, 'a');
    expect(placeRun(me, await cache.get())).toEqual({ kind: 'queue' });
  });

  it('given a hand-off undone (its lease not taken), then its slot counts as free again', async () => {
    const { cache } = given([{ owner: 'a', active: 4, cap: 5 }]);
    const loads = await cache.get();
    const undo = cache.handed(loads, 'a');
    expect(placeRun(me, await cache.get())).toEqual({ kind: 'queue' });
    undo();
    undo();
    expect(placeRun(me, await cache.get())).toEqual({ kind: 'hand', to: 'a' });
    expect(loads).toEqual([{ owner: 'a', active: 4, cap: 5 }]);
  });

  it('given a hand-off undone after its turn is over, then the next read is untouched', async () => {
    const { cache, endTurn } = given([{ owner: 'a', active: 4, cap: 5 }]);
    const undo = cache.handed(await cache.get(), 'a');
    endTurn();
    const next = await cache.get();
    undo();
    expect(next).toEqual([{ owner: 'a', active: 4, cap: 5 }]);
    expect(placeRun(me, next)).toEqual({ kind: 'hand', to: 'a' });
  });

  it('given a read in flight, when more launches ask (a later turn included), then they share it', async () => {
    let reads = 0;
    let answer: (loads: ProcessLoad[]) => void = () => undefined;
    const cache = new LoadsPerTurn(() => {
      reads++;
      return new Promise<ProcessLoad[]>((resolve) => (answer = resolve));
    });
    const first = cache.get();
    await new Promise((resolve) => setImmediate(resolve));
    const second = cache.get();
    answer([{ owner: 'a', active: 1, cap: 5 }]);
    expect(await first).toBe(await second);
    expect(reads).toBe(1);
    // The real turn ends (setImmediate): the next launch reads again.
    await new Promise((resolve) => setImmediate(resolve));
    void cache.get();
    expect(reads).toBe(2);
  });

  it('given the store read fails, then the failure is not kept: the next launch reads again', async () => {
    let reads = 0;
    const cache = new LoadsPerTurn(
      async () => {
        reads++;
        if (reads === 1) throw new Error('the event store is not reachable');
        return [];
      },
      () => undefined,
    );
    await expect(cache.get()).rejects.toThrow('not reachable');
    await expect(cache.get()).resolves.toEqual([]);
    expect(reads).toBe(2);
  });

  it('given the loads read, then hand-offs change a copy, not the rows the store answered', async () => {
    const rows = [{ owner: 'a', active: 0, cap: 5 }];
    const { cache } = given(rows);
    cache.handed(await cache.get(), 'a');
    expect(rows).toEqual([{ owner: 'a', active: 0, cap: 5 }]);
  });
});
