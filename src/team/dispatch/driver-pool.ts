import type { OnApplicationShutdown } from '@nestjs/common';
import type { CheckpointStore } from '../../checkpoint/checkpoint-store.port';
import type { EventStore } from '../../events/event-store/event-store.port';
import { isStoreUnavailable } from '../../events/errors';
import type { HealthRegistry } from '../../shared/health';
import type { Clock } from '../../shared/ports';
import { describeProcessModel, matchPin, pinOf, type ProcessModel, type RunPin } from '../domain/model-pin';
import type { RunState } from '../domain/run-state';
import type { RunDriver } from '../driver/run-driver';
import { LeaseHeartbeat, type HeartbeatFigures } from '../leases/lease-heartbeat';
import type { RunLeases } from '../leases/run-leases.port';
import { loadRunState } from '../runs/run-stream';
import type { ToolRegistry } from '../tools/tool-registry';
import type { DispatchLogger, DispatchOptions } from './dispatch-options';
import { DriverFailures, FAILING_GRACE_MS } from './driver-failures';
import { hasRoom } from './placement';

/**
 * A run placed here is started without taking its lease again while this share of the TTL is left
 * (its start usually follows the placement by milliseconds): the heartbeat, which renews every
 * TTL/4, then still has 0.7 of the TTL to spare, against 0.75 after a fresh take.
 */
const LEASE_LEFT_TO_SKIP_TAKE = 0.95;

/**
 * Why a driver is woken, which decides whether the cap holds it back: the dispatcher wakes runs
 * for the events that need a driver and for queued runs when a slot frees, recovery for runs no
 * live lease covers; a human who asks for this run here (resume, the CLI's foreground drive, a
 * project driven here) is not held back by the cap nor by a failed driver's wait.
 */
export type WakeReason = 'event' | 'queued' | 'recovery' | 'resume' | 'here' | 'project';

const ASKED_HERE: ReadonlySet<WakeReason> = new Set(['resume', 'here', 'project']);

/** What a wake came to, once the run's lease is decided. */
export interface Wake {
  /** This process drives the run (it took, or already held, the lease). */
  driving: boolean;
  /** Not tried: every slot here is taken (the run waits queued for one). */
  queued: boolean;
  /** Resolves when the driver stops: its last state, undefined when it did not drive or failed. */
  stopped: Promise<RunState | undefined>;
}

/** What the pool is built from (team.module.ts wires the app's; the unit specs their fakes). */
export interface DriverPoolDeps {
  /** A new driver for the run (DriverFactory). */
  newDriver(runId: string): RunDriver;
  /** The run's workspace, made if missing (RunWorkspaces). */
  prepareWorkspace(runId: string): Promise<string>;
  /** The run's events, for the pin check before a start. */
  store: EventStore;
  checkpoints: CheckpointStore;
  leases: RunLeases;
  /** Made ready before a driver's first model call, closed at shutdown. */
  tools: Pick<ToolRegistry, 'ready' | 'close'>;
  /** The provider and endpoint this process calls models with. */
  here: ProcessModel;
  clock: Clock;
  options: DispatchOptions;
  /** This process's identity as a driver (and as a writer: every event's metadata names it). */
  owner: string;
  health?: HealthRegistry;
  logger: DispatchLogger;
}

interface ActiveRun {
  driver: RunDriver;
  done: Promise<RunState | undefined>;
  /** Whether this process took the run's lease (resolves before the driver starts). */
  leased: Promise<boolean>;
}

/**
 * The drivers of this process, one per run, each under the run's lease (renewed by a heartbeat,
 * one statement for all of them; the driver's DriverClaimed event fences any previous holder).
 * Every driver starts through `wake` — the dispatcher, recovery, resume and the CLI all come here
 * — so the checks before a start live in one place: the cap (runs placed here count, see
 * `reserve`), a failed driver's wait, the run's model pin. A driver stops by itself when its run
 * ends or waits for a human, is stopped by a cancel (`stop`) or when the heartbeat finds its lease
 * taken by another process, and is suspended at shutdown.
 */
export class DriverPool implements OnApplicationShutdown {
  private readonly drivers = new Map<string, ActiveRun>();
  private readonly heartbeat: LeaseHeartbeat;
  private shuttingDown = false;
  /** Runs placed on this process whose driver has not started yet (they count in its load), until when. */
  private readonly reserved = new Map<string, number>();
  private readonly slotListeners = new Set<() => void>();
  /** Runs whose driver stopped on an error wait before they are started again automatically. */
  private readonly failures = new DriverFailures();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Runs left to a process matching their pin, and what each waits for (logged once per change). */
  private readonly leftForPin = new Map<string, string>();
  private readonly leases: RunLeases;
  private readonly clock: Clock;
  private readonly options: DispatchOptions;
  private readonly logger: DispatchLogger;
  readonly owner: string;
  readonly here: ProcessModel;

