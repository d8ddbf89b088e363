/**
 * The same-error circuit breaker: when a model call fails with the same error signature several
 * times in a row, retrying again only burns time and quota, so the run ends ERROR naming the
 * signature. A different error resets the count, and so does a completed call. The count is folded
 * from ModelCallFailed events (see run-state.ts), so a resumed driver continues it.
 *
 * Capacity faults (rate limited, overloaded) say the provider is busy, not that the request is
 * wrong, and they repeat word for word: the retry schedule alone bounds them (counting them would
 * cut the default three retries to two). They reset the count like any other error.
 */

export const BREAKER_THRESHOLD = 3;

export interface BreakerState {
  /** Signature of the last consecutive failures. */
  signature?: string;
  /** How many failures in a row had it. */
  count: number;
}

export const CLOSED_BREAKER: BreakerState = Object.freeze({ count: 0 }) as BreakerState;

export interface FailureFacts {
  kind: string;
  status?: number;
  message: string;
}

/**
 * What makes two failures "the same error": kind, HTTP status and the message with its variable
 * parts (request ids, numbers, hex ids) blanked, so "retry in 3 s" and "retry in 5 s" match.
 */
export function errorSignature(failure: FailureFacts): string {
  return `${failure.kind}/${failure.status ?? '-'}/${normaliseErrorMessage(failure.message)}`;
}

export function normaliseErrorMessage(message: string): string {
  return message
    .toLowerCase()
    .replace(/\b(req|request|msg|toolu|call)_[a-z0-9]+\b/g, '$1_*')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '*')
    .replace(/\b[0-9a-f]{12,}\b/g, '*')
    .replace(/\d+(\.\d+)?/g, '#')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200);
}

const CAPACITY_FAULTS: ReadonlySet<string> = new Set(['rate_limited', 'overloaded']);

/** The breaker after one more failed call. */
export function breakerAfter(state: BreakerState, failure: FailureFacts): BreakerState {
  return CAPACITY_FAULTS.has(failure.kind) ? { ...CLOSED_BREAKER } : afterFailure(state, errorSignature(failure));
}

/** The breaker after one more failure with this signature. */
export function afterFailure(state: BreakerState, signature: string): BreakerState {
  return state.signature === signature ? { signature, count: state.count + 1 } : { signature, count: 1 };
}

export function isTripped(state: BreakerState, threshold = BREAKER_THRESHOLD): boolean {
  return state.signature !== undefined && state.count >= threshold;
}

export function breakerMessage(state: BreakerState): string {
  return `circuit breaker: the same model error ${state.count} times in a row (${state.signature})`;
}
