/**
 * Drivers that stopped on an error (not a model failure, which the run's retry schedule covers: a
 * store that refuses a write, a workspace that cannot be created, a database that is damaged).
 * Each such run waits before it is started again automatically, twice as long after each failure
 * in a row (1 s, 2 s, 4 s … up to 5 min), so a fault that repeats costs an attempt now and then,
 * not a loop; a run whose driver stops normally starts afresh. A run is failing from its driver's
 * error until its next driver gets going (`GET /health` reports the process degraded meanwhile).
 */

export const FIRST_RETRY_MS = 1_000;
export const MAX_RETRY_MS = 300_000;

interface RunFailures {
  count: number;
  retryAt: number;
  failing: boolean;
}

export class DriverFailures {
  private readonly runs = new Map<string, RunFailures>();

  /**
   * A driver stopped on an error: when the run may be started again automatically. An outage of
   * the store (reported by the store itself) delays the run but does not mark it failing.
   */
  failed(runId: string, now: number, options: { outage?: boolean } = {}): { count: number; retryInMs: number } {
    const count = (this.runs.get(runId)?.count ?? 0) + 1;
    const retryInMs = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(count - 1, 30));
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

  /** Runs whose last driver stopped on an error and that no driver drives since. */
  get failingRuns(): number {
    let n = 0;
    for (const f of this.runs.values()) if (f.failing) n++;
    return n;
  }
}
