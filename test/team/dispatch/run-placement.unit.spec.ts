import { InMemoryRunLeases } from '../../../src/team/leases/in-memory.run-leases';
import { Placement } from '../../../src/team/dispatch/run-placement';
import { recordingLogger } from './dispatch-fakes';

// Where a launch goes, as a launching process decides it: the I/O around the pure placeRun.

const TTL = 30_000;

/** A Placement for `proc_here`, with a cap of `cap`, driving `active` runs now (a fake pool). */
function placementWith(options: { cap?: number; active?: number } = {}) {
  const clock = { t: Date.parse('2026-01-05T09:00:00Z'), now: () => clock.t };
  const leases = new InMemoryRunLeases();
  const reserved = new Map<string, number>();
  const pool = {
    active: options.active ?? 0,
    get load() {
      return this.active + reserved.size;
    },
    reserve: (runId: string, until: number) => !reserved.has(runId) && (reserved.set(runId, until), true),
    unreserve: (runId: string) => void reserved.delete(runId),
    isDriving: () => false,
  };
  const { logger, lines } = recordingLogger();
  const placement = new Placement(pool, leases, clock, { leaseTtlMs: TTL, maxActiveRuns: options.cap ?? 2 }, 'proc_here', logger);
  return { placement, leases, clock, reserved, pool, lines };
}

describe('Placement', () => {
  it('given a process that does not serve (a one-shot CLI command), when a run is placed, then nothing is decided: the caller drives it', async () => {
    const { placement, leases, clock } = placementWith();
    expect(await placement.place('run_a')).toBeUndefined();
    expect(await leases.holder('run_a', clock.now())).toBeUndefined();
  });

  it('given room here, when a run is placed, then this process takes it: its lease is taken here and it counts in the load at once', async () => {
    const { placement, leases, clock, reserved } = placementWith();
    await placement.startServing();
    expect(await placement.place('run_a')).toEqual({ kind: 'take' });
    expect(await leases.holder('run_a', clock.now())).toBe('proc_here');
    expect(reserved.get('run_a')).toBe(clock.now() + TTL);
    expect(placement.placed).toEqual({ take: 1, hand: 0, queue: 0 });
    await placement.onApplicationShutdown();
  });

  it('given this process at its cap and another live process with room, when a run is placed, then it is handed there under a lease in that process\'s name', async () => {
    const { placement, leases, clock, reserved } = placementWith({ cap: 1, active: 1 });
    await leases.advertise({ owner: 'proc_other', active: 0, cap: 2 }, TTL, clock.now());
    await placement.startServing();
    expect(await placement.place('run_a')).toEqual({ kind: 'hand', to: 'proc_other' });
    expect(await leases.holder('run_a', clock.now())).toBe('proc_other');
    expect(reserved.size).toBe(0);
    expect(placement.placed).toEqual({ take: 0, hand: 1, queue: 0 });
    await placement.onApplicationShutdown();
  });

  it('given every process at its cap, when a run is placed, then it is queued: no lease, no reservation', async () => {
    const { placement, leases, clock, reserved } = placementWith({ cap: 1, active: 1 });
    await leases.advertise({ owner: 'proc_other', active: 2, cap: 2 }, TTL, clock.now());
    await placement.startServing();
    expect(await placement.place('run_a')).toEqual({ kind: 'queue' });
    expect(await leases.holder('run_a', clock.now())).toBeUndefined();
    expect(reserved.size).toBe(0);
    expect(placement.placed).toEqual({ take: 0, hand: 0, queue: 1 });
    await placement.onApplicationShutdown();
  });

  it('given a run whose lease is held already (a retried launch), when it is placed, then nothing is placed and the reservation is undone', async () => {
    const { placement, leases, clock, reserved } = placementWith();
    await leases.tryAcquire('run_a', 'proc_other', TTL, clock.now());
    await placement.startServing();
    expect(await placement.place('run_a')).toEqual({ kind: 'queue' });
    expect(await leases.holder('run_a', clock.now())).toBe('proc_other');
    expect(reserved.size).toBe(0);
    await placement.onApplicationShutdown();
  });

  it('given a placement whose launch was not recorded, when it is undone, then the reservation and the lease go', async () => {
    const { placement, leases, clock, reserved } = placementWith();
    await placement.startServing();
    const placed = await placement.place('run_a');
    await placement.unplace('run_a', placed);
    expect(reserved.size).toBe(0);
    expect(await leases.holder('run_a', clock.now())).toBeUndefined();
    await placement.onApplicationShutdown();
  });

  it('given a release the store refuses, when a placement is undone, then the failure is logged, not dropped', async () => {
    const { placement, leases, lines } = placementWith();
    await placement.startServing();
    const placed = await placement.place('run_a');
    leases.release = async () => {
      throw new Error('disk I/O error');
    };
    await placement.unplace('run_a', placed);
    expect(lines).toEqual([{ level: 'warn', message: expect.stringMatching(/^run run_a: the lease of a placement not launched was not released .*: disk I\/O error$/) }]);
    await placement.onApplicationShutdown();
  });

  it('given a serving process, then it advertises its load and cap, and withdraws the advert at shutdown (a refused withdraw is logged)', async () => {
    const { placement, leases, clock, pool, lines } = placementWith({ cap: 3, active: 1 });
    await placement.startServing();
    expect(await leases.loads(clock.now())).toEqual([{ owner: 'proc_here', active: pool.load, cap: 3 }]);
    await placement.onApplicationShutdown();
    expect(await leases.loads(clock.now())).toEqual([]);

    const second = placementWith();
    await second.placement.startServing();
    second.leases.withdraw = async () => {
      throw new Error('connection reset');
    };
    await second.placement.onApplicationShutdown();
    expect(second.lines).toEqual([{ level: 'warn', message: expect.stringMatching(/^could not withdraw this process's advert .*: connection reset$/) }]);
    expect(lines).toEqual([]);
  });
});
