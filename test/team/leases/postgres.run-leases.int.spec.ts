import { Pool } from 'pg';
import { quoteIdent } from '../../../src/shared/postgres-tables';
import { PostgresRunLeases } from '../../../src/team/leases/run-leases';
import { dropSchema, freshSchema, PG_URL, withClient } from '../../support/pg';
import { runLeasesContract } from './run-leases.contract';

/** How this suite builds the adapter: its own constructor, on a pool, in the suite's schema. */
const makeAdapter = (pool: Pool, schema: string) => new PostgresRunLeases(pool, schema);

describe('postgres reachability (run leases)', () => {
  it(`PostgreSQL answers at TRIAD_PG_URL (${PG_URL.replace(/:[^:@/]*@/, ':***@')})`, async () => {
    const { rows } = await withClient((c) => c.query<{ ok: number }>('SELECT 1 AS ok'));
    expect(rows[0].ok).toBe(1);
  });
});

runLeasesContract(
  'postgres',
  async () => {
    // No skip when PostgreSQL is down: creating the schema fails, and so does every test of the suite.
    const schema = freshSchema('triad_leases');
    await withClient((c) => c.query(`CREATE SCHEMA ${quoteIdent(schema)}`));
    const pools: Pool[] = [];
    return {
      // Each handle on a pool of its own, as another process has.
      open: async () => {
        const pool = new Pool({ connectionString: PG_URL, max: 2, connectionTimeoutMillis: 5000 });
        pools.push(pool);
        return makeAdapter(pool, schema);
      },
      cleanup: async () => {
        for (const pool of pools) await pool.end();
        await dropSchema(schema);
      },
    };
  },
  { contenders: 16 },
);
