import { DriverFailures, FAILING_GRACE_MS, FIRST_RETRY_MS, MAX_RETRY_MS } from '../../../src/team/dispatch/driver-failures';

describe('DriverFailures', () => {
  it('given failures in a row, each waits twice as long as the one before, up to the cap', () => {
    const f = new DriverFailures();
    const waits = Array.from({ length: 12 }, () => f.failed('run_a', 0).retryInMs);
    expect(waits.slice(0, 4)).toEqual([FIRST_RETRY_MS, 2 * FIRST_RETRY_MS, 4 * FIRST_RETRY_MS, 8 * FIRST_RETRY_MS]);
    expect(Math.max(...waits)).toBe(MAX_RETRY_MS);
    expect(waits.at(-1)).toBe(MAX_RETRY_MS);
  });

  it('given a failure, when time passes, then the run may start once its wait is over', () => {
    const f = new DriverFailures();
    f.failed('run_a', 10_000);
    expect(f.waitMs('run_a', 10_000)).toBe(FIRST_RETRY_MS);
    expect(f.waitMs('run_a', 10_000 + FIRST_RETRY_MS - 1)).toBe(1);
    expect(f.waitMs('run_a', 10_000 + FIRST_RETRY_MS)).toBe(0);
    expect(f.waitMs('run_b', 10_000)).toBe(0);
  });

  it('given a failed run, when a new driver gets going, then it is not failing but keeps its count until a normal stop', () => {
    const f = new DriverFailures();
    f.failed('run_a', 0);
    expect(f.failingRuns(0)).toBe(1);
    f.driving('run_a');
    expect(f.failingRuns(0)).toBe(0);
    expect(f.failed('run_a', 0).retryInMs).toBe(2 * FIRST_RETRY_MS);
    f.stopped('run_a');
    expect(f.failingRuns(0)).toBe(0);
    expect(f.waitMs('run_a', 0)).toBe(0);
    expect(f.failed('run_a', 0).retryInMs).toBe(FIRST_RETRY_MS);
  });

  it('given a failed run that no driver takes again (it went to a gate, ended, or elsewhere), then it stops counting a little after its retry', () => {
    const f = new DriverFailures();
    f.failed('run_a', 0);
    expect(f.failingRuns(FIRST_RETRY_MS + FAILING_GRACE_MS - 1)).toBe(1);
    expect(f.failingRuns(FIRST_RETRY_MS + FAILING_GRACE_MS)).toBe(0);
  });

  it('given a run long past its last retry, then a new failure starts its count afresh', () => {
    const f = new DriverFailures();
    f.failed('run_a', 0);
    f.failed('run_a', 0);
    expect(f.failed('run_a', 2 * FIRST_RETRY_MS + MAX_RETRY_MS).retryInMs).toBe(FIRST_RETRY_MS);
  });

  it('given a store outage, the run waits but is not failing', () => {
    const f = new DriverFailures();
    f.failed('run_a', 0, { outage: true });
    expect(f.failingRuns(0)).toBe(0);
    expect(f.waitMs('run_a', 0)).toBe(FIRST_RETRY_MS);
  });
});
