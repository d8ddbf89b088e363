import { Pool } from 'pg';
import { PostgresCheckpointStore } from '../../src/checkpoint/postgres.checkpoint-store';
import { quoteIdent } from '../../src/shared/postgres-tables';
import { dropSchema, freshSchema, PG_URL, withClient } from '../support/pg';
import { checkpointStoreContract } from './checkpoint-store.contract';

/** How this suite builds the adapter: its own constructor, on a pool, in the suite's schema. */
const makeAdapter = (pool: Pool, schema: string) => new PostgresCheckpointStore(pool, schema);

describe('postgres reachability (checkpoints)', () => {
  it(`PostgreSQL answers at TRIAD_PG_URL (${PG_URL.replace(/:[^:@/]*@/, ':***@')})`, async () => {
    const { rows } = await withClient((c) => c.query<{ ok: number }>('SELECT 1 AS ok'));
    expect(rows[0].ok).toBe(1);
  });
});

checkpointStoreContract('postgres', async () => {
  // No skip when PostgreSQL is down: creating the schema fails, and so does every test of the suite.
  const schema = freshSchema('triad_cp');
  await withClient((c) => c.query(`CREATE SCHEMA ${quoteIdent(schema)}`));
  const pools: Pool[] = [];
  return {
    // Each store on a pool of its own, as another process has.
    open: async () => {
      const pool = new Pool({ connectionString: PG_URL, max: 4, connectionTimeoutMillis: 5000 });
      pools.push(pool);
      return makeAdapter(pool, schema);
    },
    overwrite: async (runId, text) => {
      await withClient((c) => c.query(`UPDATE ${quoteIdent(schema)}.checkpoints SET body = $1 WHERE run_id = $2`, [text, runId]));
    },
    cleanup: async () => {
      for (const pool of pools) await pool.end();
      await dropSchema(schema);
    },
  };
});
