import type { EventStore, RecordedEvent } from '../../events/event-store/event-store.port';
import { followAcrossFaults, type StoreBackoff } from '../../events/outlast-store';
import { API_KEYS_STREAM } from './api-key-events';

/** The first wait before following the store again after the subscription failed (it grows while it fails). */
const RETRY_MS = 1000;

export interface FollowApiKeysOptions {
  /** Stops following (the subscription closes with it). */
  signal: AbortSignal;
  /** Takes each event of the keys' stream prefix, in order, once. */
  apply(event: RecordedEvent): void;
  /** Told of each fault that ended a subscription (following resumes after the last key seen). */
  onFault(err: unknown): void;
  backoff?: StoreBackoff;
}

/**
 * Follows the stored keys from `after` until `signal` aborts; if the subscription fails (a lost
 * connection), resumes after the last event applied, so no key is missed or applied twice.
 * Framework-free, apart from StoredApiKeys, so that its fault path is tested without Nest.
 */
export function followApiKeys(store: EventStore, after: number, options: FollowApiKeysOptions): Promise<void> {
  return followAcrossFaults({
    signal: options.signal,
    from: after,
    backoff: options.backoff ?? { baseMs: RETRY_MS },
    life: async (life) => {
      const sub = store.subscribe({ after: life.after, filter: { streamPrefixes: [API_KEYS_STREAM] }, batchSize: 100, urgent: true, signal: options.signal });
      for await (const e of sub) {
        options.apply(e);
        life.seen(e.position);
      }
    },
    onFault: (err) => options.onFault(err),
  });
}
