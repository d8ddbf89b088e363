import { GroupCommit, settleOneByOne, takeUpTo, type Waiting } from '../../src/shared/group-commit';

/** A batch writer the test completes by hand, recording each batch it was given. */
function heldWriter() {
  const batches: Array<Array<Waiting<number, string>>> = [];
  const done: Array<(error?: Error) => void> = [];
  const write = (batch: Array<Waiting<number, string>>) => {
    batches.push(batch);
    return new Promise<void>((resolve, reject) =>
      done.push((error) => {
        if (error) return reject(error);
        for (const w of batch) w.resolve(`wrote ${w.item}`);
        resolve();
      }),
    );
  };
  return { batches, done, write, items: (i: number) => batches[i].map((w) => w.item) };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('GroupCommit: writes made while a batch is in flight go together', () => {
  it('given nothing in flight, when writes are made in one turn, then they go as one batch at the next turn', async () => {
    const writer = heldWriter();
    const group = new GroupCommit(writer.write, (w) => w.length);
    const results = [group.push(1), group.push(2)];
    expect(writer.batches).toHaveLength(0);
    await turn();
    expect(writer.items(0)).toEqual([1, 2]);
    writer.done[0]();
    await expect(Promise.all(results)).resolves.toEqual(['wrote 1', 'wrote 2']);
  });

  it('given a batch in flight, when more writes are made, then they wait and go together once it is written', async () => {
    const writer = heldWriter();
    const group = new GroupCommit(writer.write, (w) => w.length);
    const first = group.push(1);
    await turn();
    const later = [group.push(2), group.push(3)];
    await turn();
    expect(writer.batches).toHaveLength(1);
    writer.done[0]();
    await first;
    await turn();
    expect(writer.items(1)).toEqual([2, 3]);
    writer.done[1]();
    await expect(Promise.all(later)).resolves.toEqual(['wrote 2', 'wrote 3']);
  });

  it('given a take limit, then the waiting writes go in batches of that size, in the order made', async () => {
    const writer = heldWriter();
    const group = new GroupCommit(writer.write, (w) => takeUpTo(w, 2, Infinity, () => 1));
    const all = [1, 2, 3, 4, 5].map((n) => group.push(n));
    for (let i = 0; i < 3; i++) {
      await turn();
      writer.done[i]();
      await turn();
    }
    await Promise.all(all);
    expect(writer.batches.map((b) => b.map((w) => w.item))).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('given a batch write that throws, then its writes are rejected and the next batch still goes', async () => {
    const writer = heldWriter();
    const group = new GroupCommit(writer.write, (w) => w.length);
    const failed = group.push(1);
    await turn();
    const next = group.push(2);
    writer.done[0](new Error('connection terminated'));
    await expect(failed).rejects.toThrow('connection terminated');
    await turn();
    writer.done[1]();
    await expect(next).resolves.toBe('wrote 2');
  });

  it('given a take that throws, then what waits is rejected, and the group is idle and takes writes again', async () => {
    const writer = heldWriter();
    let fail = true;
    const group = new GroupCommit(writer.write, (w) => {
      if (fail) throw new Error('take failed');
      return w.length;
    });
    const stuck = [group.push(1), group.push(2)];
    await expect(Promise.all(stuck)).rejects.toThrow('take failed');
    await group.idle();
    fail = false;
    const next = group.push(3);
    await turn();
    writer.done[0]();
    await expect(next).resolves.toBe('wrote 3');
  });

  it('idle resolves once nothing waits and nothing is in flight', async () => {
    const writer = heldWriter();
    const group = new GroupCommit(writer.write, (w) => w.length);
    await group.idle();
    const written = group.push(1);
    let idle = false;
    const idling = group.idle().then(() => (idle = true));
    await turn();
    expect(idle).toBe(false);
    writer.done[0]();
    await written;
    await idling;
    expect(idle).toBe(true);
  });

  it('settleOneByOne: each write settles on its own; after an outage the rest fail at once, unwritten', async () => {
    const settled: string[] = [];
    const waiting = [1, 2, 3, 4].map((item) => ({
      item,
      resolve: (r: string) => settled.push(r),
      reject: (e: unknown) => settled.push(`failed ${item}: ${(e as Error).message}`),
    }));
    const written: number[] = [];
    const outage = new Error('store gone');
    await settleOneByOne(
      waiting,
      async (n) => {
        written.push(n);
        if (n === 1) throw new Error('conflict');
        if (n === 3) throw outage;
        return `wrote ${n}`;
      },
      (e) => e === outage,
    );
    expect(settled).toEqual(['failed 1: conflict', 'wrote 2', 'failed 3: store gone', 'failed 4: store gone']);
    expect(written).toEqual([1, 2, 3]);
  });

  it('takeUpTo: at most the count and the bytes, the first write always', () => {
    const waiting = [5, 5, 5, 5].map((item) => ({ item, resolve: () => undefined, reject: () => undefined }));
    expect(takeUpTo(waiting, 3, 100, (n) => n)).toBe(3);
    expect(takeUpTo(waiting, 10, 12, (n) => n)).toBe(2);
    expect(takeUpTo(waiting, 10, 1, (n) => n)).toBe(1);
  });
});
