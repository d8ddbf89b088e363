import { ConfigError, loadConfig } from '../../src/config/config';

// TRIAD_PUBLIC_URL (the base of webhooks' console links) and TRIAD_WEBHOOK_*.
const load = (env: Record<string, string> = {}) => loadConfig({ TRIAD_DATA_DIR: '/tmp/triad-config-test', ...env });

describe('TRIAD_PUBLIC_URL', () => {
  it('given nothing, then the bind address and port', () => {
    expect(load().publicUrl).toBe('http://127.0.0.1:3000');
    expect(load({ TRIAD_HOST: '::1', TRIAD_PORT: '8080' }).publicUrl).toBe('http://[::1]:8080');
  });

  it('given an http(s) URL, then it without a trailing slash', () => {
    expect(load({ TRIAD_PUBLIC_URL: 'https://triad.example.com/' }).publicUrl).toBe('https://triad.example.com');
    expect(load({ TRIAD_PUBLIC_URL: 'https://example.com/triad/' }).publicUrl).toBe('https://example.com/triad');
  });

  it('given another scheme, a query, a fragment or credentials, then a configuration error naming it', () => {
    for (const bad of ['ftp://example.com', 'example.com', 'https://example.com/?a=1', 'https://example.com/#x', 'https://u:p@example.com/']) {
      expect(() => load({ TRIAD_PUBLIC_URL: bad })).toThrow(ConfigError);
      expect(() => load({ TRIAD_PUBLIC_URL: bad })).toThrow(/TRIAD_PUBLIC_URL/);
    }
  });
});

describe('TRIAD_WEBHOOK_*', () => {
  it('given nothing, then 10 s attempts, retries from 1 s up to 10 min, given up after a day', () => {
    expect(load().webhooks).toEqual({ timeoutMs: 10_000, retryBaseMs: 1_000, retryMaxMs: 600_000, giveUpAfterMs: 86_400_000 });
  });

  it('given values in range, then those; out of range, a configuration error', () => {
    expect(load({ TRIAD_WEBHOOK_TIMEOUT_MS: '500', TRIAD_WEBHOOK_RETRY_BASE_MS: '50', TRIAD_WEBHOOK_RETRY_MAX_MS: '250', TRIAD_WEBHOOK_GIVE_UP_MS: '60000' }).webhooks).toEqual({
      timeoutMs: 500,
      retryBaseMs: 50,
      retryMaxMs: 250,
      giveUpAfterMs: 60_000,
    });
    expect(() => load({ TRIAD_WEBHOOK_TIMEOUT_MS: '50' })).toThrow(/TRIAD_WEBHOOK_TIMEOUT_MS/);
    expect(() => load({ TRIAD_WEBHOOK_GIVE_UP_MS: 'soon' })).toThrow(/TRIAD_WEBHOOK_GIVE_UP_MS/);
  });
});
