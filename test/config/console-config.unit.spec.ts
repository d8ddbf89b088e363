import { ConfigError, loadConfig } from '../../src/config/config';

describe('the web console configuration', () => {
  it('sessions last 8 hours unless TRIAD_SESSION_TTL_MS says otherwise (at least a second)', () => {
    expect(loadConfig({}).sessionTtlMs).toBe(8 * 60 * 60 * 1000);
    expect(loadConfig({ TRIAD_SESSION_TTL_MS: '60000' }).sessionTtlMs).toBe(60_000);
    expect(() => loadConfig({ TRIAD_SESSION_TTL_MS: '999' })).toThrow(ConfigError);
    expect(() => loadConfig({ TRIAD_SESSION_TTL_MS: '1h' })).toThrow(ConfigError);
  });

  it('trusts no proxy unless TRIAD_TRUST_PROXY names one the way Express reads it', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRIAD_TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ TRIAD_TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRIAD_TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRIAD_TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy).toBe('loopback, 10.0.0.0/8');
    expect(() => loadConfig({ TRIAD_TRUST_PROXY: 'every$one' })).toThrow(ConfigError);
  });
});
