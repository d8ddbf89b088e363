import type { TriadConfig } from '../../config/config';
import { openStorage } from '../../storage/storage';
import { API_KEYS_STREAM, foldApiKeys } from './api-key-events';

/**
 * How many keys `triad keys add` has stored, read straight from the configured storage: `triad
 * serve` checks it before it starts (and before it drives any run), so it refuses to serve with no
 * key. The storage is opened for this read and closed again; the app opens its own.
 */
export async function countStoredApiKeys(config: TriadConfig): Promise<number> {
  const storage = await openStorage(config, { pgSchema: config.pgSchema });
  try {
    return foldApiKeys(await storage.events.readStream(API_KEYS_STREAM)).keys.size;
  } finally {
    await storage.close();
  }
}
