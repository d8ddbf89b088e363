import { waitFor } from '../../support/wait-for';
import { FIRST_RETRY_MS } from '../../../src/team/dispatch/driver-failures';
import { poolWith } from './dispatch-fakes';

// The one place drivers start: every wake passes the cap, a failed driver's wait and the lease.

describe('DriverPool', () => {
  it('given a free slot, when a run is woken, then it is driven under its lease, and when its driver stops the lease is released and a slot frees', async () => {
    const { pool, leases, drivers, owner, slotsFreed } = poolWith();
    const wake = await pool.wake('run_a', 'event');
    expect(wake).toMatchObject({ driving: true, queued: false });
    expect(pool.isDriving('run_a')).toBe(true);
    expect(await leases.holder('run_a', Date.parse('2026-01-05T09:00:01Z'))).toBe(owner);

    await waitFor('the driver to drive', async () => drivers.get('run_a')?.driving, 5_000, 5);
    drivers.get('run_a')!.finish();
    expect(await wake.stopped).toBe(drivers.get('run_a')!.state);
    expect(pool.isDriving('run_a')).toBe(false);
    expect(await leases.holder('run_a', Date.parse('2026-01-05T09:00:01Z'))).toBeUndefined();
    expect(slotsFreed()).toBe(1);
  });

  it('given a run driven here, when it is woken again, then its driver is the same one', async () => {
    const { pool, drivers } = poolWith();
    const first = await pool.wake('run_a', 'event');
    const again = await pool.wake('run_a', 'recovery');
    expect(again.driving).toBe(true);
    expect(drivers.size).toBe(1);
    drivers.get('run_a')!.finish();
    expect(await again.stopped).toBe(await first.stopped);
  });

  it('given every slot taken, when a run is woken for an event, then it is queued without a lease; when a human asks for it, then it is driven over the cap', async () => {
    const { pool, leases, drivers } = poolWith({ cap: 1 });
    await pool.wake('run_busy', 'event');
    const queued = await pool.wake('run_b', 'event');
    expect(queued).toMatchObject({ driving: false, queued: true });
    expect(await queued.stopped).toBeUndefined();
    expect(await leases.holder('run_b', Date.now())).toBeUndefined();

    const resumed = await pool.wake('run_b', 'resume');
    expect(resumed).toMatchObject({ driving: true, queued: false });
    expect(pool.activeCount).toBe(2);
    for (const d of drivers.values()) d.finish();
  });

  it("given a run whose lease another process holds, when it is woken, then it is neither driven nor queued, and no slot frees", async () => {
    const { pool, leases, clock, slotsFreed } = poolWith();
    await leases.tryAcquire('run_a', 'proc_other', 30_000, clock.now());
    const wake = await pool.wake('run_a', 'event');
    expect(wake).toMatchObject({ driving: false, queued: false });
    await wake.stopped;
    expect(pool.isDriving('run_a')).toBe(false);
    expect(await pool.drivenElsewhere('run_a')).toBe('proc_other');
    expect(slotsFreed()).toBe(0);
  });

  it('given a driver that stopped on an error, then the process reports it, an automatic wake waits out its retry, and a human\'s wake does not', async () => {
    const { pool, drivers, health, clock, lines } = poolWith();
    const first = await pool.wake('run_a', 'event');
    await waitFor('the driver to drive', async () => drivers.get('run_a')?.driving, 5_000, 5);
    drivers.get('run_a')!.fail('workspace is read-only');
    expect(await first.stopped).toBeUndefined();
    expect(health.assess().reasons).toEqual([expect.stringMatching(/^run drivers: 1 run\(s\) stopped on an error/)]);
    expect(lines).toContainEqual({ level: 'error', message: expect.stringContaining('run run_a: the driver stopped on an error (1 in a row') });

    expect(await pool.wake('run_a', 'recovery')).toMatchObject({ driving: false, queued: false });
    clock.t += FIRST_RETRY_MS;
    const retried = await pool.wake('run_a', 'recovery');
    expect(retried.driving).toBe(true);
    // Driving again: no longer reported once the new driver got going.
    await waitFor('the new driver to drive', async () => drivers.get('run_a')?.driving && health.assess().ok, 5_000, 5);
    drivers.get('run_a')!.finish();
    await retried.stopped;
  });

  it('given a failed driver still waiting for its retry, when a human resumes the run, then it is driven at once', async () => {
    const { pool, drivers } = poolWith();
    const first = await pool.wake('run_a', 'event');
    await waitFor('the driver to drive', async () => drivers.get('run_a')?.driving, 5_000, 5);
    drivers.get('run_a')!.fail('boom');
    await first.stopped;
    expect((await pool.wake('run_a', 'resume')).driving).toBe(true);
    drivers.get('run_a')!.finish();
  });

  it('given a run placed here, then it counts in the load before its driver starts, and its start does not take the lease again', async () => {
    const { pool, leases, clock, owner, drivers } = poolWith({ cap: 1 });
    await leases.tryAcquire('run_a', owner, 30_000, clock.now());
    expect(pool.reserve('run_a', clock.now() + 30_000)).toBe(true);
    expect(pool.load).toBe(1);
    expect(pool.hasRoom).toBe(false);
    const takes = jest.spyOn(leases, 'tryAcquire');

    // The cap counts the run's own reservation as its slot.
    expect((await pool.wake('run_a', 'event')).driving).toBe(true);
    expect(takes).not.toHaveBeenCalled();
    expect(pool.load).toBe(1);
    drivers.get('run_a')!.finish();
  });

  it('given a reservation whose time is over, then it no longer counts in the load', () => {
    const { pool, clock } = poolWith();
    pool.reserve('run_a', clock.now() + 1_000);
    expect(pool.load).toBe(1);
    clock.t += 1_000;
    expect(pool.load).toBe(0);
  });

  it('given drivers at shutdown, then each run is suspended and its lease released, and the tools are closed after them', async () => {
    const { pool, drivers, leases, clock, tools } = poolWith();
    await pool.wake('run_a', 'event');
    await pool.wake('run_b', 'event');
    await pool.onApplicationShutdown();
    expect([...drivers.values()].map((d) => d.suspended)).toEqual([true, true]);
    expect(await leases.held(['run_a', 'run_b'], clock.now())).toEqual(new Set());
    expect(tools.close).toHaveBeenCalledTimes(1);
    expect((await pool.wake('run_c', 'resume')).driving).toBe(false);
  });

  it('given a lease release the store refuses, when the driver stops, then the failure is logged, not dropped', async () => {
    const { pool, leases, drivers, lines } = poolWith();
    leases.release = async () => {
      throw new Error('disk I/O error');
    };
    const wake = await pool.wake('run_a', 'event');
    await waitFor('the driver to drive', async () => drivers.get('run_a')?.driving, 5_000, 5);
    drivers.get('run_a')!.finish();
    await wake.stopped;
    await waitFor('the warning', async () => lines.some((l) => l.level === 'warn'), 5_000, 5);
    expect(lines).toContainEqual({ level: 'warn', message: 'run run_a: lease not released (its driver stopped), it lapses after its TTL: disk I/O error' });
  });
});
