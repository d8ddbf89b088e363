import { Inject, Injectable, Logger, type OnApplicationShutdown, Optional } from '@nestjs/common';
import { join } from 'node:path';
import { CHECKPOINT_STORE, type CheckpointStore } from '../../checkpoint/checkpoint-store.port';
import { TRIAD_CONFIG } from '../../config/config.module';
import type { TriadConfig } from '../../config/config';
import { EVENT_STORE, type EventStore } from '../../events/event-store.port';
import { isStoreUnavailable } from '../../events/errors';
import { CLOCK, IDS, PROCESS_ID } from '../../shared/system';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import { LeaseHeartbeat } from '../leases/lease-heartbeat';
import { RUN_LEASES, type RunLeases } from '../leases/run-leases';
import { LiveRunBus } from '../live-run-bus';
import { MODEL_PROVIDER, type ModelProvider } from '../models/model.port';
import { processFairShare } from './fair-share';
import { HEARTBEATS_PER_TTL } from '../leases/lease-heartbeat';
import { hasRoom, placeRun, type Placement, type ProcessLoad } from './placement';
import { LoadsPerTurn } from '../leases/loads-per-turn';
import type { Clock, Ids } from '../../shared/ports';
import { RunDriver } from '../driver/run-driver';
import type { RetryPolicy } from '../resilience/policies';
import { SubAgentPool } from '../driver/sub-agent-pool';
import type { RunState } from '../domain/run-state';
import { TOOL_REGISTRY } from '../tokens';
import type { ToolRegistry } from '../tools/tool-registry';
import { createWorkspace } from '../tools/workspace';
import { DriverFailures, FAILING_GRACE_MS } from './driver-failures';
import { HEALTH_REGISTRY, type HealthRegistry } from '../../shared/health';
import { loadRunState } from '../run-stream';
import { matchPin, pinOf, processModelOf, type ProcessModel, type RunPin } from '../domain/model-pin';

/**
 * A run placed here is started without taking its lease again while this share of the TTL is left
 * (its start usually follows the placement by milliseconds): the heartbeat, which renews every
 * TTL/4, then still has 0.7 of the TTL to spare, against 0.75 after a fresh take.
 */
const LEASE_LEFT_TO_SKIP_TAKE = 0.95;

export const RETRY_POLICY = Symbol('RETRY_POLICY');
export const SUPERVISOR_OPTIONS = Symbol('SUPERVISOR_OPTIONS');

export interface SupervisorOptions {
  /** How long a lease lasts without renewal. */
  leaseTtlMs: number;
  checkpointEveryTurns: number;
  /** Runs this process drives at most at once (`TRIAD_MAX_ACTIVE_RUNS`); more wait, queued. */
  maxActiveRuns: number;
}

interface ActiveRun {
  driver: RunDriver;
  done: Promise<RunState | undefined>;
  /** Whether this process took the run's lease (resolves before the driver starts). */
  leased: Promise<boolean>;
}

/**
 * Runs many runs concurrently in one process, one driver per run. A run is driven only under a
 * lease (renewed by a heartbeat, one statement for all of this process's leases); the driver's
 * DriverClaimed event fences any previous holder. A driver stops by itself when its run ends or
 * waits for a human, and is stopped when the heartbeat finds its lease taken by another process
 * (see LeaseHeartbeat).
 */
