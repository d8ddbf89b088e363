import type { ModelCallFailedData, RunEndedData, RunLaunchedData } from '../../../src/team/domain/run-events';
import { runStatus, terminationReason } from '../../../src/team/domain/run-state';
import { ModelError } from '../../../src/team/models/model.port';
import { ScriptedModelProvider } from '../../../src/team/models/scripted.model';
import { PRODUCT_LAUNCH_DEFAULTS } from '../../../src/team/domain/resilience/policies';
import { dataOf, expectReplayMatchesLive, plan, roleScript, startHarness, submitWork, verdict, type Harness } from './resilience-support';

// The driver retries transient model faults on the run's recorded schedule. Waits go through an
// injected sleep that advances an injected clock: minutes of backoff, no real waiting.

let h: Harness | undefined;
afterEach(() => {
  h?.remove();
  h = undefined;
});

const overloaded = () => new ModelError('overloaded', 'Overloaded', { status: 529 });

/** A clock that only moves when the driver sleeps. */
function virtualTime() {
  let now = Date.parse('2026-03-01T09:00:00Z');
  const sleeps: number[] = [];
  return {
    sleeps,
    clock: { now: () => now },
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
    },
  };
}

/** Each wait is its scheduled delay, jittered up to a tenth later. */
function expectScheduled(waits: number[], scheduled: number[]): void {
  expect(waits).toHaveLength(scheduled.length);
  waits.forEach((ms, i) => {
    expect(ms).toBeGreaterThanOrEqual(scheduled[i]);
    expect(ms).toBeLessThanOrEqual(Math.round(scheduled[i] * 1.1));
  });
}

