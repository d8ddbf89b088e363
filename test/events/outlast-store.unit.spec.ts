import { StoreUnavailableError, WrongExpectedRevisionError } from '../../src/events/errors';
import { backoffMs, followAcrossFaults, untilStoreAnswers, type FollowLife } from '../../src/events/outlast-store';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
/** Pauses of a millisecond or two: the tests wait for the store, not for the clock. */
const fast = { baseMs: 2, maxMs: 4 };

/** An operation against a store that fails `n` times with `fault`, then answers `value`. */
function failing<T>(n: number, value: T, fault: () => unknown = refused) {
  const calls = { count: 0 };
  const op = async () => {
    calls.count++;
    if (calls.count <= n) throw fault();
    return value;
  };
  return { op, calls };
}

describe('untilStoreAnswers: one operation, retried until the store answers', () => {
  it('given a store that fails three times, then answers, the operation succeeds once, after three reported faults', async () => {
    const { op, calls } = failing(3, 'answer');
    const faults: number[] = [];
    await expect(untilStoreAnswers(op, { backoff: fast, onFault: (_, attempt) => faults.push(attempt) })).resolves.toBe('answer');
    expect(calls.count).toBe(4);
    expect(faults).toEqual([1, 2, 3]);
  });

  it.each([
    ['a conflict', () => new WrongExpectedRevisionError('run-x', 3, 4)],
    ['bad input', () => new Error('invalid stream name')],
  ])('given %s, it is not retried: the error is the caller’s at once', async (_, fault) => {
    const { op, calls } = failing(1, 'answer', fault);
    const faults: unknown[] = [];
    await expect(untilStoreAnswers(op, { backoff: fast, onFault: (err) => faults.push(err) })).rejects.toThrow();
    expect(calls.count).toBe(1);
    expect(faults).toEqual([]);
  });

  it('given a store gone away, when the caller aborts during the wait, then it stops with the last fault', async () => {
    const stop = new AbortController();
    let calls = 0;
    const op = async () => {
      calls++;
      throw new StoreUnavailableError('ECONNRESET');
    };
    // A long pause, cut short by the abort that the first fault triggers.
    const retrying = untilStoreAnswers(op, { signal: stop.signal, backoff: { baseMs: 60_000 }, onFault: () => stop.abort() });
    await expect(retrying).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(calls).toBe(1);
  });

  it('given a bounded number of attempts, when every one fails, then the last error is rethrown', async () => {
    const { op, calls } = failing(10, 'answer');
    await expect(untilStoreAnswers(op, { backoff: fast, attempts: 3 })).rejects.toThrow('ECONNREFUSED');
    expect(calls.count).toBe(3);
  });

  it('given a caller that retries every error, a logical one is retried too', async () => {
    const { op } = failing(2, 'answer', () => new Error('reaction failed'));
    await expect(untilStoreAnswers(op, { backoff: fast, retryOn: () => true })).resolves.toBe('answer');
  });

  it('the backoff grows from the caller’s base to its cap, with jitter', () => {
    const top = { baseMs: 200, maxMs: 1_000, random: () => 1 };
    expect([1, 2, 3, 4, 5].map((a) => backoffMs(a, top))).toEqual([200, 400, 800, 1_000, 1_000]);
    expect(backoffMs(1, { baseMs: 200, random: () => 0 })).toBe(100);
    // A cap below the base is raised to it.
    expect(backoffMs(3, { baseMs: 6_000, maxMs: 10, random: () => 1 })).toBe(6_000);
  });
});

/**
 * A store's global order, positions 1..`count`, read through subscriptions that fail with a store
 * fault when they reach one of `faultsAt` (each fault happens once, as a dropped connection does).
 */
function eventsWithFaults(count: number, faultsAt: number[]) {
  const pending = new Set(faultsAt);
  const subscriptions: Array<number | undefined> = [];
  async function* subscribe(after: number | undefined): AsyncGenerator<number> {
    subscriptions.push(after);
    for (let position = (after ?? 0) + 1; position <= count; position++) {
      await Promise.resolve();
      if (pending.delete(position)) throw new StoreUnavailableError('Connection terminated unexpectedly');
      yield position;
    }
  }
  return { subscribe, subscriptions };
}

describe('followAcrossFaults: a subscription followed across store faults', () => {
  it('given faults in the middle of the order, every event is handled once, in order, each life starting after the last one seen', async () => {
    const store = eventsWithFaults(10, [3, 7, 8]);
    const handled: number[] = [];
    const faults: number[] = [];
    await followAcrossFaults({
      signal: new AbortController().signal,
      backoff: fast,
      life: async ({ after, seen }: FollowLife) => {
        for await (const position of store.subscribe(after)) {
          handled.push(position);
          seen(position);
        }
      },
      onFault: (_, inARow) => faults.push(inARow),
    });
    expect(handled).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(store.subscriptions).toEqual([undefined, 2, 6, 7]);
    // Each life saw an event before it failed: every fault is the first in a row, with the shortest pause.
    expect(faults).toEqual([1, 1, 1]);
  });

  it('given a store that is away for a while, the lives fail in a row, then it resumes where it stopped, and says it resumed', async () => {
    let away = 4;
    const faults: number[] = [];
    const lives: Array<{ after: number | undefined; resumed: boolean }> = [];
    const handled: number[] = [];
    await followAcrossFaults({
      signal: new AbortController().signal,
      from: 5,
      backoff: fast,
      life: async ({ after, resumed, seen }) => {
        lives.push({ after, resumed });
        if (away-- > 0) throw refused();
        for (const position of [6, 7]) {
          handled.push(position);
          seen(position);
        }
      },
      onFault: (_, inARow) => faults.push(inARow),
    });
    expect(handled).toEqual([6, 7]);
    expect(faults).toEqual([1, 2, 3, 4]);
    expect(lives).toEqual([{ after: 5, resumed: false }, ...Array.from({ length: 4 }, () => ({ after: 5, resumed: true }))]);
  });

  it('given an abort while it waits out a fault, it stops without another life', async () => {
    const stop = new AbortController();
    let lives = 0;
    await followAcrossFaults({
      signal: stop.signal,
      backoff: { baseMs: 60_000 },
      life: async () => {
        lives++;
        throw refused();
      },
      onFault: () => stop.abort(),
    });
    expect(lives).toBe(1);
  });

  it('given an error that the abort itself caused, it is not reported as a fault', async () => {
    const stop = new AbortController();
    const faults: unknown[] = [];
    await followAcrossFaults({
      signal: stop.signal,
      life: async () => {
        stop.abort();
        throw new Error('subscription closed');
      },
      onFault: (err) => faults.push(err),
    });
    expect(faults).toEqual([]);
  });
});
