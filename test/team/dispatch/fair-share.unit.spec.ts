import { FairShare } from '../../../src/team/dispatch/fair-share';

const macrotask = () => new Promise<void>((r) => setImmediate(r));

describe('FairShare: time-slicing run drivers on one event loop', () => {
  it('given a lone caller inside its slice, when it asks for a turn, then it goes on without waiting', async () => {
    let now = 0;
    const share = new FairShare(4, () => now);
    // The first turn opens a slice.
    await share.turn();
    now = 1;
    expect(share.turn()).toBeUndefined();
    now = 3.9;
    expect(share.turn()).toBeUndefined();
    now = 4;
    // The slice is spent: the caller waits for the next one, after the loop has turned.
    expect(share.turn()).toBeInstanceOf(Promise);
  });

  it('given many steps ready at once, then each slice runs only what fits in its time, in order, and the loop turns between slices', async () => {
    let now = 0;
    const share = new FairShare(4, () => now);
    const log: string[] = [];
    // 10 runs each wanting one 1 ms step.
    const runs = Array.from({ length: 10 }, async (_, i) => {
      await share.turn();
      log.push(`run${i}`);
      now += 1;
    });
    // Something else waiting on the loop (an HTTP request, a heartbeat) between slices.
    const other = (async () => {
      for (let k = 0; k < 4; k++) {
        await macrotask();
        log.push('loop');
      }
    })();
    await Promise.all([...runs, other]);
    const order = log.filter((l) => l !== 'loop');
    expect(order).toEqual(Array.from({ length: 10 }, (_, i) => `run${i}`));
    // Never more than a slice's worth of steps (4 ms = 4 steps) without the loop turning.
    const bursts = log.join(' ').split('loop').map((part) => part.trim().split(/\s+/).filter(Boolean).length);
    expect(Math.max(...bursts)).toBeLessThanOrEqual(4);
    expect(share.slices).toBeGreaterThanOrEqual(3);
  });

  it('given a released step that then waits for I/O, then the next waiters are released anyway', async () => {
    const now = 0;
    const share = new FairShare(4, () => now);
    let ioDone!: () => void;
    const io = new Promise<void>((r) => (ioDone = r));
    const done: number[] = [];
    const first = (async () => {
      await share.turn();
      await io; // never asks for another turn until the I/O completes
      done.push(0);
    })();
    const others = [1, 2, 3].map(async (i) => {
      await share.turn();
      done.push(i);
    });
    await Promise.all(others);
    expect(done).toEqual([1, 2, 3]);
    ioDone();
    await first;
    expect(done).toEqual([1, 2, 3, 0]);
    expect(share.waiting).toBe(0);
  });
});
