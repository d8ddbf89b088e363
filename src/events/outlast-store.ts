/**
 * The two ways the app outlasts a store that stops answering: retry one operation until the store
 * answers (`untilStoreAnswers`), and follow a subscription across faults (`followAcrossFaults`).
 * Both wait with the one backoff policy (store-retry.ts: exponential, full jitter, capped), stop
 * when their signal aborts, and tell their caller of each fault so that it reports to the log and
 * /health as it always has. Hand-written rather than taken from a retry library (p-retry,
 * cockatiel): what is retried is decided by the store's own classification (isStoreUnavailable),
 * a follower must resume after the last event it handled, and each caller reports faults its own
 * way; what is left for a library is a loop of a dozen lines.
 */

import { isStoreUnavailable } from './errors';
import { pause, storeBackoffMs, STORE_RETRY_BASE_MS, STORE_RETRY_MAX_MS } from './store-retry';

/** The backoff of one caller: the policy of store-retry.ts, with the caller's first pause and cap. */
export interface StoreBackoff {
  /** The first pause's upper bound (default STORE_RETRY_BASE_MS). */
  baseMs?: number;
  /** No pause is longer (default STORE_RETRY_MAX_MS, never below `baseMs`). */
  maxMs?: number;
  /** The jitter's source (tests make it fixed). */
  random?: () => number;
}

/** The pause after the `attempt`-th failure in a row (from 1), under `backoff`. */
export function backoffMs(attempt: number, backoff: StoreBackoff = {}): number {
  const base = backoff.baseMs ?? STORE_RETRY_BASE_MS;
  return storeBackoffMs(attempt, backoff.random, base, Math.max(base, backoff.maxMs ?? STORE_RETRY_MAX_MS));
}

/** Waits out the `attempt`-th failure in a row; returns early when `signal` aborts (never rejects). */
export function waitOut(attempt: number, signal?: AbortSignal, backoff?: StoreBackoff): Promise<void> {
  return pause(backoffMs(attempt, backoff), signal);
}

export interface RetryOptions {
  /** Stops retrying: the last error is rethrown (whether a write that failed so landed is unknown). */
  signal?: AbortSignal;
  backoff?: StoreBackoff;
  /** Which errors are waited out (default: the store not answering; never bad input or a conflict). */
  retryOn?: (err: unknown) => boolean;
  /** Gives up after this many attempts in all, rethrowing the last error (default: never). */
  attempts?: number;
  /** Told of each failure that will be retried, before the pause. */
  onFault?: (err: unknown, attempt: number) => void;
}

/**
 * Runs `op` until it succeeds. An error `retryOn` refuses is rethrown at once; a retried one is
 * waited out (backoff with jitter) and `op` is run again. The abort is checked after each failure
 * and each pause, never before the first attempt: a caller stopping meanwhile gets the last error.
 */
export async function untilStoreAnswers<T>(op: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const retryOn = options.retryOn ?? isStoreUnavailable;
  for (let attempt = 1; ; attempt++) {
    try {
      return await op(attempt);
    } catch (err) {
      if (!retryOn(err) || options.signal?.aborted || attempt === options.attempts) throw err;
      options.onFault?.(err, attempt);
      await waitOut(attempt, options.signal, options.backoff);
      if (options.signal?.aborted) throw err;
    }
  }
}

/** What one life of a follower is given. */
export interface FollowLife {
  /** The position of the last event handled (or scanned past): the next subscription starts after it. */
  after: number | undefined;
  /** True for every life after a fault ended the one before. */
  resumed: boolean;
  /** Says the follower handled (or scanned past) `position`: the next life starts after it, and the backoff starts over. */
  seen(position: number): void;
}

export interface FollowOptions {
  /** Stops following: the life in progress is the caller's to close (its subscription takes the same signal). */
  signal: AbortSignal;
  /** Where the first life starts (after this position); undefined lets the first life find it. */
  from?: number;
  backoff?: StoreBackoff;
  /**
   * One subscription's life: subscribes after `life.after`, handles its events, calls `seen` for
   * each. Resolves when the subscription ends (closed): following is over. Rejects on a fault.
   */
  life(life: FollowLife): Promise<void>;
  /** Told of each fault (every error ends a life; the next starts after the pause). */
  onFault?: (err: unknown, failuresInARow: number, after: number | undefined) => void;
}

/**
 * Follows the store across faults: runs `life` again after every error it ends with, after the
 * last position it said it saw, so that no event is skipped, and none handled twice as long as
 * `seen` is said only once an event is handled. The pause grows while lives fail in a row and
 * starts over once one sees an event. Resolves when a life ends without error, or once `signal`
 * aborts (an error after the abort is the abort's doing, not a fault).
 */
export async function followAcrossFaults(options: FollowOptions): Promise<void> {
  let after = options.from;
  let failures = 0;
  const seen = (position: number) => {
    if (after === undefined || position > after) after = position;
    failures = 0;
  };
  for (let resumed = false; !options.signal.aborted; resumed = true) {
    try {
      await options.life({ after, resumed, seen });
      return;
    } catch (err) {
      if (options.signal.aborted) return;
      failures++;
      options.onFault?.(err, failures, after);
      await waitOut(failures, options.signal, options.backoff);
    }
  }
}