describe('the default schedule: three retries over two minutes', () => {
  it('given overloaded answers throughout, then three retries after 10 s, 30 s and 90 s, and the fourth failure ends the run ERROR', async () => {
    const time = virtualTime();
    const model = new ScriptedModelProvider(roleScript({ architect: () => overloaded() }));
    h = await startHarness({ model, defaults: PRODUCT_LAUNCH_DEFAULTS, clock: time.clock, sleep: time.sleep });
    const state = await h.driver.drive();
    const events = await h.events();

    expect(dataOf<RunLaunchedData>(events, 'RunLaunched')[0].retry).toEqual({ delaysMs: [10_000, 30_000, 90_000], maxDelayMs: 300_000 });
    const failed = dataOf<ModelCallFailedData>(events, 'ModelCallFailed');
    expect(failed.map((f) => [f.attempt, f.kind, f.status])).toEqual([
      [1, 'overloaded', 529],
      [2, 'overloaded', 529],
      [3, 'overloaded', 529],
      [4, 'overloaded', 529],
    ]);
    expectScheduled(failed.slice(0, 3).map((f) => f.retryInMs!), [10_000, 30_000, 90_000]);
    expect(failed[3].retryInMs).toBeUndefined();
    expect(time.sleeps).toEqual(failed.slice(0, 3).map((f) => f.retryInMs));
    // Identical capacity faults do not trip the same-error breaker: the schedule runs to its end.
    expect(dataOf<RunEndedData>(events, 'RunEnded')[0]).toMatchObject({ reason: 'ERROR', message: expect.stringMatching(/^model call failed \(overloaded\) after 4 attempt\(s\)/) });
    await expectReplayMatchesLive(h, state);
  });

  it('given two overloaded answers and then a plan, then the run goes on after waiting 10 s and 30 s', async () => {
    const time = virtualTime();
    const model = new ScriptedModelProvider(roleScript({ architect: [overloaded(), overloaded(), plan()], executor: [submitWork()], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, defaults: PRODUCT_LAUNCH_DEFAULTS, clock: time.clock, sleep: time.sleep });
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expectScheduled(time.sleeps, [10_000, 30_000]);
    await expectReplayMatchesLive(h, state);
  });
});

describe('retry-after', () => {
  it('given a rate limit asking for 45 s, then the driver waits 45 s instead of 10 s', async () => {
    const time = virtualTime();
    const model = new ScriptedModelProvider(
      roleScript({ architect: [new ModelError('rate_limited', 'slow down', { status: 429, retryAfterMs: 45_000 }), plan()], executor: [submitWork()], reviewer: [verdict('APPROVE')] }),
    );
    h = await startHarness({ model, defaults: PRODUCT_LAUNCH_DEFAULTS, clock: time.clock, sleep: time.sleep });
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(time.sleeps).toEqual([45_000]);
    expect(dataOf<ModelCallFailedData>(await h.events(), 'ModelCallFailed')[0].retryInMs).toBe(45_000);
  });

  it('given a retry-after of an hour, then the wait is the cap (5 minutes)', async () => {
    const time = virtualTime();
    const model = new ScriptedModelProvider(
      roleScript({ architect: [new ModelError('rate_limited', 'slow down', { status: 429, retryAfterMs: 3_600_000 }), plan()], executor: [submitWork()], reviewer: [verdict('APPROVE')] }),
    );
    h = await startHarness({ model, defaults: PRODUCT_LAUNCH_DEFAULTS, clock: time.clock, sleep: time.sleep });
    await h.driver.drive();
    expect(time.sleeps).toEqual([300_000]);
  });
});

describe('the run’s deadline', () => {
  it('given a wait that would pass the run’s timeout, then the driver wakes at the deadline and the run ends TIMEOUT', async () => {
    const time = virtualTime();
    const model = new ScriptedModelProvider(roleScript({ architect: () => overloaded() }));
    h = await startHarness({ model, defaults: PRODUCT_LAUNCH_DEFAULTS, launch: { timeoutMs: 20_000 }, clock: time.clock, sleep: time.sleep });
    const state = await h.driver.drive();
    const failed = dataOf<ModelCallFailedData>(await h.events(), 'ModelCallFailed');
    expect(failed).toHaveLength(2);
    // The second wait (30 s scheduled) is cut to what is left of the 20 s.
    expect(time.sleeps[1]).toBe(20_000 - time.sleeps[0]);
    expect(time.sleeps[1]).toBeLessThan(failed[1].retryInMs!);
    expect(terminationReason(state)).toBe('TIMEOUT');
    await expectReplayMatchesLive(h, state);
  });
});

describe('runs recorded with the older retry form', () => {
  it('given a RunLaunched with maxAttempts/baseDelayMs and a failure already recorded, then a resumed driver has one attempt left and waits as that form says', async () => {
    const model = new ScriptedModelProvider(roleScript({ architect: () => overloaded() }));
    const waits: number[] = [];
    // The first driver stops (as at a crash) while it waits after its first failure.
    let parked = () => undefined as void;
    const waiting = new Promise<void>((resolve) => (parked = resolve));
    h = await startHarness({
      model,
      launch: { retry: { maxAttempts: 2, baseDelayMs: 40, maxDelayMs: 50 } },
      sleep: (ms, signal) => {
        waits.push(ms);
        parked();
        return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      },
    });
    expect(dataOf<RunLaunchedData>(await h.events(), 'RunLaunched')[0].retry).toEqual({ maxAttempts: 2, baseDelayMs: 40, maxDelayMs: 50 });
    const first = h.driver;
    const driving = first.drive();
    await waiting;
    first.stop('crash');
    await driving;
    // Half to all of baseDelayMs, the older form's jittered exponential wait.
    expect(waits[0]).toBeGreaterThanOrEqual(20);
    expect(waits[0]).toBeLessThanOrEqual(40);

    const state = await h.newDriver().drive();
    const failed = dataOf<ModelCallFailedData>(await h.events(), 'ModelCallFailed');
    expect(failed.map((f) => [f.attempt, f.retryInMs !== undefined])).toEqual([
      [1, true],
      [2, false],
    ]);
    expect(dataOf<RunEndedData>(await h.events(), 'RunEnded')[0].message).toMatch(/^model call failed \(overloaded\) after 2 attempt\(s\)/);
    await expectReplayMatchesLive(h, state);
  });
});
