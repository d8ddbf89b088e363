import { randomBytes } from 'node:crypto';
import type { RunLeases } from '../../../src/team/leases/run-leases.port';

/**
 * The run leases contract: every adapter runs this same suite.
 *
 * Time is the caller's: every call takes `nowMs`, so the tests run on a clock of their own and never
 * wait. One harness serves the whole suite (a database of its own); each test takes leases on runs
 * of its own. `open` gives leases over that database: a durable adapter opens another connection (or
 * pool) each time, as another process would; the in-memory adapter gives its one instance.
 */
export interface RunLeasesHarness {
  open(): Promise<RunLeases>;
  cleanup(): Promise<void>;
}

const suiteId = randomBytes(3).toString('hex');
let runs = 0;
/** A run id no other test of the suite uses. */
const newRunId = () => `run_lease_${suiteId}_${++runs}`;

const T0 = 1_750_000_000_000;
const TTL = 1000;

export function runLeasesContract(name: string, makeHarness: () => Promise<RunLeasesHarness>, options: { contenders?: number; leasesCountAsLoad?: boolean } = {}): void {
  describe(`run leases contract: ${name}`, () => {
    let harness: RunLeasesHarness;
    let leases: RunLeases;
    const opened: RunLeases[] = [];

    const open = async () => {
      const l = await harness.open();
      opened.push(l);
      return l;
    };

    beforeAll(async () => {
      harness = await makeHarness();
      leases = await open();
    });

    afterAll(async () => {
      for (const l of opened.splice(0)) await l.close();
      await harness?.cleanup();
    });

    describe('tryAcquire and holder', () => {
      it('given a run nobody holds, then it has no holder and the first owner to ask takes it', async () => {
        const run = newRunId();
        expect(await leases.holder(run, T0)).toBeUndefined();
        expect(await leases.tryAcquire(run, 'A', TTL, T0)).toBe(true);
        expect(await leases.holder(run, T0)).toBe('A');
      });

      it('given a lease held by A, then B is refused until it expires, and A stays the holder', async () => {
        const run = newRunId();
        await leases.tryAcquire(run, 'A', TTL, T0);
        expect(await leases.tryAcquire(run, 'B', TTL, T0 + 1)).toBe(false);
        expect(await leases.tryAcquire(run, 'B', TTL, T0 + TTL - 1)).toBe(false);
        expect(await leases.holder(run, T0 + TTL - 1)).toBe('A');
      });

      it('given a lease at its expiry time, then it has no holder and another owner may take it', async () => {
        const run = newRunId();
        await leases.tryAcquire(run, 'A', TTL, T0);
        expect(await leases.holder(run, T0 + TTL)).toBeUndefined();
        expect(await leases.tryAcquire(run, 'B', TTL, T0 + TTL)).toBe(true);
        expect(await leases.holder(run, T0 + TTL)).toBe('B');
        // A's lease is gone: A is now the one refused.
        expect(await leases.tryAcquire(run, 'A', TTL, T0 + TTL + 1)).toBe(false);
      });

      it('given a lease held by its owner, then asking again extends it from the time asked', async () => {
        const run = newRunId();
        await leases.tryAcquire(run, 'A', TTL, T0);
        expect(await leases.tryAcquire(run, 'A', TTL, T0 + 600)).toBe(true);
        expect(await leases.holder(run, T0 + TTL + 500)).toBe('A');
        expect(await leases.tryAcquire(run, 'B', TTL, T0 + TTL + 500)).toBe(false);
        expect(await leases.holder(run, T0 + TTL + 600)).toBeUndefined();
      });

      it('given an expired lease of its own, then the owner takes it again', async () => {
        const run = newRunId();
        await leases.tryAcquire(run, 'A', TTL, T0);
        expect(await leases.tryAcquire(run, 'A', TTL, T0 + 5 * TTL)).toBe(true);
        expect(await leases.holder(run, T0 + 5 * TTL)).toBe('A');
      });

      it('given leases on several runs, then each run has its own holder', async () => {
        const [r1, r2] = [newRunId(), newRunId()];
        expect(await leases.tryAcquire(r1, 'A', TTL, T0)).toBe(true);
        expect(await leases.tryAcquire(r2, 'B', TTL, T0)).toBe(true);
        expect(await leases.holder(r1, T0)).toBe('A');
        expect(await leases.holder(r2, T0)).toBe('B');
      });

      const contenders = options.contenders ?? 8;
      it(`given ${contenders} owners asking for a free run at once, then exactly one holds it`, async () => {
        const run = newRunId();
        const owners = Array.from({ length: contenders }, (_, i) => `owner-${i}`);
        const handles = [leases, ...(await Promise.all(owners.slice(1).map(() => open())))];
        const taken = await Promise.all(owners.map((owner, i) => handles[i].tryAcquire(run, owner, TTL, T0)));
        expect(taken.filter(Boolean)).toHaveLength(1);
        expect(await leases.holder(run, T0)).toBe(owners[taken.indexOf(true)]);
      });

      it('given a lease taken through one handle, then another handle on the same database sees it and is refused', async () => {
        const run = newRunId();
        const other = await open();
        await leases.tryAcquire(run, 'A', TTL, T0);
        expect(await other.holder(run, T0)).toBe('A');
        expect(await other.tryAcquire(run, 'B', TTL, T0)).toBe(false);
      });
    });

    describe('release', () => {
      it('given a lease released by its owner, then it has no holder and another owner takes it at once', async () => {
        const run = newRunId();
        await leases.tryAcquire(run, 'A', TTL, T0);
        await leases.release(run, 'A');
        expect(await leases.holder(run, T0)).toBeUndefined();
        expect(await leases.tryAcquire(run, 'B', TTL, T0)).toBe(true);
      });

      it('given a release by another owner, then nothing changes', async () => {
        const run = newRunId();
        await leases.tryAcquire(run, 'A', TTL, T0);
        await leases.release(run, 'B');
        expect(await leases.holder(run, T0)).toBe('A');
        expect(await leases.tryAcquire(run, 'B', TTL, T0)).toBe(false);
      });

      it('given a run nobody holds, then releasing it is no error', async () => {
        await expect(leases.release(newRunId(), 'A')).resolves.toBeUndefined();
      });
    });

    describe('renewAll', () => {
      it("extends the leases it holds and reports the ones another owner took", async () => {
        const [r1, r2, r3, r4] = [newRunId(), newRunId(), newRunId(), newRunId()];
        for (const id of [r1, r2, r3]) expect(await leases.tryAcquire(id, 'A', TTL, T0)).toBe(true);
        expect(await leases.tryAcquire(r4, 'B', TTL, T0)).toBe(true);
        // r3 expires and B takes it.
        expect(await leases.tryAcquire(r3, 'B', TTL, T0 + 1500)).toBe(true);
        const held = await leases.renewAll([r1, r2, r3, r4], 'A', TTL, T0 + 1600);
        expect([...held].sort()).toEqual([r1, r2].sort());
        expect(await leases.holder(r1, T0 + 2500)).toBe('A');
        expect(await leases.holder(r2, T0 + 2599)).toBe('A');
        expect(await leases.holder(r2, T0 + 2600)).toBeUndefined();
        expect(await leases.holder(r3, T0 + 2000)).toBe('B');
        expect(await leases.holder(r4, T0 + 500)).toBe('B');
      });

      it('given no runs, then it renews nothing', async () => {
        expect(await leases.renewAll([], 'A', TTL, T0)).toEqual(new Set());
      });

      it('given runs nobody holds, released ones, or ids named twice, then only the held ones come back, once', async () => {
        const [held, released, free] = [newRunId(), newRunId(), newRunId()];
        await leases.tryAcquire(held, 'A', TTL, T0);
        await leases.tryAcquire(released, 'A', TTL, T0);
        await leases.release(released, 'A');
        expect(await leases.renewAll([held, released, free, held], 'A', TTL, T0 + 10)).toEqual(new Set([held]));
        expect(await leases.holder(released, T0 + 10)).toBeUndefined();
        expect(await leases.holder(free, T0 + 10)).toBeUndefined();
      });

      it('given an expired lease of its own that nobody took, then it is renewed and held again', async () => {
        const run = newRunId();
        await leases.tryAcquire(run, 'A', TTL, T0);
        expect(await leases.renewAll([run], 'A', TTL, T0 + 3 * TTL)).toEqual(new Set([run]));
        expect(await leases.holder(run, T0 + 3 * TTL + TTL - 1)).toBe('A');
      });

      it("given another owner's renewal, then it does not extend a lease it does not hold", async () => {
        const run = newRunId();
        await leases.tryAcquire(run, 'A', TTL, T0);
        expect(await leases.renewAll([run], 'B', 10 * TTL, T0 + 10)).toEqual(new Set());
        expect(await leases.holder(run, T0 + TTL)).toBeUndefined();
      });
    });

    describe('held', () => {
      it('given leases live, expired, released and none, then only the live ones come back, whoever holds them', async () => {
        const [mine, theirs, expired, released, free] = [newRunId(), newRunId(), newRunId(), newRunId(), newRunId()];
        await leases.tryAcquire(mine, 'A', TTL, T0);
        await leases.tryAcquire(theirs, 'B', TTL, T0);
        await leases.tryAcquire(expired, 'A', 10, T0);
        await leases.tryAcquire(released, 'A', TTL, T0);
        await leases.release(released, 'A');
        expect(await leases.held([mine, theirs, expired, released, free], T0 + 100)).toEqual(new Set([mine, theirs]));
        expect(await leases.held([], T0)).toEqual(new Set());
      });
    });

    describe('process adverts (placement)', () => {
      const owner = (name: string) => `proc_${suiteId}_${++runs}_${name}`;
      const mine = async (names: string[], nowMs: number) =>
        (await leases.loads(nowMs)).filter((l) => names.includes(l.owner)).sort((a, b) => (a.owner < b.owner ? -1 : 1));

      it('given two processes advertising, then both are live with their loads and caps until their adverts expire', async () => {
        const [a, b] = [owner('a'), owner('b')];
        await leases.advertise({ owner: a, active: 1, cap: 4 }, TTL, T0);
        await leases.advertise({ owner: b, active: 0, cap: 2 }, TTL, T0 + 10);
        expect(await mine([a, b], T0 + 20)).toEqual([
          { owner: a, active: 1, cap: 4 },
          { owner: b, active: 0, cap: 2 },
        ]);
        expect(await mine([a, b], T0 + TTL + 5)).toEqual([{ owner: b, active: 0, cap: 2 }]);
      });

      it('given a process advertising again, then its newest advert counts', async () => {
        const a = owner('a');
        await leases.advertise({ owner: a, active: 0, cap: 4 }, TTL, T0);
        await leases.advertise({ owner: a, active: 3, cap: 4 }, TTL, T0 + 10);
        expect(await mine([a], T0 + 20)).toEqual([{ owner: a, active: 3, cap: 4 }]);
      });

      it('given a process that withdrew, then it is no longer listed', async () => {
        const a = owner('a');
        await leases.advertise({ owner: a, active: 0, cap: 4 }, TTL, T0);
        await leases.withdraw(a);
        expect(await mine([a], T0 + 1)).toEqual([]);
      });

      if (options.leasesCountAsLoad !== false) {
        it('given runs handed to a process (leases taken in its name), then they count in its load before it advertises again', async () => {
          const a = owner('a');
          await leases.advertise({ owner: a, active: 0, cap: 4 }, TTL, T0);
          await leases.tryAcquire(newRunId(), a, TTL, T0 + 1);
          await leases.tryAcquire(newRunId(), a, TTL, T0 + 1);
          expect(await mine([a], T0 + 2)).toEqual([{ owner: a, active: 2, cap: 4 }]);
        });
      }
    });
  });
}
