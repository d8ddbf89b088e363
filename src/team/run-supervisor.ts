import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { CHECKPOINT_STORE, type CheckpointStore } from '../checkpoint/checkpoint-store.port';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { EVENT_STORE, type EventStore } from '../events/event-store.port';
import { isStoreUnavailable } from '../events/errors';
import { CLOCK, ID_GENERATOR } from '../shared/system';
import { RUN_LEASES, type RunLeases } from './leases/run-leases';
import { LiveRunBus } from './live-run-bus';
import { MODEL_PROVIDER, type ModelProvider } from './models/model.port';
import { processFairShare } from './fair-share';
import { RunDriver, type Clock, type IdGenerator, type RetryPolicy } from './run-driver';
import type { RunState } from './domain/run-state';
import { TOOL_REGISTRY } from './tokens';
import type { ToolRegistry } from './tools/tool-registry';
import { createWorkspace } from './tools/workspace';

export const RETRY_POLICY = Symbol('RETRY_POLICY');
export const SUPERVISOR_OPTIONS = Symbol('SUPERVISOR_OPTIONS');

export interface SupervisorOptions {
  /** How long a lease lasts without renewal. */
  leaseTtlMs: number;
  checkpointEveryTurns: number;
}

interface ActiveRun {
  driver: RunDriver;
  done: Promise<RunState | undefined>;
}

/**
 * The heartbeat renews every TTL/4: a lease then survives a heartbeat delayed by up to 3/4 of the
 * TTL (event-loop lag, a slow renewal, a store fault in between) before anyone may take it.
 */
const HEARTBEATS_PER_TTL = 4;

/**
 * Runs many runs concurrently in one process, one driver per run. A run is driven only under a
 * lease (renewed by a heartbeat, one statement for all of this process's leases); the driver's
 * DriverClaimed event fences any previous holder. A driver stops by itself when its run ends or
 * waits for a human, and is stopped when a renewal finds its lease taken by another process —
 * never because a renewal failed (the store did not answer): nobody else can take a lease
 * before it expires, and a driver that was fenced meanwhile stops at its next append.
 */
