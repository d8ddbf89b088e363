import {
  DEFAULT_RETRY_POLICY,
  maxAttemptsOf,
  PRODUCT_LAUNCH_DEFAULTS,
  productLaunchDefaults,
  retryDelayMs,
  retrySchedule,
  type RetryPolicy,
} from '../../../src/team/domain/resilience/policies';
import { breakerAfter, CLOSED_BREAKER, isTripped, type BreakerState } from '../../../src/team/domain/resilience/circuit-breaker';
import { buildRunLaunched, InvalidLaunchError, type LaunchRunInput } from '../../../src/team/commands/launch';

// Model-call retries, given / when / then: which wait follows which failed attempt, under a
// schedule (the default) and under the older exponential form runs may have recorded.

const NO_JITTER = () => 0;
const FULL_JITTER = () => 0.999_999;

/** given a policy, when attempts 1..n fail (with this retry-after), then these waits follow. */
function waitsAfterFailures(policy: RetryPolicy, options: { retryAfterMs?: number; random?: () => number } = {}): Array<number | undefined> {
  const waits: Array<number | undefined> = [];
  for (let attempt = 1; attempt <= maxAttemptsOf(policy); attempt++) waits.push(retryDelayMs(policy, attempt, options.retryAfterMs, options.random ?? NO_JITTER));
  return waits;
}

describe('retry schedule (the default)', () => {
  it('given the default schedule, when every attempt fails, then it waits 10 s, 30 s, 90 s and gives up after the fourth attempt', () => {
    expect(DEFAULT_RETRY_POLICY).toEqual({ delaysMs: [10_000, 30_000, 90_000], maxDelayMs: 300_000 });
    expect(maxAttemptsOf(DEFAULT_RETRY_POLICY)).toBe(4);
    expect(waitsAfterFailures(DEFAULT_RETRY_POLICY)).toEqual([10_000, 30_000, 90_000, undefined]);
  });

  it('given jitter, then a wait is never earlier than scheduled and at most a tenth later', () => {
    expect(waitsAfterFailures(DEFAULT_RETRY_POLICY, { random: FULL_JITTER })).toEqual([11_000, 33_000, 99_000, undefined]);
  });

  it('given a retry-after longer than the scheduled wait, then the wait is the retry-after', () => {
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, 1, 45_000, NO_JITTER)).toBe(45_000);
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, 1, 45_000, FULL_JITTER)).toBe(45_000);
  });

  it('given a retry-after shorter than the scheduled wait, then the schedule wins', () => {
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, 2, 2_000, NO_JITTER)).toBe(30_000);
  });

  it('given a retry-after beyond the cap, then the wait is the cap', () => {
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, 1, 3_600_000, NO_JITTER)).toBe(300_000);
    expect(retryDelayMs(retrySchedule([100], 1_000), 1, 60_000, NO_JITTER)).toBe(1_000);
  });

  it('given jitter that would pass the cap, then the wait is the cap', () => {
    expect(retryDelayMs(retrySchedule([1_000], 1_000), 1, undefined, FULL_JITTER)).toBe(1_000);
  });

  it('given no delays, then the first failure is final', () => {
    expect(waitsAfterFailures(retrySchedule([]))).toEqual([undefined]);
  });

  it('a schedule’s cap is five minutes, or its longest delay when that is longer', () => {
    expect(retrySchedule([50, 50])).toEqual({ delaysMs: [50, 50], maxDelayMs: 300_000 });
    expect(retrySchedule([600_000])).toEqual({ delaysMs: [600_000], maxDelayMs: 600_000 });
  });
});

describe('retry policy in the older exponential form (recorded by earlier runs)', () => {
  const older: RetryPolicy = { maxAttempts: 4, baseDelayMs: 1_000, maxDelayMs: 30_000 };

  it('given maxAttempts 4, then three retries waiting half to all of 1 s, 2 s, 4 s', () => {
    expect(maxAttemptsOf(older)).toBe(4);
    expect(waitsAfterFailures(older)).toEqual([500, 1_000, 2_000, undefined]);
    expect(waitsAfterFailures(older, { random: FULL_JITTER })).toEqual([1_000, 2_000, 4_000, undefined]);
  });

  it('given a retry-after, then it is honoured up to maxDelayMs', () => {
    expect(retryDelayMs(older, 1, 20_000, NO_JITTER)).toBe(20_000);
    expect(retryDelayMs(older, 1, 90_000, NO_JITTER)).toBe(30_000);
  });
});

