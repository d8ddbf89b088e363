import type { OnApplicationShutdown } from '@nestjs/common';
import { isStoreUnavailable } from '../../events/errors';
import type { Clock } from '../../shared/ports';
import { HEARTBEATS_PER_TTL } from '../leases/lease-heartbeat';
import { LoadsPerTurn } from '../leases/loads-per-turn';
import type { RunLeases } from '../leases/run-leases.port';
import type { DispatchLogger, DispatchOptions } from './dispatch-options';
import type { DriverPool } from './driver-pool';
import { placeRun, type PlacementDecision, type ProcessLoad } from './placement';

/** Launches placed by this process, by outcome. */
export type PlacementCounts = Record<PlacementDecision['kind'], number>;

/**
 * Where this process's launches go among the serving processes sharing the store (the decision is
 * the pure `placeRun`; this is its I/O): the adverts of this process's load, the reading of the
 * others', and the lease taken in the chosen process's name before the launch is recorded.
 */
export class Placement implements OnApplicationShutdown {
  private advertTimer?: NodeJS.Timeout;
  private serving = false;
  private stopped = false;
  private readonly counts: PlacementCounts = { take: 0, hand: 0, queue: 0 };
  /** The processes' loads, read once per turn of the event loop for the launches placed in it. */
  private readonly loadsPerTurn: LoadsPerTurn;

  constructor(
    /** The drivers here: their load, and the runs placed here reserved in it. */
    private readonly pool: Pick<DriverPool, 'load' | 'reserve' | 'unreserve' | 'isDriving'>,
    private readonly leases: RunLeases,
    private readonly clock: Clock,
    private readonly options: Pick<DispatchOptions, 'leaseTtlMs' | 'maxActiveRuns'>,
    private readonly owner: string,
    private readonly logger: Pick<DispatchLogger, 'warn'>,
  ) {
    this.loadsPerTurn = new LoadsPerTurn(() => leases.loads(clock.now()));
  }

  /** Launches placed so far, by outcome (a copy). */
  get placed(): PlacementCounts {
    return { ...this.counts };
  }

  /**
   * Serving (`triad serve`): advertises this process's load and cap every quarter of the lease TTL,
   * so launchers on other processes can hand it runs.
   */
  async startServing(): Promise<void> {
    if (this.serving || this.stopped) return;
    this.serving = true;
    const every = Math.max(25, Math.floor(this.options.leaseTtlMs / HEARTBEATS_PER_TTL));
    const beat = async () => {
      await this.advertise();
      if (this.stopped) return;
      this.advertTimer = setTimeout(() => void beat(), every);
      this.advertTimer.unref();
    };
    await beat();
  }

  private async advertise(): Promise<void> {
    try {
      await this.leases.advertise({ owner: this.owner, active: this.pool.load, cap: this.options.maxActiveRuns }, this.options.leaseTtlMs, this.clock.now());
    } catch (err) {
      // Launchers then see this process as gone until the next advert: they place runs elsewhere.
      if (!isStoreUnavailable(err)) this.logger.warn(`could not advertise this process's load: ${(err as Error).message}`);
    }
  }

  /**
   * Where a new run goes, decided before its launch is recorded (so every dispatcher already sees
   * the decision, the run's lease): this process takes it below its cap, else the least-loaded
   * live process, else nobody (queued: the first process with a free slot takes it, see
   * RunDispatcher). The lease is taken in the chosen process's name; its dispatcher, woken by the
   * launch, finds the lease its own and drives the run; the others find it held. A chosen process
   * that does not start the run (it crashed meanwhile) leaves a lease that expires, and recovery
   * places the run again. Not serving (a one-shot CLI command): no placement, the caller drives
   * the run itself.
   */
  async place(runId: string): Promise<PlacementDecision | undefined> {
    if (!this.serving) return undefined;
    const me = { owner: this.owner, active: this.pool.load, cap: this.options.maxActiveRuns };
    let placement = placeRun(me, []);
    let loads: ProcessLoad[] = [];
    if (placement.kind !== 'take') placement = placeRun(me, (loads = await this.loadsPerTurn.get()));
    if (placement.kind !== 'queue') {
      const to = placement.kind === 'take' ? this.owner : placement.to;
      // Counted at once in the loads it was decided on, so that the launches placed with them spread.
      const unhand = placement.kind === 'hand' ? this.loadsPerTurn.handed(loads, to) : undefined;
      const now = this.clock.now();
      // Counted in this process's load at once (a take is decided synchronously, above), before
      // the lease calls below: launches arriving meanwhile see the slot taken (they would all pass
      // the cap check otherwise). A reservation made already (a retried launch) is left as it is.
      const reserving = to === this.owner && this.pool.reserve(runId, now + this.options.leaseTtlMs);
      const undo = () => {
        if (reserving) this.pool.unreserve(runId);
        unhand?.();
        return { kind: 'queue' } as const;
      };
      try {
        // Held already (an idempotent retry of a launch whose run is driven now, by whichever
        // process): nothing to place, and so nothing that undoing the placement would release.
        if ((await this.leases.holder(runId, now)) !== undefined) return undo();
        if (!(await this.leases.tryAcquire(runId, to, this.options.leaseTtlMs, now))) return undo();
      } catch (err) {
        undo();
        throw err;
      }
    }
    this.counts[placement.kind]++;
    return placement;
  }

  /** A placement whose launch was not recorded (refused, or an idempotent retry): undone. */
  async unplace(runId: string, placement: PlacementDecision | undefined): Promise<void> {
    if (!placement || placement.kind === 'queue') return;
    this.pool.unreserve(runId);
    if (this.pool.isDriving(runId)) return;
    const holder = placement.kind === 'take' ? this.owner : placement.to;
    await this.leases.release(runId, holder).catch((err: unknown) => {
      // The lease then lapses after its TTL; until then no process drives the run, which has no launch anyway.
      this.logger.warn(`run ${runId}: the lease of a placement not launched was not released (it lapses after its TTL): ${(err as Error).message}`);
    });
  }

  /** Stops advertising and withdraws this process's advert: launchers stop handing it runs at once. */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.advertTimer) clearTimeout(this.advertTimer);
    if (!this.serving) return;
    await this.leases.withdraw(this.owner).catch((err: unknown) => {
      // The advert then lapses after its TTL; meanwhile launchers may hand this process runs that it does not start, which recovery places again.
      this.logger.warn(`could not withdraw this process's advert (it lapses after its TTL): ${(err as Error).message}`);
    });
  }
}
