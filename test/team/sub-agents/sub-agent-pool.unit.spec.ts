import { SubAgentPool } from '../../../src/team/driver/sub-agent-pool';

describe('the process pool of sub-agent slots', () => {
  it('given the process limit reached, when more ask, then they queue and get freed slots by priority', async () => {
    const pool = new SubAgentPool({ perProcess: 2, perParent: 2 });
    const signal = new AbortController().signal;
    const a = pool.request({ id: 'a', parent: 'p', priority: 5 }, signal);
    const b = pool.request({ id: 'b', parent: 'q', priority: 5 }, signal);
    const low = pool.request({ id: 'low', parent: 'r', priority: 9 }, signal);
    const high = pool.request({ id: 'high', parent: 's', priority: 1 }, signal);
    expect([a.immediate, b.immediate, low.immediate, high.immediate]).toEqual([true, true, false, false]);
    expect([pool.runningCount, pool.waitingCount]).toEqual([2, 2]);
    const granted: string[] = [];
    void high.ready.then(() => granted.push('high'));
    void low.ready.then(() => granted.push('low'));
    (await a.ready)();
    await Promise.resolve();
    expect(granted).toEqual(['high']);
    (await b.ready)();
    await new Promise((r) => setImmediate(r));
    expect(granted).toEqual(['high', 'low']);
  });

  it('when a queued request is aborted, then it leaves the queue', async () => {
    const pool = new SubAgentPool({ perProcess: 1, perParent: 1 });
    pool.request({ id: 'a', parent: 'p', priority: 5 }, new AbortController().signal);
    const stop = new AbortController();
    const queued = pool.request({ id: 'b', parent: 'q', priority: 5 }, stop.signal);
    stop.abort();
    await expect(queued.ready).rejects.toThrow('stopped while queued');
    expect(pool.waitingCount).toBe(0);
  });
});
