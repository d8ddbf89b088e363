import { ConfigError, DEFAULT_MAX_ACTIVE_RUNS, loadConfig } from '../../src/config/config';

// TRIAD_MAX_ACTIVE_RUNS: runs one process drives at once (placement sends the rest elsewhere).

const load = (value?: string) => loadConfig({ TRIAD_DATA_DIR: '/tmp/triad-config-test', ...(value !== undefined ? { TRIAD_MAX_ACTIVE_RUNS: value } : {}) });

describe('TRIAD_MAX_ACTIVE_RUNS', () => {
  it('given nothing (or an empty value), then the default', () => {
    expect(load().maxActiveRuns).toBe(DEFAULT_MAX_ACTIVE_RUNS);
    expect(load('').maxActiveRuns).toBe(DEFAULT_MAX_ACTIVE_RUNS);
  });

  it('given a whole number of at least 1, then that cap', () => {
    expect(load('1').maxActiveRuns).toBe(1);
    expect(load('250').maxActiveRuns).toBe(250);
  });

  it('given 0, a negative or not a number, then a configuration error naming the variable', () => {
    for (const bad of ['0', '-1', 'many', '2.5']) expect(() => load(bad)).toThrow(new ConfigError(`TRIAD_MAX_ACTIVE_RUNS must be a whole number from 1 to 1000000, got '${bad}'`));
  });
});
