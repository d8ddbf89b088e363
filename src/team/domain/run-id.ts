import { hashOf } from '../../shared/canonical-json';

/**
 * A run's id, chosen once at its launch: an idempotency key names the same run for the same
 * launcher, so a retried launch finds the run it made; without a key the run gets a fresh id.
 */
export function launchRunId(launchedBy: string, idempotencyKey: string | undefined, freshId: () => string): string {
  return idempotencyKey ? runIdForIdempotencyKey(launchedBy, idempotencyKey) : freshId();
}

/** The run id an idempotency key stands for: the same launcher and key always name the same run. */
export function runIdForIdempotencyKey(launchedBy: string, key: string): string {
  return `run_${hashOf({ launchedBy, key }).slice(0, 24)}`;
}
