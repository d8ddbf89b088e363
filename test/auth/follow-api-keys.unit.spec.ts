import { API_KEYS_STREAM } from '../../src/auth/keys/api-key-events';
import { followApiKeys } from '../../src/auth/keys/follow-api-keys';
import type { ReadAllOptions, RecordedEvent } from '../../src/events/event-store/event-store.port';
import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import { waitFor } from '../support/wait-for';

/** A store whose next reads of the global order fail with an error the subscription does not wait out: it ends. */
class BreakingStore extends InMemoryEventStore {
  breaks = 0;
  override readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    if (this.breaks > 0) {
      this.breaks--;
      return Promise.reject(new Error('the connection was reset mid-read'));
    }
    return super.readAll(options);
  }
}

const keyAdded = (name: string) => ({ type: 'ApiKeyAdded', data: { name } });

describe('followApiKeys: the stored keys followed across faults', () => {
  const stop = new AbortController();
  afterAll(() => stop.abort());

  it('given subscriptions that fail twice, when keys are added around the faults, then each is applied once, in order, and each fault is reported', async () => {
    const store = new BreakingStore();
    await store.append(API_KEYS_STREAM, [keyAdded('ada')]);
    const applied: string[] = [];
    const faults: string[] = [];
    const following = followApiKeys(store, 0, {
      signal: stop.signal,
      backoff: { baseMs: 2, maxMs: 4 },
      apply: (e) => applied.push((e.data as { name: string }).name),
      onFault: (err) => faults.push((err as Error).message),
    });
    await waitFor('the first key', async () => applied.length === 1, 5_000, 5);

    store.breaks = 2;
    await store.append(API_KEYS_STREAM, [keyAdded('bob')]);
    await store.append(API_KEYS_STREAM, [keyAdded('cy')]);
    await waitFor('the keys added after the faults', async () => applied.length === 3, 5_000, 5);
    expect(applied).toEqual(['ada', 'bob', 'cy']);
    expect(faults).toEqual(['the connection was reset mid-read', 'the connection was reset mid-read']);

    stop.abort();
    await following;
  });
});
