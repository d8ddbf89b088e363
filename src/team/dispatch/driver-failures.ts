import { doublingDelayMs } from '../../shared/pause';

/**
 * Drivers that stopped on an error (not a model failure, which the run's retry schedule covers,
 * nor a store outage, which the store reports: a workspace that cannot be made, a write the store
 * refuses as invalid, a bug). Each such run waits before it is started again automatically, twice
 * as long after each failure in a row (1 s, 2 s, 4 s … up to 5 min), so a fault that repeats costs
 * an attempt now and then, not a loop; a run whose driver stops normally starts afresh.
 *
 * A run counts as failing from its driver's error until a new driver gets going, or until a little
 * after its retry was due (recovery starts it then, unless it went to a gate, ended, or is driven
 * elsewhere meanwhile: then it is not this process's to report). `GET /health` is degraded while
 * any run is failing.
 */

export const FIRST_RETRY_MS = 1_000;
export const MAX_RETRY_MS = 300_000;
/** How long past its retry a run still counts as failing without a new driver. */
export const FAILING_GRACE_MS = 15_000;

interface RunFailures {
  count: number;
  retryAt: number;
  failing: boolean;
}

export class DriverFailures {
  private readonly runs = new Map<string, RunFailures>();

  /** A driver stopped on an error (an outage: `outage`, not counted as failing): when the run may start again. */
  failed(runId: string, now: number, options: { outage?: boolean } = {}): { count: number; retryInMs: number } {
    this.prune(now);
    const count = (this.runs.get(runId)?.count ?? 0) + 1;
    const retryInMs = doublingDelayMs(count - 1, FIRST_RETRY_MS, MAX_RETRY_MS);
    this.runs.set(runId, { count, retryAt: now + retryInMs, failing: !options.outage });
    return { count, retryInMs };
  }

  /** A new driver of the run got going (lease, workspace and tools ready): it is not failing now. */
  driving(runId: string): void {
    const f = this.runs.get(runId);
    if (f) f.failing = false;
  }

  /** A driver stopped without an error: its run starts afresh. */
  stopped(runId: string): void {
    this.runs.delete(runId);
  }

  /** How long the run must still wait before an automatic start (0: it may start now). */
  waitMs(runId: string, now: number): number {
    const f = this.runs.get(runId);
    return f ? Math.max(0, f.retryAt - now) : 0;
  }

  /** Runs whose last driver stopped on an error, with no driver since, and not long past their retry. */
  failingRuns(now: number): number {
    let n = 0;
    for (const f of this.runs.values()) if (f.failing && now < f.retryAt + FAILING_GRACE_MS) n++;
    return n;
  }

  /** Forgets runs whose last retry is long past (they went on elsewhere, ended, or wait for a human). */
  private prune(now: number): void {
    for (const [runId, f] of this.runs) if (now >= f.retryAt + MAX_RETRY_MS) this.runs.delete(runId);
  }
}
