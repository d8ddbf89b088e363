import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import { CHECKPOINT_STORE, type CheckpointStore } from '../../checkpoint/checkpoint-store.port';
import { isStoreUnavailable } from '../../events/errors';
import { ConflictError } from '../../shared/errors';
import { OutageBackoff } from '../../events/store-retry';
import { CLOCK } from '../../shared/system';
import { TERMINAL_STATUSES } from '../domain/run-events';
import { runDecider } from '../domain/run-decider';
import { runContext, runStream } from '../runs/run-stream';
import type { Clock } from '../../shared/ports';
import { DriverPool } from './driver-pool';
import { RunsProjection } from '../runs/runs.projection';
import { RUN_LEASES, type RunLeases } from '../leases/run-leases.port';

export const RECOVERY_INTERVAL_MS = Symbol('RECOVERY_INTERVAL_MS');

/**
 * Crash recovery: at start and then periodically, this process claims every run that has neither
 * ended nor waits for a human and that no live lease covers — runs of a crashed process, runs
 * suspended at a shutdown — and drives them. Started by `triad serve` (not by one-shot CLI commands).
 */
@Injectable()
export class RecoveryService implements OnApplicationShutdown {
  private readonly logger = new Logger(RecoveryService.name);
  private timer?: NodeJS.Timeout;
  private scanning = false;
  private readonly outage = new OutageBackoff();
  /** A scan asked for while one ran (a slot freed): made right after it. */
  private again = false;
  private soon?: NodeJS.Timeout;
  private unlisten?: () => void;

  constructor(
    private readonly runs: RunsProjection,
    private readonly drivers: DriverPool,
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Inject(CHECKPOINT_STORE) private readonly checkpoints: CheckpointStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(RECOVERY_INTERVAL_MS) private readonly intervalMs: number,
    @Inject(RUN_LEASES) private readonly leases: RunLeases,
  ) {}

  start(): void {
    if (this.timer) return;
    // A driver that stops frees a slot, a failed driver's wait ends: a run no live lease covers may
    // start now (queued launches are the dispatcher's, which wakes them first).
    this.unlisten = this.drivers.onSlotFreed(() => this.scanSoon());
    // A scan never rejects (it logs each failure; the next interval scans again): nobody waits for it.
    void this.scan();
    if (this.intervalMs > 0) {
      this.timer = setInterval(() => void this.scan(), this.intervalMs);
      this.timer.unref();
    }
  }

  private scanSoon(): void {
    if (this.soon) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      void this.scan();
    }, 0);
    this.soon.unref();
  }

  /** One pass; returns the runs this process started driving. */
  async scan(): Promise<string[]> {
    // While the store does not answer, scans back off rather than fail at every interval.
    if (this.scanning) this.again = true;
    if (this.scanning || this.outage.waiting) return [];
    this.scanning = true;
    const started: string[] = [];
    const candidates: Array<Promise<unknown>> = [];
    try {
      await this.runs.catchUp();
      // Runs waiting for a human are started again by the decision, not by recovery; oldest
      // first, so queued runs start in the order they were launched.
      const waiting = this.runs
        .list()
        .reverse()
        .filter((run) => !TERMINAL_STATUSES.has(run.status) && run.status !== 'awaiting_review' && run.status !== 'awaiting_approval' && !this.drivers.isDriving(run.runId));
      // One statement for all of them: runs a live lease covers (driven elsewhere, or placed) are skipped.
      const held = waiting.length > 0 && this.drivers.hasRoom ? await this.leases.held(waiting.map((r) => r.runId), this.clock.now()) : undefined;
      for (const run of waiting) {
        if (!held) break;
        if (held.has(run.runId) || this.drivers.isDriving(run.runId)) continue;
        // A run pinned to another model is not resumed in this process's name: `start` leaves it to one that matches.
        if (run.status === 'suspended' && this.drivers.pinWait(run.pin) === undefined && !(await this.resumeSuspended(run.runId))) continue;
        candidates.push(this.drivers.wake(run.runId, 'recovery').then(({ driving }) => driving && started.push(run.runId)));
      }
      // Only the runs whose lease this process took: the others are driven by a live process.
      await Promise.all(candidates);
      if (started.length > 0) this.logger.log(`recovery: driving ${started.length} run(s): ${started.join(', ')}`);
      if (this.outage.succeeded()) this.logger.log('recovery scans succeed again');
    } catch (err) {
      if (!isStoreUnavailable(err)) this.logger.error(`recovery scan failed: ${(err as Error).message}`);
      else if (this.outage.failed()) this.logger.warn('recovery paused: the event store is not reachable');
    } finally {
      this.scanning = false;
      if (this.again) {
        this.again = false;
        this.scanSoon();
      }
    }
    return started;
  }

  /** Records RunResumed for a suspended run; false when someone else changed it first. */
  private async resumeSuspended(runId: string): Promise<boolean> {
    const at = new Date(this.clock.now()).toISOString();
    try {
      const { state } = await this.path.handle(
        runStream(this.path.store, runId, this.checkpoints),
        (state) => (state.suspended ? runDecider.decide({ type: 'ResumeRun', runId, by: `system:${this.drivers.owner}`, at }, state) : []),
        runContext(runId, 'system'),
        { maxAttempts: 1 },
      );
      return !state.suspended;
    } catch (err) {
      // Changed meanwhile (a concurrent resume, a cancel): the next scan sees it as it is.
      if (err instanceof ConflictError) return false;
      throw err;
    }
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.soon) clearTimeout(this.soon);
    this.unlisten?.();
  }
}