@Injectable()
export class RunSupervisor implements OnApplicationShutdown {
  private readonly logger = new Logger(RunSupervisor.name);
  private readonly drivers = new Map<string, ActiveRun>();
  private heartbeat?: NodeJS.Timeout;
  /** Runs whose lease this process took and has not released: what the heartbeat renews. */
  private readonly leased = new Set<string>();
  private loopDelay?: IntervalHistogram;
  private readonly counters = { renewals: 0, renewalFailures: 0, leasesLost: 0, maxHeartbeatDelayMs: 0 };
  private renewalFailing = false;
  /** This process's identity as a driver: unique per process start. */
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private shuttingDown = false;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(MODEL_PROVIDER) private readonly model: ModelProvider,
    @Inject(TOOL_REGISTRY) private readonly tools: ToolRegistry,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    @Inject(TRIAD_CONFIG) private readonly config: TriadConfig,
    @Inject(RETRY_POLICY) private readonly retry: RetryPolicy,
    @Inject(RUN_LEASES) private readonly leases: RunLeases,
    @Inject(CHECKPOINT_STORE) private readonly checkpoints: CheckpointStore,
    @Inject(SUPERVISOR_OPTIONS) private readonly options: SupervisorOptions,
    private readonly live: LiveRunBus,
  ) {}

  get workspaceRoot(): string {
    return join(this.config.dataDir, 'workspaces');
  }

  async prepareWorkspace(runId: string): Promise<string> {
    return createWorkspace(this.workspaceRoot, runId);
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

  /**
   * Drives a run in the background if this process can take its lease. Resolves when the driver
   * stops (undefined when the lease is held elsewhere or the driver failed).
   */
  start(runId: string): Promise<RunState | undefined> {
    const active = this.drivers.get(runId);
    if (active) return active.done;
    if (this.shuttingDown) return Promise.resolve(undefined);
    const driver = new RunDriver(runId, {
      store: this.store,
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
    });
    const done = (async () => {
      let leased = false;
      try {
        leased = await this.leases.tryAcquire(runId, this.owner, this.options.leaseTtlMs, this.clock.now());
        if (!leased) return undefined;
        this.leased.add(runId);
        this.ensureHeartbeat();
        await this.prepareWorkspace(runId);
        return await driver.drive();
      } catch (err) {
        // A store that did not answer before the lease was taken: recovery starts the run again.
        if (isStoreUnavailable(err) && !leased) this.logger.warn(`run ${runId}: not started, the event store is not reachable`);
        else this.logger.error(`run ${runId}: the driver stopped on an error: ${(err as Error).message}`);
        return undefined;
      } finally {
        this.drivers.delete(runId);
        this.leased.delete(runId);
        if (leased && !this.shuttingDown) await this.leases.release(runId, this.owner).catch(() => undefined);
      }
    })();
    this.drivers.set(runId, { driver, done });
    return done;
  }

  /** Stops the local driver of a run (cancel); resolves when it has stopped. */
  async stop(runId: string, reason: string): Promise<void> {
    const active = this.drivers.get(runId);
    if (!active) return;
    active.driver.stop(reason);
    await active.done;
  }

  private ensureHeartbeat(): void {
    if (this.heartbeat) return;
    this.loopDelay = monitorEventLoopDelay({ resolution: 20 });
    this.loopDelay.enable();
    const every = Math.max(25, Math.floor(this.options.leaseTtlMs / HEARTBEATS_PER_TTL));
    let planned = Date.now() + every;
    // A chain of timeouts, not an interval: a renewal slower than the period never overlaps the next.
    const beat = async () => {
      const late = Date.now() - planned;
      this.counters.maxHeartbeatDelayMs = Math.max(this.counters.maxHeartbeatDelayMs, late);
      if (late > this.options.leaseTtlMs / 2) this.logger.warn(`lease heartbeat ran ${late} ms late (event loop busy or process paused)`);
      await this.renewLeases();
      if (this.shuttingDown) return;
      planned = Date.now() + every;
      this.heartbeat = setTimeout(() => void beat(), every);
      this.heartbeat.unref();
    };
    this.heartbeat = setTimeout(() => void beat(), every);
    this.heartbeat.unref();
  }

  /**
   * Renews every lease this process holds, in one statement. A driver whose lease another process
   * took stops at once; a renewal the store did not answer stops nothing (see the class comment).
   */
  async renewLeases(): Promise<void> {
    const runIds = [...this.leased];
    if (runIds.length === 0) return;
    let held: Set<string>;
    try {
      held = await this.leases.renewAll(runIds, this.owner, this.options.leaseTtlMs, this.clock.now());
      this.counters.renewals++;
      if (this.renewalFailing) this.logger.log('lease renewals succeed again');
      this.renewalFailing = false;
    } catch (err) {
      this.counters.renewalFailures++;
      if (!this.renewalFailing) this.logger.warn(`lease renewal failed (drivers go on): ${(err as Error).message}`);
      this.renewalFailing = true;
      return;
    }
    for (const runId of runIds) {
      // Released meanwhile (its driver ended): not a loss.
      if (held.has(runId) || !this.leased.has(runId)) continue;
      this.counters.leasesLost++;
      this.logger.warn(`run ${runId}: lease taken by another process; stopping the local driver`);
      this.leased.delete(runId);
      this.drivers.get(runId)?.driver.stop('lease lost');
    }
  }

  /** Prometheus lines: lease renewals, failures, leases lost, heartbeat and event-loop delays. */
  metricLines(): string[] {
    const c = this.counters;
    const lines = [
      '# HELP triad_lease_renewals_total Lease heartbeats that renewed this process\'s leases.',
      '# TYPE triad_lease_renewals_total counter',
      `triad_lease_renewals_total ${c.renewals}`,
      '# HELP triad_lease_renewal_failures_total Lease heartbeats the store did not answer.',
      '# TYPE triad_lease_renewal_failures_total counter',
      `triad_lease_renewal_failures_total ${c.renewalFailures}`,
      '# HELP triad_leases_lost_total Leases found taken by another process (its driver here stopped).',
      '# TYPE triad_leases_lost_total counter',
      `triad_leases_lost_total ${c.leasesLost}`,
      '# HELP triad_lease_heartbeat_delay_max_seconds Longest delay of a lease heartbeat past its planned time.',
      '# TYPE triad_lease_heartbeat_delay_max_seconds gauge',
      `triad_lease_heartbeat_delay_max_seconds ${(Math.max(0, c.maxHeartbeatDelayMs) / 1000).toFixed(3)}`,
    ];
    if (this.loopDelay) {
      lines.push(
        '# HELP triad_event_loop_delay_max_seconds Longest event-loop delay seen since drivers started.',
        '# TYPE triad_event_loop_delay_max_seconds gauge',
        `triad_event_loop_delay_max_seconds ${(this.loopDelay.max / 1e9).toFixed(3)}`,
      );
    }
    return lines;
  }

  /**
   * Shutdown (SIGTERM or close): abort model calls and tools in flight, record each active run as
   * suspended (SHUTDOWN) with a checkpoint, release the leases. They resume on the next start.
   */
  async onApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    if (this.heartbeat) clearTimeout(this.heartbeat);
    this.loopDelay?.disable();
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
    // The last checkpoints are saved: a store with a connection of its own can let go of it.
    await this.checkpoints.close().catch(() => undefined);
  }
}