@Injectable()
export class RunSupervisor implements OnApplicationShutdown {
  private readonly logger = new Logger(RunSupervisor.name);
  private readonly drivers = new Map<string, ActiveRun>();
  /** Sub-agent slots shared by every run this process drives (8 at once, 5 per parent). */
  private readonly subAgentPool = new SubAgentPool();
  private readonly heartbeat: LeaseHeartbeat;
  private shuttingDown = false;
  /** Runs placed on this process whose driver has not started yet (they count in its load), until when. */
  private readonly reserved = new Map<string, number>();
  private advertTimer?: NodeJS.Timeout;
  private serving = false;
  private readonly slotListeners = new Set<() => void>();
  /** Launches placed by this process, by outcome (see place). */
  private readonly placed = { take: 0, hand: 0, queue: 0 };
  /** The processes' loads, read once per turn of the event loop for the launches placed in it. */
  private readonly loadsPerTurn: LoadsPerTurn;
  /** Runs whose driver stopped on an error wait before they are started again automatically. */
  private readonly failures = new DriverFailures();
  private readonly wakes = new Set<NodeJS.Timeout>();
  /** Runs left to a process matching their pin, and what each waits for (logged once per change). */
  private readonly leftForPin = new Map<string, string>();
  /** The provider and endpoint this process calls models with. */
  readonly here: ProcessModel;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(MODEL_PROVIDER) private readonly model: ModelProvider,
    @Inject(TOOL_REGISTRY) private readonly tools: ToolRegistry,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(IDS) private readonly ids: Ids,
    @Inject(TRIAD_CONFIG) private readonly config: TriadConfig,
    @Inject(RETRY_POLICY) private readonly retry: RetryPolicy,
    @Inject(RUN_LEASES) private readonly leases: RunLeases,
    @Inject(CHECKPOINT_STORE) private readonly checkpoints: CheckpointStore,
    @Inject(SUPERVISOR_OPTIONS) private readonly options: SupervisorOptions,
    private readonly live: LiveRunBus,
    /** This process's identity as a driver (and as a writer: every event's metadata names it). */
    @Inject(PROCESS_ID) readonly owner: string,
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Optional() @Inject(HEALTH_REGISTRY) private readonly health?: HealthRegistry,
  ) {
    this.here = processModelOf(model);
    this.loadsPerTurn = new LoadsPerTurn(() => leases.loads(clock.now()));
    this.heartbeat = new LeaseHeartbeat({
      leases,
      owner: this.owner,
      ttlMs: options.leaseTtlMs,
      now: () => clock.now(),
      onLost: (runId) => this.drivers.get(runId)?.driver.stop('lease lost'),
      logger: this.logger,
    });
  }

  get workspaceRoot(): string {
    return join(this.config.dataDir, 'workspaces');
  }

  async prepareWorkspace(runId: string): Promise<string> {
    return createWorkspace(this.workspaceRoot, runId);
  }

  /** The process that holds the run's lease now, if another one does (it drives the run). */
  async drivenElsewhere(runId: string): Promise<string | undefined> {
    const holder = await this.leases.holder(runId, this.clock.now()).catch(() => undefined);
    return holder !== undefined && holder !== this.owner ? holder : undefined;
  }

  isDriving(runId: string): boolean {
    return this.drivers.has(runId);
  }

  /** What a run pinned to `pin` waits for when this process's model is not its pin; undefined when this process may drive it. */
  pinWait(pin: RunPin): string | undefined {
    const match = matchPin(pin, this.here);
    return match.matches ? undefined : match.waitingFor;
  }

  /**
   * The one check before any driver starts (dispatch, recovery, resume, the CLI's foreground
   * drive all come through `start`): a run pinned to another provider or endpoint is left to a
   * process that matches — no lease, no claim, no model call here. Read from the store, not a
   * read model, so a re-pin just recorded is seen.
   */
  private async pinnedElsewhere(runId: string): Promise<boolean> {
    const state = await loadRunState(this.store, runId, this.checkpoints, this.logger);
    const waiting = state.launched && this.pinWait(pinOf(state.launched));
    if (!waiting) {
      this.leftForPin.delete(runId);
      return false;
    }
    if (this.leftForPin.get(runId) !== waiting) this.logger.log(`run ${runId}: left to ${waiting} (this process: provider ${this.here.provider} at ${this.here.endpoint})`);
    this.leftForPin.set(runId, waiting);
    return true;
  }

  get activeCount(): number {
    return this.drivers.size;
  }

  get maxActiveRuns(): number {
    return this.options.maxActiveRuns;
  }

  /** Runs driven here and runs placed here that have not started yet: what this process advertises. */
  get load(): number {
    this.dropExpiredReservations();
    let n = this.drivers.size;
    for (const runId of this.reserved.keys()) if (!this.drivers.has(runId)) n++;
    return n;
  }

  /** Whether this process may start one more run now (below TRIAD_MAX_ACTIVE_RUNS). */
  get hasRoom(): boolean {
    return hasRoom(this.load, this.options.maxActiveRuns);
  }

  /** Told each time a driver stops here (a slot frees): recovery looks for queued runs then. */
  onSlotFreed(listener: () => void): () => void {
    this.slotListeners.add(listener);
    return () => this.slotListeners.delete(listener);
  }

  /**
   * Serving (`triad serve`): advertises this process's load and cap every quarter of the lease TTL
   * (see placement.ts), so launchers on other processes can hand it runs.
   */
  async startServing(): Promise<void> {
    if (this.serving || this.shuttingDown) return;
    this.serving = true;
    const every = Math.max(25, Math.floor(this.options.leaseTtlMs / HEARTBEATS_PER_TTL));
    const beat = async () => {
      await this.advertise();
      if (this.shuttingDown) return;
      this.advertTimer = setTimeout(() => void beat(), every);
      this.advertTimer.unref();
    };
    await beat();
  }

  private async advertise(): Promise<void> {
    try {
      await this.leases.advertise({ owner: this.owner, active: this.load, cap: this.options.maxActiveRuns }, this.options.leaseTtlMs, this.clock.now());
    } catch (err) {
      // Launchers then see this process as gone until the next advert: they place runs elsewhere.
      if (!isStoreUnavailable(err)) this.logger.warn(`could not advertise this process's load: ${(err as Error).message}`);
    }
  }

  /**
   * Where a new run goes, decided before its launch is recorded (so every dispatcher already sees
   * the decision, the run's lease): this process takes it below its cap, else the least-loaded
   * live process, else nobody (queued: the first process with a free slot takes it, see recovery).
   * The lease is taken in the chosen process's name; its dispatcher, woken by the launch, finds the
   * lease its own and drives the run; the others find it held. A chosen process that does not start
   * the run (it crashed meanwhile) leaves a lease that expires, and recovery places the run again.
   * Not serving (a one-shot CLI command): no placement, the caller drives the run itself.
   */
  async place(runId: string): Promise<Placement | undefined> {
    if (!this.serving) return undefined;
    const me = { owner: this.owner, active: this.load, cap: this.options.maxActiveRuns };
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
      const reserving = to === this.owner && !this.reserved.has(runId);
      if (reserving) this.reserved.set(runId, now + this.options.leaseTtlMs);
      const undo = () => {
        if (reserving) this.reserved.delete(runId);
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
    this.placed[placement.kind]++;
    return placement;
  }

  /**
   * A lease on work that is not a run (a project's planning): held by this process for one lease
   * TTL, so that of several processes reacting to the same thing one does it; undefined when
   * another holds it. A holder that dies leaves a lease that expires, and the work is free again.
   */
  async claim(key: string): Promise<{ release(): Promise<void> } | undefined> {
    if (!(await this.leases.tryAcquire(key, this.owner, this.options.leaseTtlMs, this.clock.now()))) return undefined;
    return { release: () => this.leases.release(key, this.owner).catch(() => undefined) };
  }

  /** How long a claim (or a run's lease) lasts without renewal. */
  get leaseTtlMs(): number {
    return this.options.leaseTtlMs;
  }

  /** A placement whose launch was not recorded (refused, or an idempotent retry): undone. */
  async unplace(runId: string, placement: Placement | undefined): Promise<void> {
    if (!placement || placement.kind === 'queue') return;
    this.reserved.delete(runId);
    if (this.drivers.has(runId)) return;
    await this.leases.release(runId, placement.kind === 'take' ? this.owner : placement.to).catch(() => undefined);
  }

  private dropExpiredReservations(): void {
    const now = this.clock.now();
    for (const [runId, until] of this.reserved) if (until <= now) this.reserved.delete(runId);
  }

  get activeRunIds(): string[] {
    return [...this.drivers.keys()];
  }

  /**
   * Drives a run in the background if this process can take its lease. Resolves when the driver
   * stops (undefined when the lease is held elsewhere or the driver failed).
   */
  start(runId: string, options: { overCap?: boolean } = {}): Promise<RunState | undefined> {
    const active = this.drivers.get(runId);
    if (active) return active.done;
    if (this.shuttingDown) return Promise.resolve(undefined);
    // At the cap: not taken here (it stays queued, or its lease is another's); a run placed here counts already.
    if (!options.overCap && !hasRoom(this.load - (this.reserved.has(runId) ? 1 : 0), this.options.maxActiveRuns)) return Promise.resolve(undefined);
    // Its last driver stopped on an error: started again automatically once its wait is over (an
    // explicit start, a human's resume, tries at once).
    if (!options.overCap && this.failures.waitMs(runId, this.clock.now()) > 0) return Promise.resolve(undefined);
    // Placed here moments ago: the lease taken then is ours until `reservedUntil` (nobody takes or
    // releases a live lease of ours), so it is not taken again while nearly all of it is left — the
    // heartbeat's first renewal then comes with as much of the TTL to spare as after a fresh take.
    const reservedUntil = this.reserved.get(runId);
    const leaseHeld = reservedUntil !== undefined && reservedUntil - this.clock.now() > this.options.leaseTtlMs * LEASE_LEFT_TO_SKIP_TAKE;
    this.reserved.delete(runId);
    const driver = new RunDriver(runId, {
      store: this.store,
      path: this.path,
      model: this.model,
      tools: this.tools,
      clock: this.clock,
      ids: this.ids,
      workspaceRoot: this.workspaceRoot,
      retry: this.retry,
      observer: this.live,
      owner: this.owner,
      checkpoints: this.checkpoints,
      checkpointEveryTurns: this.options.checkpointEveryTurns,
      logger: this.logger,
      fairShare: processFairShare,
      subAgentPool: this.subAgentPool,
    });
    let leaseTaken: (taken: boolean) => void = () => undefined;
    const leasedPromise = new Promise<boolean>((resolve) => (leaseTaken = resolve));
    const done = (async () => {
      let leased = false;
      try {
        if (await this.pinnedElsewhere(runId)) {
          // A lease placed in this process's name (a launch handed here) is given up at once: a matching process's recovery takes the run.
          if (leaseHeld || (await this.leases.holder(runId, this.clock.now())) === this.owner) await this.leases.release(runId, this.owner).catch(() => undefined);
          return undefined;
        }
        leased = leaseHeld || (await this.leases.tryAcquire(runId, this.owner, this.options.leaseTtlMs, this.clock.now()));
        leaseTaken(leased);
        if (!leased) return undefined;
        this.heartbeat.add(runId);
        driver.knowRealWorkspace(await this.prepareWorkspace(runId));
        // The run's MCP tools must be registered before its first model call offers them.
        await this.tools.ready();
        this.driverGoing(runId);
        const state = await driver.drive();
        if (driver.fenced) this.heartbeat.fenced(runId);
        this.driverStopped(runId);
        return state;
      } catch (err) {
        // A store that did not answer before the lease was taken: recovery starts the run again.
        if (isStoreUnavailable(err) && !leased) this.logger.warn(`run ${runId}: not started, the event store is not reachable`);
        else this.driverFailed(runId, err);
        return undefined;
      } finally {
        leaseTaken(leased);
        // A slot is freed by a driver that ran, or by any attempt while this process was full (a
        // start may have been refused meanwhile because this attempt counted). An attempt that
        // found the lease held elsewhere frees nothing: telling recovery would make every process
        // rescan every active run for each launch another process took.
        const freesSlot = leased || !this.hasRoom;
        this.drivers.delete(runId);
        this.heartbeat.delete(runId);
        if (leased && !this.shuttingDown) await this.leases.release(runId, this.owner).catch(() => undefined);
        if (freesSlot && !this.shuttingDown) for (const listener of this.slotListeners) listener();
      }
    })();
    this.drivers.set(runId, { driver, done, leased: leasedPromise });
    return done;
  }

  /**
   * Starts the run like `start`; resolves once the lease is decided: true when this process drives it.
   * `overCap`: a human asked for this run here (resume), so the cap does not hold it back.
   */
  startIfLeased(runId: string, options: { overCap?: boolean } = {}): Promise<boolean> {
    void this.start(runId, options);
    return this.drivers.get(runId)?.leased ?? Promise.resolve(false);
  }

  /** A driver stopped without an error: its run starts afresh. */
  private driverStopped(runId: string): void {
    this.failures.stopped(runId);
    this.reportDrivers();
  }

  private driverGoing(runId: string): void {
    this.failures.driving(runId);
    this.reportDrivers();
  }

  /**
   * A driver stopped on an error: the run waits before recovery starts it again (a fault that
   * repeats is retried now and then, not in a loop), and the process reports itself degraded
   * while a run's driver failed and none drives it since.
   */
  private driverFailed(runId: string, err: unknown): void {
    const { count, retryInMs } = this.failures.failed(runId, this.clock.now(), { outage: isStoreUnavailable(err) });
    this.logger.error(`run ${runId}: the driver stopped on an error (${count} in a row; started again in ${Math.round(retryInMs / 1000)} s): ${(err as Error)?.message ?? String(err)}`);
    this.reportDrivers();
    // Recovery looks again when the wait is over; the health report once the run stops counting.
    this.later(retryInMs, () => {
      for (const listener of this.slotListeners) listener();
    });
    this.later(retryInMs + FAILING_GRACE_MS, () => this.reportDrivers());
  }

  private later(ms: number, work: () => void): void {
    const wake = setTimeout(() => {
      this.wakes.delete(wake);
      if (!this.shuttingDown) work();
    }, ms);
    wake.unref();
    this.wakes.add(wake);
  }

  private reportDrivers(): void {
    const failing = this.failures.failingRuns(this.clock.now());
    if (failing > 0) this.health?.failed('run drivers', `${failing} run(s) stopped on an error and wait to be started again (see the log)`);
    else this.health?.recovered('run drivers');
  }

  /** Stops the local driver of a run (cancel); resolves when it has stopped. */
  async stop(runId: string, reason: string): Promise<void> {
    const active = this.drivers.get(runId);
    if (!active) return;
    active.driver.stop(reason);
    await active.done;
  }

  /** Prometheus lines of the lease heartbeat and of placement. */
  metricLines(): string[] {
    const p = this.placed;
    return [
      ...this.heartbeat.metricLines(),
      '# HELP triad_runs_placed_total Runs launched through this process, by placement: driven here, handed to another process, or queued (every process at its cap).',
      '# TYPE triad_runs_placed_total counter',
      `triad_runs_placed_total{placement="take"} ${p.take}`,
      `triad_runs_placed_total{placement="hand"} ${p.hand}`,
      `triad_runs_placed_total{placement="queue"} ${p.queue}`,
      '# HELP triad_max_active_runs Runs this process drives at most at once (TRIAD_MAX_ACTIVE_RUNS).',
      '# TYPE triad_max_active_runs gauge',
      `triad_max_active_runs ${this.options.maxActiveRuns}`,
    ];
  }

  /**
   * Shutdown (SIGTERM or close): abort model calls and tools in flight, record each active run as
   * suspended (SHUTDOWN) with a checkpoint, release the leases. They resume on the next start.
   */
  async onApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    for (const wake of this.wakes) clearTimeout(wake);
    this.heartbeat.stop();
    if (this.advertTimer) clearTimeout(this.advertTimer);
    if (this.serving) await this.leases.withdraw(this.owner).catch(() => undefined);
    await Promise.all(
      [...this.drivers.entries()].map(async ([runId, active]) => {
        try {
          if (await active.driver.suspend(active.done)) this.logger.log(`run ${runId}: suspended for shutdown`);
        } catch (err) {
          this.logger.error(`run ${runId}: could not record the suspension: ${(err as Error).message}`);
        } finally {
          await this.leases.release(runId, this.owner).catch(() => undefined);
        }
      }),
    );
    // Tools' connections (MCP servers) last: no driver uses them any more.
    await this.tools.close();
    // The checkpoint store and the leases are closed with the storage (the events module), after this.
  }
}
