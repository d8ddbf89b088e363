import Database from 'better-sqlite3';
import { join } from 'node:path';
import { Pool } from 'pg';
import { StoreUnavailableError } from '../../src/events/errors';
import { LeaseHeartbeat } from '../../src/team/leases/lease-heartbeat';
import { InMemoryRunLeases, PostgresRunLeases, SqliteRunLeases, type RunLeases } from '../../src/team/leases/run-leases';
import { dropSchema, freshSchema, PG_URL } from '../support/pg';
import { tempDir } from '../support/temp-dir';

// Lease renewal is one statement per process per heartbeat, and only a lease taken by another
// process stops a driver; a renewal the store does not answer stops nothing.

describe.each([
  ['SQLite', async () => {
    const dir = tempDir('triad-leases-');
    const db = new Database(join(dir.path, 'leases.db'));
    return { leases: new SqliteRunLeases(db) as RunLeases, done: async () => (db.close(), dir.remove()) };
  }],
  ['PostgreSQL', async () => {
    const schema = freshSchema('triad_leases');
    const pool = new Pool({ connectionString: PG_URL, max: 2 });
    await pool.query(`CREATE SCHEMA "${schema}"`);
    return { leases: new PostgresRunLeases(pool, schema) as RunLeases, done: async () => (await dropSchema(schema), await pool.end()) };
  }],
])('renewing all of a process\'s leases at once (%s)', (_, open) => {
  it('extends the leases it holds and reports the ones another owner took', async () => {
    const { leases, done } = await open();
    try {
      const t0 = 1_000_000;
      for (const id of ['r1', 'r2', 'r3']) expect(await leases.tryAcquire(id, 'A', 1000, t0)).toBe(true);
      expect(await leases.tryAcquire('r4', 'B', 1000, t0)).toBe(true);
      // r3 expires and B takes it.
      expect(await leases.tryAcquire('r3', 'B', 1000, t0 + 1500)).toBe(true);
      const held = await leases.renewAll(['r1', 'r2', 'r3', 'r4'], 'A', 1000, t0 + 1600);
      expect([...held].sort()).toEqual(['r1', 'r2']);
      expect(await leases.holder('r1', t0 + 2500)).toBe('A');
      expect(await leases.holder('r3', t0 + 2000)).toBe('B');
      expect(await leases.renewAll([], 'A', 1000, t0)).toEqual(new Set());
    } finally {
      await done();
    }
  });
});

/** Leases whose renewal the test controls; counts the statements. */
class ControlledLeases extends InMemoryRunLeases {
  renewals = 0;
  failRenewals = false;
  takenByOthers = new Set<string>();
  override async renewAll(runIds: string[], owner: string, ttlMs: number, nowMs: number): Promise<Set<string>> {
    this.renewals++;
    if (this.failRenewals) throw new StoreUnavailableError('read ECONNRESET');
    const held = await super.renewAll(runIds, owner, ttlMs, nowMs);
    for (const id of this.takenByOthers) held.delete(id);
    return held;
  }
}

describe('the lease heartbeat', () => {
  it('renews in one statement for all runs; a failed renewal stops nothing; a lease taken elsewhere stops its driver', async () => {
    const leases = new ControlledLeases();
    const lost: string[] = [];
    const heartbeat = new LeaseHeartbeat({ leases, owner: 'A', ttlMs: 60_000, now: () => Date.now(), onLost: (id) => lost.push(id) });
    try {
      for (const id of ['run_hb1', 'run_hb2', 'run_hb3']) {
        expect(await leases.tryAcquire(id, 'A', 60_000, Date.now())).toBe(true);
        heartbeat.add(id);
      }
      leases.failRenewals = true;
      await heartbeat.renew();
      expect(leases.renewals).toBe(1);
      expect(lost).toEqual([]);

      leases.failRenewals = false;
      leases.takenByOthers.add('run_hb2');
      await heartbeat.renew();
      expect(leases.renewals).toBe(2);
      expect(lost).toEqual(['run_hb2']);
      // Reported once; the other two are still renewed.
      leases.takenByOthers.clear();
      await heartbeat.renew();
      expect(lost).toEqual(['run_hb2']);
      expect(heartbeat.metricLines()).toEqual(
        expect.arrayContaining(['triad_leases_lost_total 1', 'triad_lease_renewal_failures_total 1', 'triad_lease_renewals_total 2']),
      );
    } finally {
      heartbeat.stop();
    }
  });
});
