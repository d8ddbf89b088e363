import { ConfigError, describeConfig, loadConfig } from '../../src/config/config';

// TRIAD_MODEL_RETRY_DELAYS_MS: the waits before each retry of a transient model fault.

const load = (value?: string) => loadConfig({ TRIAD_DATA_DIR: '/tmp/triad-config-test', ...(value !== undefined ? { TRIAD_MODEL_RETRY_DELAYS_MS: value } : {}) });

describe('TRIAD_MODEL_RETRY_DELAYS_MS', () => {
  it('given nothing (or an empty value), then the default 10 s, 30 s, 90 s', () => {
    expect(load().modelRetryDelaysMs).toEqual([10_000, 30_000, 90_000]);
    expect(load('').modelRetryDelaysMs).toEqual([10_000, 30_000, 90_000]);
  });

  it('given comma-separated waits, then those, in order (spaces allowed)', () => {
    expect(load('30000,60000,120000').modelRetryDelaysMs).toEqual([30_000, 60_000, 120_000]);
    expect(load(' 500 , 0 ').modelRetryDelaysMs).toEqual([500, 0]);
    expect(describeConfig(load('500')).modelRetryDelaysMs).toEqual([500]);
  });

  it('given none, then no retry', () => {
    expect(load('none').modelRetryDelaysMs).toEqual([]);
  });

  it.each(['10s', '-5', '1.5', '10000,,30000', 'ten', '3600001', Array(21).fill('1').join(',')])('given %p, then a configuration error naming the variable', (value) => {
    expect(() => load(value)).toThrow(ConfigError);
    expect(() => load(value)).toThrow(/^TRIAD_MODEL_RETRY_DELAYS_MS must be up to 20 comma-separated waits in ms/);
  });
});
