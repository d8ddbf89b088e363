import { StoreUnavailableError } from '../../src/events/errors';
import { LeaseHeartbeat } from '../../src/team/leases/lease-heartbeat';
import { InMemoryRunLeases } from '../../src/team/leases/in-memory.run-leases';

// Lease renewal is one statement per process per heartbeat, and only a lease taken by another
// process stops a driver; a renewal the store does not answer stops nothing. What renewAll does in
// each store is the run leases contract's (test/team/leases/run-leases.contract.ts).

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
      expect(heartbeat.figures()).toMatchObject({ leasesLost: 1, renewalFailures: 1, renewals: 2 });
    } finally {
      heartbeat.stop();
    }
  });

  it('given a driver fenced by another process\'s claim before any renewal noticed, then the lease counts as lost once', async () => {
    const heartbeat = new LeaseHeartbeat({ leases: new ControlledLeases(), owner: 'A', ttlMs: 60_000, now: () => Date.now(), onLost: () => undefined });
    try {
      heartbeat.add('run_fenced');
      heartbeat.fenced('run_fenced');
      heartbeat.fenced('run_fenced');
      // A run no longer held here (its driver ended) is not a loss.
      heartbeat.fenced('run_never_held');
      expect(heartbeat.figures().leasesLost).toBe(1);
    } finally {
      heartbeat.stop();
    }
  });
});
