import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import { quoteIdent } from '../../../src/shared/postgres-tables';
import { PostgresRunLeases } from '../../../src/team/leases/postgres.run-leases';
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

describe('postgres run leases: the owner index', () => {
  it('given a run_leases table made before the index, when a process first uses it, then the index is added and leases read as before', async () => {
    const schema = freshSchema('triad_leases_idx');
    const q = quoteIdent(schema);
    await withClient((c) => c.query(`CREATE SCHEMA ${q}; CREATE TABLE ${q}.run_leases (run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at BIGINT NOT NULL)`));
    await withClient((c) => c.query(`INSERT INTO ${q}.run_leases VALUES ('run_a', 'p1', 9999999999999)`));
    const pool = new Pool({ connectionString: PG_URL, max: 2, connectionTimeoutMillis: 5000 });
    try {
      const leases = makeAdapter(pool, schema);
      await leases.advertise({ owner: 'p1', active: 0, cap: 5 }, 60_000, Date.now());
      expect(await leases.loads(Date.now())).toEqual([{ owner: 'p1', active: 1, cap: 5 }]);
      const { rows } = await withClient((c) => c.query<{ indexdef: string }>('SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2', [schema, 'run_leases']));
      expect(rows.map((r) => r.indexdef)).toEqual(expect.arrayContaining([expect.stringMatching(/run_leases_owner ON .* \(owner, expires_at\)/)]));
    } finally {
      await pool.end();
      await dropSchema(schema);
    }
  });

  it('given tables another role owns, when a role that may only write them uses the leases, then leases work without the index', async () => {
    const schema = freshSchema('triad_leases_role');
    const role = `${schema}_writer`;
    const password = randomBytes(12).toString('hex');
    const q = quoteIdent(schema);
    await withClient((c) =>
      c.query(`CREATE SCHEMA ${q};
        CREATE TABLE ${q}.run_leases (run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at BIGINT NOT NULL);
        CREATE TABLE ${q}.process_loads (owner TEXT PRIMARY KEY, active INTEGER NOT NULL, cap INTEGER NOT NULL, expires_at BIGINT NOT NULL);
        CREATE ROLE ${quoteIdent(role)} LOGIN PASSWORD '${password}';
        GRANT USAGE ON SCHEMA ${q} TO ${quoteIdent(role)};
        GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${q} TO ${quoteIdent(role)};`),
    );
    const url = new URL(PG_URL);
    url.username = role;
    url.password = password;
    const pool = new Pool({ connectionString: url.toString(), max: 2, connectionTimeoutMillis: 5000 });
    try {
      const warnings: string[] = [];
      const leases = new PostgresRunLeases(pool, schema, { warn: (m) => warnings.push(m) });
      expect(await leases.tryAcquire('run_a', 'p1', 60_000, Date.now())).toBe(true);
      expect(await leases.tryAcquire('run_a', 'p2', 60_000, Date.now())).toBe(false);
      await leases.advertise({ owner: 'p1', active: 0, cap: 5 }, 60_000, Date.now());
      expect(await leases.loads(Date.now())).toEqual([{ owner: 'p1', active: 1, cap: 5 }]);
      expect(warnings).toEqual([expect.stringMatching(/index run_leases_owner is missing and this role may not create it/)]);
    } finally {
      await pool.end();
      try {
        await dropSchema(schema);
      } finally {
        await withClient((c) => c.query(`DROP ROLE IF EXISTS ${quoteIdent(role)}`));
      }
    }
  });
});
