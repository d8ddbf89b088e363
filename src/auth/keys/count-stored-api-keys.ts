import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import type { TriadConfig } from '../../config/config';
import { quoteIdent } from '../../shared/postgres-tables';
import { openStorage } from '../../storage/storage';
import { normaliseName } from '../names';
import { API_KEYS_STREAM } from './api-key-events';

/**
 * How many keys `triad keys add` has stored, read straight from the configured storage: `triad
 * serve` checks it before it starts (and before it drives any run), so it refuses to serve with no
 * key. The storage is opened for this read and closed again; the app opens its own.
 */
export async function countStoredApiKeys(config: TriadConfig): Promise<number> {
  // A store that was never created holds no key, and is not created by this look.
  if (!(await storeExists(config))) return 0;
  const storage = await openStorage(config, { pgSchema: config.pgSchema });
  try {
    // Names, not trusted keys: this runs before the process has its signing key, and only asks
    // whether serving would lock everyone out. Which keys work is the app's StoredApiKeys' call.
    const events = await storage.events.readStream(API_KEYS_STREAM);
    return new Set(events.filter((e) => e.type === 'ApiKeyAdded' || e.type === 'ApiKeyReplaced').map((e) => normaliseName(String((e.data as { name: unknown }).name)))).size;
  } finally {
    await storage.close();
  }
}

/** Whether the configured store has been created (SQLite: its file; PostgreSQL: its events table). */
async function storeExists(config: TriadConfig): Promise<boolean> {
  if (config.store === 'sqlite') return existsSync(join(config.dataDir, 'triad.db'));
  if (config.store !== 'postgres' || !config.pgUrl) return true;
  const client = new Client({ connectionString: config.pgUrl, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
    const found = await client.query<{ table: string | null }>('SELECT to_regclass($1) AS table', [`${quoteIdent(config.pgSchema ?? 'public')}.events`]);
    return found.rows[0]?.table !== null;
  } finally {
    // The count is known (or its error thrown); a connection that does not close cleanly is the server's to drop.
    await client.end().catch(() => undefined);
  }
}