describe('launch: the retry policy recorded in RunLaunched', () => {
  const ctx = { runId: 'run_1', launchedBy: 'user:ann', now: new Date('2026-01-01T00:00:00Z'), provider: 'offline', defaultModel: 'offline' };
  const launch = (retry: LaunchRunInput['retry'], defaults = PRODUCT_LAUNCH_DEFAULTS) =>
    buildRunLaunched({ goal: 'g', acceptanceCriteria: ['c'], ...(retry ? { retry } : {}) }, { ...ctx, defaults }).retry;

  it('given no retry in the request, then the defaults are recorded (the configured schedule when there is one)', () => {
    expect(launch(undefined)).toEqual({ delaysMs: [10_000, 30_000, 90_000], maxDelayMs: 300_000 });
    expect(launch(undefined, productLaunchDefaults(retrySchedule([40, 40])))).toEqual({ delaysMs: [40, 40], maxDelayMs: 300_000 });
  });

  it('given only delays, then the cap is the default; given only a cap, then the configured delays', () => {
    expect(launch({ delaysMs: [5, 10] })).toEqual({ delaysMs: [5, 10], maxDelayMs: 300_000 });
    expect(launch({ maxDelayMs: 120_000 }, productLaunchDefaults(retrySchedule([40])))).toEqual({ delaysMs: [40], maxDelayMs: 120_000 });
  });

  it('given the older fields, then the older form is recorded, completed with its old defaults', () => {
    expect(launch({ maxAttempts: 2 })).toEqual({ maxAttempts: 2, baseDelayMs: 1_000, maxDelayMs: 30_000 });
  });

  it('given both forms, or a delay above the cap, or a base above the cap, then the launch is refused', () => {
    expect(() => launch({ delaysMs: [10], maxAttempts: 3 })).toThrow(new InvalidLaunchError('retry.delaysMs cannot be combined with retry.maxAttempts or retry.baseDelayMs'));
    expect(() => launch({ delaysMs: [10_000], maxDelayMs: 5_000 })).toThrow(new InvalidLaunchError('retry.delaysMs must not exceed retry.maxDelayMs'));
    expect(() => launch({ baseDelayMs: 10_000, maxDelayMs: 5_000 })).toThrow(new InvalidLaunchError('retry.baseDelayMs must not exceed retry.maxDelayMs'));
  });

  it('the recorded schedule is a copy: changing it does not change the defaults', () => {
    const recorded = launch(undefined) as { delaysMs: number[] };
    recorded.delaysMs.push(1);
    expect(DEFAULT_RETRY_POLICY.delaysMs).toEqual([10_000, 30_000, 90_000]);
  });
});

describe('the circuit breaker and capacity faults', () => {
  const overloaded = { kind: 'overloaded', status: 529, message: 'Overloaded' };
  const rateLimited = { kind: 'rate_limited', status: 429, message: 'rate limit exceeded' };
  const server = { kind: 'server', status: 500, message: 'Internal server error' };
  const after = (...failures: Array<typeof server>) => failures.reduce<BreakerState>((s, f) => breakerAfter(s, f), CLOSED_BREAKER);

  it('given four overloaded answers in a row, then the breaker stays closed (the schedule bounds them)', () => {
    expect(isTripped(after(overloaded, overloaded, overloaded, overloaded))).toBe(false);
    expect(isTripped(after(rateLimited, rateLimited, rateLimited))).toBe(false);
  });

  it('given the same server error three times, then it trips; a capacity fault in between resets the count', () => {
    expect(isTripped(after(server, server, server))).toBe(true);
    expect(after(server, server, overloaded, server)).toEqual({ signature: 'server/500/internal server error', count: 1 });
  });
});
