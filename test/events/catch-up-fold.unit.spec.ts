import { CatchUpFold } from '../../src/events/catch-up-fold';
import type { ReadAllOptions, RecordedEvent } from '../../src/events/event-store/event-store.port';
import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import { HealthRegistry } from '../../src/shared/health';
import { waitFor } from '../support/wait-for';

/** A store whose reads of the global order fail while `down` is set, as a store gone away does. */
class FlakyStore extends InMemoryEventStore {
  down = false;
  override readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    if (this.down) return Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
    return super.readAll(options);
  }
}

const quiet = { log: () => undefined, error: () => undefined };
const ev = (type: string) => ({ type, data: {} });

describe('CatchUpFold: the engine of the in-memory read models', () => {
  let folds: CatchUpFold[] = [];
  afterEach(() => {
    for (const f of folds) f.close();
    folds = [];
  });

  function foldOf(store: InMemoryEventStore, health: HealthRegistry): { fold: CatchUpFold; seen: number[] } {
    const seen: number[] = [];
    const fold = new CatchUpFold(store, health, 'things', (e) => seen.push(e.position), quiet);
    folds.push(fold);
    return { fold, seen };
  }

  it('given events in the store, when it starts, then catchUp resolves once every event is folded, each once and in order', async () => {
    const store = new InMemoryEventStore();
    await store.append('a', [ev('A1'), ev('A2')]);
    await store.append('b', [ev('B1')]);
    const { fold, seen } = foldOf(store, new HealthRegistry());
    fold.start();
    await fold.catchUp();
    expect(seen).toEqual([1, 2, 3]);
    await store.append('a', [ev('A3')], { expectedRevision: 1 });
    await fold.catchUp();
    expect(seen).toEqual([1, 2, 3, 4]);
  });

  it('given the store goes away for a while, then the fold waits for it and goes on: every event folded once, in order', async () => {
    const store = new FlakyStore();
    await store.append('a', [ev('A1')]);
    const { fold, seen } = foldOf(store, new HealthRegistry());
    fold.start();
    await fold.catchUp();
    store.down = true;
    await store.append('a', [ev('A2')], { expectedRevision: 0 });
    await expect(fold.catchUp(200)).rejects.toThrow('the things read model is behind the store');
    store.down = false;
    await fold.catchUp(15_000);
    expect(seen).toEqual([1, 2]);
  });

  it('given folding fails on an event, then catchUp fails with the reason and /health says so; it restarts after the last event folded, and folds each once', async () => {
    const store = new InMemoryEventStore();
    const health = new HealthRegistry();
    await store.append('a', [ev('A1'), ev('A2'), ev('A3')]);
    const seen: number[] = [];
    let broken = true;
    const fold = new CatchUpFold(store, health, 'things', (e) => {
      if (e.position === 2 && broken) throw new Error('a bug in the fold');
      seen.push(e.position);
    }, quiet);
    folds.push(fold);
    fold.start();
    await waitFor('the fold to report its failure', async () => health.assess().reasons.includes('projection things is failing: a bug in the fold'), 10_000);
    await expect(fold.catchUp()).rejects.toThrow('the things read model is failing: a bug in the fold');
    // It restarts by itself after a backoff, from after the last event it folded.
    broken = false;
    await waitFor('the fold to restart', async () => !health.assess().reasons.some((r) => r.includes('things')), 15_000);
    await fold.catchUp();
    expect(seen).toEqual([1, 2, 3]);
  });

  it('given a filter, then it folds only the events that match, and catchUp resolves once the scan passes the head even when the last events did not match', async () => {
    const store = new InMemoryEventStore();
    await store.append('run-a', [ev('Wanted'), ev('Other')]);
    await store.append('keys', [ev('Wanted')]);
    const seen: number[] = [];
    const fold = new CatchUpFold(store, new HealthRegistry(), 'things', (e) => seen.push(e.position), quiet, { streamPrefixes: ['run-'], types: ['Wanted'] });
    folds.push(fold);
    fold.start();
    await fold.catchUp();
    expect(seen).toEqual([1]);
    await store.append('run-a', [ev('Other'), ev('Other')], { expectedRevision: 1 });
    // Nothing new to fold, and still caught up with the head (position 5), without waiting out the deadline.
    await fold.catchUp(2_000);
    await store.append('run-a', [ev('Wanted')], { expectedRevision: 3 });
    await fold.catchUp(2_000);
    expect(seen).toEqual([1, 6]);
  });
});

