/**
 * When a delivery is tried again, and when it is given up on: exponential backoff with
 * jitter from `baseMs`, capped at `maxDelayMs`, until `giveUpAfterMs` has passed since the first
 * attempt. A 2xx acknowledges; any other answer, a timeout or a connection that fails is retried.
 * Pure: the attempt count, the times and the jitter's source are given.
 */

export interface DeliverySchedule {
  /** The first retry waits up to this long (jittered); each next one up to twice the last. */
  baseMs: number;
  /** No wait is longer. */
  maxDelayMs: number;
  /** After this long since the first attempt, the delivery fails for good (its endpoint moves on). */
  giveUpAfterMs: number;
}

/** Defaults: an hour down loses nothing (retries every 10 min at most), a day down fails the delivery. */
export const DEFAULT_DELIVERY_SCHEDULE: DeliverySchedule = { baseMs: 1_000, maxDelayMs: 10 * 60_000, giveUpAfterMs: 24 * 60 * 60_000 };

/** What an attempt came to. */
export type AttemptResult = { kind: 'answered'; status: number } | { kind: 'failed'; error: string };

/** Whether an attempt acknowledged the message (any 2xx). */
export function acknowledged(result: AttemptResult): boolean {
  return result.kind === 'answered' && result.status >= 200 && result.status < 300;
}

/** The wait after the `attempt`-th failed attempt (from 1): drawn between a tenth of base·2^(attempt−1) (capped) and all of it. */
export function retryDelayMs(attempt: number, schedule: DeliverySchedule, random: () => number): number {
  const ceiling = Math.min(schedule.maxDelayMs, schedule.baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 40));
  // At least a tenth of the ceiling: jitter spreads retries that failed together, and no retry comes at once.
  return Math.round(ceiling * (0.1 + 0.9 * Math.min(Math.max(random(), 0), 1)));
}

/** What follows a failed attempt: a retry at `retryAt`, or giving up (the next one would come too late). */
export type AfterFailure = { next: 'retry'; retryAt: number; delayMs: number } | { next: 'give_up' };

/** After the `attempt`-th failure at `nowMs`, of a delivery first tried at `firstAttemptAt`. */
export function afterFailure(attempt: number, firstAttemptAt: number, nowMs: number, schedule: DeliverySchedule, random: () => number): AfterFailure {
  const delayMs = retryDelayMs(attempt, schedule, random);
  if (nowMs + delayMs - firstAttemptAt > schedule.giveUpAfterMs) return { next: 'give_up' };
  return { next: 'retry', retryAt: nowMs + delayMs, delayMs };
}
