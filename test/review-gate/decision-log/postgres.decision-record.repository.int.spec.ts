import { Pool } from 'pg';
import { POSTGRES_DECISION_LOG_SCHEMA_VERSION, PostgresDecisionRecordRepository } from '../../../src/review-gate/decision-log/postgres.decision-record.repository';
import { openStorage, type Storage } from '../../../src/storage/storage';
import { decisionRecordRepositoryContract } from './decision-record.repository.contract';
import { dropSchema, freshSchema, PG_URL, withClient } from '../../support/pg';

describe('postgres reachability (decision log)', () => {
  it(`PostgreSQL answers at TRIAD_PG_URL (${PG_URL.replace(/:[^:@/]*@/, ':***@')})`, async () => {
    const { rows } = await withClient((c) => c.query<{ ok: number }>('SELECT 1 AS ok'));
    expect(rows[0].ok).toBe(1);
  });
});

/** How this suite builds the adapter: its own constructor (open migrates), on a pool, in the test's schema. */
const makeAdapter = (pool: Pool, schema: string) => PostgresDecisionRecordRepository.open(pool, schema);

decisionRecordRepositoryContract(
  'postgres',
  () => {
    // A schema of its own for each test: the log is one chain per database, and each test starts empty.
    const schema = freshSchema('triad_dl');
    const pools: Pool[] = [];
    // Each repository on a pool of its own, as another process has.
    const open = async () => {
      const pool = new Pool({ connectionString: PG_URL, max: 4, connectionTimeoutMillis: 5000 });
      pools.push(pool);
      return makeAdapter(pool, schema);
    };
    return {
      open,
      openAnother: open,
      cleanup: async () => {
        for (const pool of pools) await pool.end();
        await dropSchema(schema);
      },
    };
  },
  { writers: 4, events: 150 },
);

describe('postgres decision records specifics', () => {
  let schema: string;
  const stores: Storage[] = [];
  const connect = async () => {
    const storage = await openStorage({ store: 'postgres', pgUrl: PG_URL, dataDir: '/nonexistent' }, { pgSchema: schema, pgPoolSize: 2 });
    stores.push(storage);
    return storage.decisions;
  };
  beforeEach(() => (schema = freshSchema('triad_dl')));
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    await dropSchema(schema);
  });

  it('live in the event store schema, with their own schema version table; concurrent opens migrate once', async () => {
    const opened = await Promise.all(Array.from({ length: 4 }, () => connect()));
    expect(opened[0]).toBeInstanceOf(PostgresDecisionRecordRepository);
    const { rows } = await withClient((c) =>
      c.query<{ table_name: string }>(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`, [schema]),
    );
    expect(rows.map((r) => r.table_name)).toEqual(expect.arrayContaining(['events', 'decision_records', 'decision_log_migrations']));
    const versions = await withClient((c) => c.query(`SELECT version FROM "${schema}".decision_log_migrations`));
    expect(versions.rows).toEqual(Array.from({ length: POSTGRES_DECISION_LOG_SCHEMA_VERSION }, (_, i) => ({ version: i + 1 })));
  });

  it('refuses a decision log schema newer than this build', async () => {
    await connect();
    await withClient((c) => c.query(`INSERT INTO "${schema}".decision_log_migrations (version, applied_at) VALUES (99, now())`));
    await expect(connect()).rejects.toThrow(/newer than this triad/);
  });
});