  constructor(private readonly deps: DriverPoolDeps) {
    this.leases = deps.leases;
    this.clock = deps.clock;
    this.options = deps.options;
    this.logger = deps.logger;
    this.owner = deps.owner;
    this.here = deps.here;
    this.heartbeat = new LeaseHeartbeat({
      leases: deps.leases,
      owner: deps.owner,
      ttlMs: deps.options.leaseTtlMs,
      now: () => deps.clock.now(),
      onLost: (runId) => this.drivers.get(runId)?.driver.stop('lease lost'),
      logger: deps.logger,
    });
  }

  isDriving(runId: string): boolean {
    return this.drivers.has(runId);
  }

  get activeCount(): number {
    return this.drivers.size;
  }

  get activeRunIds(): string[] {
    return [...this.drivers.keys()];
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

  /**
   * A run placed here (its lease taken in this process's name until `until`): counted in the load
   * at once, and started without taking the lease again (see LEASE_LEFT_TO_SKIP_TAKE). False when
   * it was reserved already (a retried launch): that reservation is left as it is.
   */
  reserve(runId: string, until: number): boolean {
    if (this.reserved.has(runId)) return false;
    this.reserved.set(runId, until);
    return true;
  }

  unreserve(runId: string): void {
    this.reserved.delete(runId);
  }

  /** Told each time a slot frees here (a driver stopped, a failed run's wait is over). */
  onSlotFreed(listener: () => void): () => void {
    this.slotListeners.add(listener);
    return () => this.slotListeners.delete(listener);
  }

  /** The process that holds the run's lease now, if another one does (it drives the run). */
  async drivenElsewhere(runId: string): Promise<string | undefined> {
    const holder = await this.leases.holder(runId, this.clock.now()).catch((err: unknown) => {
      // Dropped when the store does not answer: nobody is known to drive the run then, and the
      // callers (the CLI's wait, a run's read) ask again; anything else is logged.
      if (!isStoreUnavailable(err)) this.logger.warn(`run ${runId}: could not read its lease: ${(err as Error).message}`);
      return undefined;
    });
    return holder !== undefined && holder !== this.owner ? holder : undefined;
  }

  /** What a run pinned to `pin` waits for when this process's model is not its pin; undefined when this process may drive it. */
  pinWait(pin: RunPin): string | undefined {
    const match = matchPin(pin, this.here);
    return match.matches ? undefined : match.waitingFor;
  }

  /**
   * Drives the run in the background if this process may and can take its lease; resolves once the
   * lease is decided. A run driven here already is left to its driver.
   */
  async wake(runId: string, why: WakeReason): Promise<Wake> {
    const active = this.drivers.get(runId) ?? this.begin(runId, why);
    if (!active) return { driving: false, queued: !this.shuttingDown && !ASKED_HERE.has(why) && this.full(runId), stopped: Promise.resolve(undefined) };
    return { driving: await active.leased, queued: false, stopped: active.done };
  }

  /** Whether the cap and a failed driver's wait let the run start now (a human's ask passes both). */
  private mayStart(runId: string, why: WakeReason): boolean {
    if (ASKED_HERE.has(why)) return true;
    // At the cap: not taken here (it stays queued, or its lease is another's).
    if (this.full(runId)) return false;
    // Its last driver stopped on an error: started again automatically once its wait is over.
    return this.failures.waitMs(runId, this.clock.now()) <= 0;
  }

  /** Whether every slot here is taken but for the run's own (a run placed here counts already). */
  private full(runId: string): boolean {
    return !hasRoom(this.load - (this.reserved.has(runId) ? 1 : 0), this.options.maxActiveRuns);
  }

  private begin(runId: string, why: WakeReason): ActiveRun | undefined {
    if (this.shuttingDown || !this.mayStart(runId, why)) return undefined;
    // Placed here moments ago: the lease taken then is ours until `reservedUntil` (nobody takes or
    // releases a live lease of ours), so it is not taken again while nearly all of it is left — the
    // heartbeat's first renewal then comes with as much of the TTL to spare as after a fresh take.
    const reservedUntil = this.reserved.get(runId);
    const leaseHeld = reservedUntil !== undefined && reservedUntil - this.clock.now() > this.options.leaseTtlMs * LEASE_LEFT_TO_SKIP_TAKE;
    this.reserved.delete(runId);
    const driver = this.deps.newDriver(runId);
    let leaseTaken: (taken: boolean) => void = () => undefined;
    const leased = new Promise<boolean>((resolve) => (leaseTaken = resolve));
    const done = this.drive(runId, driver, leaseHeld, leaseTaken);
    const active = { driver, done, leased };
    this.drivers.set(runId, active);
    return active;
  }

  private async drive(runId: string, driver: RunDriver, leaseHeld: boolean, leaseTaken: (taken: boolean) => void): Promise<RunState | undefined> {
    let leased = false;
    try {
      if (await this.pinnedElsewhere(runId)) {
        // A lease placed in this process's name (a launch handed here) is given up at once: a matching process's recovery takes the run.
        if (leaseHeld || (await this.leases.holder(runId, this.clock.now())) === this.owner) await this.release(runId, 'left to a process matching its pin');
        return undefined;
      }
      leased = leaseHeld || (await this.leases.tryAcquire(runId, this.owner, this.options.leaseTtlMs, this.clock.now()));
      leaseTaken(leased);
      if (!leased) return undefined;
      this.heartbeat.add(runId);
      driver.knowRealWorkspace(await this.deps.prepareWorkspace(runId));
      // The run's MCP tools must be registered before its first model call offers them.
      await this.deps.tools.ready();
      this.failures.driving(runId);
      this.reportFailing();
      const state = await driver.drive();
      if (driver.fenced) this.heartbeat.fenced(runId);
      this.failures.stopped(runId);
      this.reportFailing();
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
      // found the lease held elsewhere frees nothing: telling the listeners would make every
      // process rescan every active run for each launch another process took.
      const freesSlot = leased || !this.hasRoom;
      this.drivers.delete(runId);
      this.heartbeat.delete(runId);
      if (leased && !this.shuttingDown) await this.release(runId, 'its driver stopped');
      if (freesSlot && !this.shuttingDown) this.slotFreed();
    }
  }

  /**
   * The one check before any driver starts: a run pinned to another provider or endpoint is left
   * to a process that matches — no lease, no claim, no model call here. Read from the store, not a
   * read model, so a re-pin just recorded is seen.
   */
  private async pinnedElsewhere(runId: string): Promise<boolean> {
    const state = await loadRunState(this.deps.store, runId, this.deps.checkpoints, this.logger);
    const waiting = state.launched && this.pinWait(pinOf(state.launched));
    if (!waiting) {
      this.leftForPin.delete(runId);
      return false;
    }
    if (this.leftForPin.get(runId) !== waiting) this.logger.log(`run ${runId}: left to ${waiting} (this process: ${describeProcessModel(this.here)})`);
    this.leftForPin.set(runId, waiting);
    return true;
  }

  /**
   * Gives the run's lease up. A release the store does not answer is logged and dropped: the lease
   * then lapses after its TTL, and the run is recovery's (only its next start waits that long).
   */
  private async release(runId: string, why: string): Promise<void> {
    await this.leases.release(runId, this.owner).catch((err: unknown) => this.logger.warn(`run ${runId}: lease not released (${why}), it lapses after its TTL: ${(err as Error).message}`));
  }

  private slotFreed(): void {
    for (const listener of this.slotListeners) listener();
  }

  /**
   * A driver stopped on an error: the run waits before it is started again (a fault that repeats
   * is retried now and then, not in a loop), and the process reports itself degraded while a run's
   * driver failed and none drives it since.
   */
  private driverFailed(runId: string, err: unknown): void {
    const { count, retryInMs } = this.failures.failed(runId, this.clock.now(), { outage: isStoreUnavailable(err) });
    this.logger.error(`run ${runId}: the driver stopped on an error (${count} in a row; started again in ${Math.round(retryInMs / 1000)} s): ${(err as Error)?.message ?? String(err)}`);
    this.reportFailing();
    // The listeners (recovery) look again when the wait is over; the health report once the run stops counting.
    this.later(retryInMs, () => this.slotFreed());
    this.later(retryInMs + FAILING_GRACE_MS, () => this.reportFailing());
  }

  private later(ms: number, work: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.shuttingDown) work();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  private reportFailing(): void {
    const failing = this.failures.failingRuns(this.clock.now());
    if (failing > 0) this.deps.health?.failed('run drivers', `${failing} run(s) stopped on an error and wait to be started again (see the log)`);
    else this.deps.health?.recovered('run drivers');
  }

  private dropExpiredReservations(): void {
    const now = this.clock.now();
    for (const [runId, until] of this.reserved) if (until <= now) this.reserved.delete(runId);
  }

  /** Stops the local driver of a run (cancel); resolves when it has stopped. */
  async stop(runId: string, reason: string): Promise<void> {
    const active = this.drivers.get(runId);
    if (!active) return;
    active.driver.stop(reason);
    await active.done;
  }

  /** The lease heartbeat's figures, for /metrics. */
  heartbeatFigures(): HeartbeatFigures {
    return this.heartbeat.figures();
  }

  /**
   * Shutdown (SIGTERM or close): abort model calls and tools in flight, record each active run as
   * suspended (SHUTDOWN) with a checkpoint, release the leases. They resume on the next start.
   */
  async onApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.heartbeat.stop();
    await Promise.all(
      [...this.drivers.entries()].map(async ([runId, active]) => {
        try {
          if (await active.driver.suspend(active.done)) this.logger.log(`run ${runId}: suspended for shutdown`);
        } catch (err) {
          this.logger.error(`run ${runId}: could not record the suspension: ${(err as Error).message}`);
        } finally {
          await this.release(runId, 'suspended for shutdown');
        }
      }),
    );
    // Tools' connections (MCP servers) last: no driver uses them any more.
    await this.deps.tools.close();
    // The checkpoint store and the leases are closed with the storage (the events module), after this.
  }
}
