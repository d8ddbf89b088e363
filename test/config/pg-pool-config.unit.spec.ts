import { ConfigError, DEFAULT_PG_POOL_SIZE, loadConfig } from '../../src/config/config';

// TRIAD_PG_POOL_SIZE: connections one process keeps to PostgreSQL.
const load = (value?: string) => loadConfig({ TRIAD_DATA_DIR: '/tmp/triad-config-test', ...(value !== undefined ? { TRIAD_PG_POOL_SIZE: value } : {}) });

describe('TRIAD_PG_POOL_SIZE', () => {
  it('given nothing (or an empty value), then the default of 10', () => {
    expect(DEFAULT_PG_POOL_SIZE).toBe(10);
    expect(load().pgPoolSize).toBe(10);
    expect(load('').pgPoolSize).toBe(10);
  });

  it('given a whole number from 1 to 1000, then that many connections', () => {
    expect(load('1').pgPoolSize).toBe(1);
    expect(load('40').pgPoolSize).toBe(40);
    expect(load('1000').pgPoolSize).toBe(1000);
  });

  it('given anything else, then a configuration error naming the variable and the range', () => {
    for (const bad of ['0', '-1', 'many', '2.5', '1001']) {
      expect(() => load(bad)).toThrow(new ConfigError(`TRIAD_PG_POOL_SIZE must be a whole number from 1 to 1000, got '${bad}'`));
    }
  });
});
