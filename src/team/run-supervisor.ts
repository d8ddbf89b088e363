import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { join } from 'node:path';
import { CHECKPOINT_STORE, type CheckpointStore } from '../checkpoint/checkpoint-store.port';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { EVENT_STORE, type EventStore } from '../events/event-store.port';
import { isStoreUnavailable } from '../events/errors';
import { CLOCK, IDS, PROCESS_ID } from '../shared/system';
import type { CommandPath } from '../events/command-handling';
import { COMMAND_PATH } from '../events/command-path.module';
import { LeaseHeartbeat } from './leases/lease-heartbeat';
import { RUN_LEASES, type RunLeases } from './leases/run-leases';
import { LiveRunBus } from './live-run-bus';
import { MODEL_PROVIDER, type ModelProvider } from './models/model.port';
import { processFairShare } from './fair-share';
import type { Clock, Ids } from '../shared/ports';
import { RunDriver, type RetryPolicy } from './run-driver';
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
  private readonly heartbeat: LeaseHeartbeat;
  private shuttingDown = false;

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
  ) {
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
    });
    let leaseTaken: (taken: boolean) => void = () => undefined;
    const leasedPromise = new Promise<boolean>((resolve) => (leaseTaken = resolve));
    const done = (async () => {
      let leased = false;
      try {
        leased = await this.leases.tryAcquire(runId, this.owner, this.options.leaseTtlMs, this.clock.now());
        leaseTaken(leased);
        if (!leased) return undefined;
        this.heartbeat.add(runId);
        await this.prepareWorkspace(runId);
        return await driver.drive();
      } catch (err) {
        // A store that did not answer before the lease was taken: recovery starts the run again.
        if (isStoreUnavailable(err) && !leased) this.logger.warn(`run ${runId}: not started, the event store is not reachable`);
        else this.logger.error(`run ${runId}: the driver stopped on an error: ${(err as Error).message}`);
        return undefined;
      } finally {
        leaseTaken(leased);
        this.drivers.delete(runId);
        this.heartbeat.delete(runId);
        if (leased && !this.shuttingDown) await this.leases.release(runId, this.owner).catch(() => undefined);
      }
    })();
    this.drivers.set(runId, { driver, done, leased: leasedPromise });
    return done;
  }

  /** Starts the run like `start`; resolves once the lease is decided: true when this process drives it. */
  startIfLeased(runId: string): Promise<boolean> {
    void this.start(runId);
    return this.drivers.get(runId)?.leased ?? Promise.resolve(false);
  }

  /** Stops the local driver of a run (cancel); resolves when it has stopped. */
  async stop(runId: string, reason: string): Promise<void> {
    const active = this.drivers.get(runId);
    if (!active) return;
    active.driver.stop(reason);
    await active.done;
  }

  /** Prometheus lines of the lease heartbeat. */
  metricLines(): string[] {
    return this.heartbeat.metricLines();
  }

  /**
   * Shutdown (SIGTERM or close): abort model calls and tools in flight, record each active run as
   * suspended (SHUTDOWN) with a checkpoint, release the leases. They resume on the next start.
   */
  async onApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    this.heartbeat.stop();
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
    // The checkpoint store and the leases are closed with the storage (the events module), after this.
  }
}
