/**
 * Waiting out a store fault: exponential backoff with full jitter, bounded, so that many readers
 * and drivers paused by the same outage do not all come back in the same millisecond.
 */

export { pause } from '../shared/pause';

export const STORE_RETRY_BASE_MS = 100;
export const STORE_RETRY_MAX_MS = 5_000;

/** The pause before attempt `attempt + 1` (attempt counts from 1): uniform in [base/2, min(max, base·2^(attempt-1))]. */
export function storeBackoffMs(attempt: number, random: () => number = Math.random, baseMs = STORE_RETRY_BASE_MS, maxMs = STORE_RETRY_MAX_MS): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  const floor = Math.min(ceiling, baseMs / 2);
  return Math.round(floor + random() * (ceiling - floor));
}


/**
 * For periodic work (recovery scans, timers): after a store fault, skip the next runs for a
 * growing, jittered pause, and say when the outage starts and ends rather than at every failure.
 */
export class OutageBackoff {
  private failures = 0;
  private until = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** True while the pause after the last failure lasts. */
  get waiting(): boolean {
    return this.now() < this.until;
  }

  /** Records a failure; true for the first of an outage. */
  failed(): boolean {
    this.failures++;
    this.until = this.now() + storeBackoffMs(this.failures);
    return this.failures === 1;
  }

  /** Records a success; true when it ends an outage. */
  succeeded(): boolean {
    const ended = this.failures > 0;
    this.failures = 0;
    this.until = 0;
    return ended;
  }
}
