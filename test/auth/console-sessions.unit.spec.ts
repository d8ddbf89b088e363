import { ConsoleSessions, csrfViolation, readCookie } from '../../src/auth/console-sessions';
import { hashSecret, type Identity } from '../../src/auth/identity';

const ann: Identity = { id: 'user:ann', name: 'ann', roles: ['operator'] };

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('console sessions', () => {
  it('given a session opened for a TTL, when the TTL has passed, then it is gone', () => {
    const c = clock();
    const sessions = new ConsoleSessions(60_000, c.now);
    const opened = sessions.open(ann, hashSecret('ann-secret'));
    expect(opened.expiresAt).toBe(c.now() + 60_000);
    c.advance(59_999);
    expect(sessions.find(opened.sessionId)?.identity).toEqual(ann);
    c.advance(1);
    expect(sessions.find(opened.sessionId)).toBeUndefined();
    expect(sessions.size).toBe(0);
  });

  it('given two sessions, when one is closed, then only that one ends', () => {
    const sessions = new ConsoleSessions(60_000);
    const a = sessions.open(ann, hashSecret('k'));
    const b = sessions.open(ann, hashSecret('k'));
    expect(a.sessionId).not.toBe(b.sessionId);
    expect(a.csrfToken).not.toBe(b.csrfToken);
    expect(sessions.close(a.sessionId)).toBe(true);
    expect(sessions.find(a.sessionId)).toBeUndefined();
    expect(sessions.find(b.sessionId)).toBeDefined();
    expect(sessions.close(a.sessionId)).toBe(false);
  });

  it('given the most sessions a process keeps, when another opens, then the oldest ends', () => {
    const sessions = new ConsoleSessions(60_000, Date.now, 2);
    const first = sessions.open(ann, hashSecret('k'));
    const second = sessions.open(ann, hashSecret('k'));
    const third = sessions.open(ann, hashSecret('k'));
    expect(sessions.find(first.sessionId)).toBeUndefined();
    expect(sessions.find(second.sessionId)).toBeDefined();
    expect(sessions.find(third.sessionId)).toBeDefined();
  });

  it('an unknown or made-up session id finds nothing', () => {
    const sessions = new ConsoleSessions();
    sessions.open(ann, hashSecret('k'));
    expect(sessions.find('made-up')).toBeUndefined();
    expect(sessions.find('')).toBeUndefined();
  });
});

describe('the CSRF check of a cookie-authenticated request', () => {
  const session = { csrfToken: 'token-123' };
  const own = 'http://127.0.0.1:3000';
  const allowedHosts = ['127.0.0.1', 'localhost'];
  it('lets reads through without a token', () => {
    expect(csrfViolation({ method: 'GET', origin: undefined, ownOrigin: own, allowedHosts, token: undefined, session })).toBeUndefined();
  });
  it('needs the session token on a state-changing request', () => {
    expect(csrfViolation({ method: 'POST', origin: own, ownOrigin: own, allowedHosts, token: undefined, session })).toMatch(/x-csrf-token/);
    expect(csrfViolation({ method: 'DELETE', origin: own, ownOrigin: own, allowedHosts, token: 'token-12', session })).toMatch(/x-csrf-token/);
    expect(csrfViolation({ method: 'POST', origin: own, ownOrigin: own, allowedHosts, token: 'token-123', session })).toBeUndefined();
    expect(csrfViolation({ method: 'POST', origin: undefined, ownOrigin: own, allowedHosts, token: 'token-123', session })).toBeUndefined();
  });
  it('refuses another origin even with the token', () => {
    expect(csrfViolation({ method: 'POST', origin: 'https://evil.example', ownOrigin: own, allowedHosts, token: 'token-123', session })).toMatch(/another origin/);
    expect(csrfViolation({ method: 'POST', origin: 'null', ownOrigin: own, allowedHosts, token: 'token-123', session })).toMatch(/another origin/);
  });
  it('given a Host that is not allowed, then an Origin matching it is still another origin', () => {
    // A DNS-rebinding page: its Origin names its own host, and so does the Host it sends.
    const rebound = 'http://evil.example:3000';
    expect(csrfViolation({ method: 'POST', origin: rebound, ownOrigin: rebound, allowedHosts, token: 'token-123', session })).toMatch(/another origin/);
    expect(csrfViolation({ method: 'POST', origin: rebound, ownOrigin: rebound, allowedHosts: ['*'], token: 'token-123', session })).toBeUndefined();
  });
});

describe('reading the session cookie', () => {
  it('finds it among others, and nothing when absent or empty', () => {
    expect(readCookie('a=1; triad_session=abc_-9; b=2', 'triad_session')).toBe('abc_-9');
    expect(readCookie('triad_session="quoted"', 'triad_session')).toBe('quoted');
    expect(readCookie('xtriad_session=1', 'triad_session')).toBeUndefined();
    expect(readCookie('triad_session=', 'triad_session')).toBeUndefined();
    expect(readCookie(undefined, 'triad_session')).toBeUndefined();
  });
});
