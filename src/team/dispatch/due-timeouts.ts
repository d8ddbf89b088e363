import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { ConflictError, NotFoundError } from '../../shared/errors';
import type { CommandBus } from '@nestjs/cqrs';
import { isStoreUnavailable } from '../../events/errors';
import { OutageBackoff } from '../../events/store-retry';
import type { Clock } from '../../shared/ports';
import type { RunSummary } from '../runs/run-summary';
import type { RunsProjection } from '../runs/runs.projection';

export interface DueTimeout {
  id: string;
  policy: string;
  /** The command that applies the timeout policy (a decision appended at the run's revision). */
  command: object;
}

/**
 * Durable timeouts (reviews, tool approvals). The due time is recorded in an event; every serving
 * process scans the runs read model for what is past due and fires it. Firing is a decision
 * appended at the run's expected revision, so when several processes race exactly one lands, and
 * one that falls due while no process runs fires at the next start.
 */
export abstract class DueTimeoutScanner implements OnApplicationShutdown {
  protected abstract readonly what: string;
  private readonly logger: Logger;
  private timer?: NodeJS.Timeout;
  private scanning = false;
  private readonly outage = new OutageBackoff();

  constructor(
    private readonly runs: RunsProjection,
    private readonly commands: CommandBus,
    private readonly clock: Clock,
    private readonly intervalMs: number,
  ) {
    this.logger = new Logger(new.target.name);
  }

  /** What is due at `now` among the runs. */
  protected abstract due(runs: RunSummary[], now: number): DueTimeout[];

  /** Starts periodic scans (the HTTP app starts them; one-shot CLI commands do not). */
  start(): void {
    if (this.intervalMs <= 0 || this.timer) return;
    // A scan never rejects (it logs each failure; the next interval scans again): nobody waits for it.
    void this.scan();
    this.timer = setInterval(() => void this.scan(), this.intervalMs);
    this.timer.unref();
  }

  /** Fires every due timeout; returns how many fired here. */
  async scan(): Promise<number> {
    // While the store does not answer, scans back off rather than fail at every interval.
    if (this.scanning || this.outage.waiting) return 0;
    this.scanning = true;
    let fired = 0;
    try {
      await this.runs.catchUp();
      for (const timeout of this.due(this.runs.list(), this.clock.now())) {
        try {
          await this.commands.execute(timeout.command);
          fired++;
          this.logger.log(`${this.what} ${timeout.id}: timeout policy ${timeout.policy} applied`);
        } catch (err) {
          // Another process fired it first, or a human decided meanwhile.
          if (err instanceof ConflictError || err instanceof NotFoundError) continue;
          if (isStoreUnavailable(err)) throw err;
          // Anything else is this one's problem: the other due timeouts still fire.
          this.logger.error(`${this.what} ${timeout.id}: timeout policy not applied: ${(err as Error).message}`);
        }
      }
      if (this.outage.succeeded()) this.logger.log(`${this.what} timers run again`);
    } catch (err) {
      if (!isStoreUnavailable(err)) this.logger.error(`${this.what} timer scan failed: ${(err as Error).message}`);
      else if (this.outage.failed()) this.logger.warn(`${this.what} timers paused: the event store is not reachable`);
    } finally {
      this.scanning = false;
    }
    return fired;
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
