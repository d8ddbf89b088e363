import { join } from 'node:path';
import { Pool } from 'pg';
import { InMemoryWebhookStore } from '../../src/webhooks/store/in-memory.webhook-store';
import { PostgresWebhookStore } from '../../src/webhooks/store/postgres.webhook-store';
import { SqliteWebhookStore } from '../../src/webhooks/store/sqlite.webhook-store';
import { dropSchema, freshSchema, PG_URL } from '../support/pg';
import { openWalDatabase } from '../support/sqlite';
import { tempDir } from '../support/temp-dir';
import { webhookStoreContract } from './webhook-store.contract';

// The three adapters of the webhook store through one contract: in memory, a real SQLite file,
// and PostgreSQL in a schema of its own (no skip when PostgreSQL is down: the suite fails).

webhookStoreContract('memory', async () => ({ store: new InMemoryWebhookStore(), cleanup: async () => undefined }));

webhookStoreContract('sqlite', async () => {
  const dir = tempDir('triad-webhooks-');
  const db = openWalDatabase(join(dir.path, 'triad.db'));
  return { store: new SqliteWebhookStore(db), cleanup: async () => (db.close(), dir.remove()) };
});

webhookStoreContract('postgres', async () => {
  const schema = freshSchema('triad_webhooks');
  const pool = new Pool({ connectionString: PG_URL, max: 2 });
  await pool.query(`CREATE SCHEMA "${schema}"`);
  return {
    store: new PostgresWebhookStore(pool, schema),
    cleanup: async () => {
      await pool.end();
      await dropSchema(schema);
    },
  };
});
