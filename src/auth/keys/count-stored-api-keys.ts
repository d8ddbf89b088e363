import type { TriadConfig } from '../../config/config';
import { createEventStore } from '../../events/event-store.factory';
import { API_KEYS_STREAM, foldApiKeys } from './api-key-events';

/**
 * How many keys `triad keys add` has stored, read straight from the configured store: `triad serve`
 * checks it before it starts (and before it drives any run), so it refuses to serve with no key.
 */
export async function countStoredApiKeys(config: TriadConfig): Promise<number> {
  const store = await createEventStore(config, { pgSchema: config.pgSchema });
  try {
    return foldApiKeys(await store.readStream(API_KEYS_STREAM)).keys.size;
  } finally {
    await store.close();
  }
}
