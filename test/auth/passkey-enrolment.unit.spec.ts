import { ConfigError, webauthnSettings } from '../../src/config/config';
import { PasskeyChallenges } from '../../src/auth/passkeys/passkey-challenges';
import { relyingPartyFor } from '../../src/auth/passkeys/relying-party';

const RP = { rpId: 'triad.example', origins: ['https://triad.example'] };

describe('TRIAD_WEBAUTHN_RP_ID and TRIAD_WEBAUTHN_ORIGINS', () => {
  it('given none, passkeys follow the request; given origins, the rp id is the first host unless set', () => {
    expect(webauthnSettings({})).toEqual({ origins: [] });
    expect(webauthnSettings({ TRIAD_WEBAUTHN_ORIGINS: 'https://console.example.com, https://example.com:8443' , TRIAD_WEBAUTHN_RP_ID: 'Example.com' })).toEqual({ rpId: 'example.com', origins: ['https://console.example.com', 'https://example.com:8443'] });
    expect(webauthnSettings({ TRIAD_WEBAUTHN_ORIGINS: 'http://localhost:3000' })).toEqual({ rpId: 'localhost', origins: ['http://localhost:3000'] });
    expect(webauthnSettings({ TRIAD_WEBAUTHN_RP_ID: 'example.com' })).toEqual({ rpId: 'example.com', origins: [] });
  });

  it.each([
    [{ TRIAD_WEBAUTHN_ORIGINS: 'https://example.com/' }, /not an origin/],
    [{ TRIAD_WEBAUTHN_ORIGINS: 'https://example.com/console' }, /not an origin/],
    [{ TRIAD_WEBAUTHN_ORIGINS: 'example.com' }, /not an origin/],
    [{ TRIAD_WEBAUTHN_ORIGINS: 'ftp://example.com' }, /not an origin/],
    [{ TRIAD_WEBAUTHN_ORIGINS: 'https://127.0.0.1:3000' }, /no domain name/],
    [{ TRIAD_WEBAUTHN_ORIGINS: 'https://a.example.com,https://other.org' }, /not a\.example\.com or under it/],
    [{ TRIAD_WEBAUTHN_ORIGINS: 'https://notexample.com', TRIAD_WEBAUTHN_RP_ID: 'example.com' }, /not example\.com or under it/],
    [{ TRIAD_WEBAUTHN_RP_ID: 'https://example.com' }, /must be a domain name/],
    [{ TRIAD_WEBAUTHN_RP_ID: '10.0.0.1' }, /must be a domain name/],
  ])('refuses %j', (env, message) => {
    expect(() => webauthnSettings(env)).toThrow(ConfigError);
    expect(() => webauthnSettings(env)).toThrow(message);
  });
});

describe('relyingPartyFor', () => {
  it('given configured origins, uses them whatever the request reached', () => {
    expect(relyingPartyFor({ rpId: 'example.com', origins: ['https://example.com'] }, 'http://evil.test:1')).toEqual({ rpId: 'example.com', origins: ['https://example.com'] });
  });

  it("given none, uses the request's origin and its host as the rp id (or the configured rp id it is under)", () => {
    expect(relyingPartyFor({ origins: [] }, 'http://localhost:3000')).toEqual({ rpId: 'localhost', origins: ['http://localhost:3000'] });
    expect(relyingPartyFor({ rpId: 'example.com', origins: [] }, 'https://console.example.com')).toEqual({ rpId: 'example.com', origins: ['https://console.example.com'] });
  });

  it('refuses, as a 400, a request reached at an IP address, or at a host outside the configured rp id', () => {
    expect(() => relyingPartyFor({ origins: [] }, 'http://127.0.0.1:3000')).toThrow(/passkeys need a domain name.*http:\/\/localhost:3000/);
    expect(() => relyingPartyFor({ origins: [] }, 'http://[::1]:3000')).toThrow(/domain name/);
    expect(() => relyingPartyFor({ rpId: 'example.com', origins: [] }, 'https://example.org')).toThrow(expect.objectContaining({ kind: 'invalid', message: expect.stringMatching(/not example\.com/) }));
    expect(() => relyingPartyFor({ origins: [] }, '://')).toThrow(/not a URL/);
  });
});

describe('PasskeyChallenges', () => {
  it('gives a challenge back once, to the person it was issued to, until it expires', () => {
    const c = new PasskeyChallenges(1000, 10);
    c.issue('user:bob', 'c1', RP, 0);
    expect(c.take('user:ann', 10)).toBeUndefined();
    expect(c.take('user:bob', 10)).toEqual({ challenge: 'c1', rp: RP });
    expect(c.take('user:bob', 10)).toBeUndefined();
    c.issue('user:bob', 'c2', RP, 0);
    expect(c.take('user:bob', 1000)).toBeUndefined();
  });

  it('keeps the latest challenge of a person, and at most `max` in all (the oldest dropped)', () => {
    const c = new PasskeyChallenges(1000, 2);
    c.issue('user:bob', 'old', RP, 0);
    c.issue('user:bob', 'new', RP, 1);
    expect(c.size).toBe(1);
    c.issue('user:ann', 'a', RP, 2);
    c.issue('user:cy', 'c', RP, 3);
    expect(c.size).toBe(2);
    expect(c.take('user:bob', 4)).toBeUndefined();
    expect(c.take('user:cy', 4)?.challenge).toBe('c');
  });

  it('drops expired challenges when issuing', () => {
    const c = new PasskeyChallenges(10, 100);
    for (let i = 0; i < 50; i++) c.issue(`user:u${i}`, 'x', RP, i);
    c.issue('user:last', 'x', RP, 100);
    expect(c.size).toBe(1);
  });
});
