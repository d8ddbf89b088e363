import { readReply } from '../support/http-server-child';
import { E2E_KEYS, startE2eApp, type E2eApp } from '../support/e2e-app';
import { waitFor } from '../support/wait-for';

// The web console's session over real HTTP: sign-in for a cookie, the same guard for cookie and
// bearer (reads, roles, the SSE stream), CSRF on state-changing requests, sign-out, expiry.
// One app for the file; its sessions last 4 s so expiry can be seen (each test opens its own).

const TTL_MS = 4000;
let app: E2eApp;

beforeAll(async () => {
  app = await startE2eApp({ TRIAD_SESSION_TTL_MS: String(TTL_MS), TRIAD_TRUST_PROXY: 'loopback' });
});
afterAll(async () => {
  await app?.close();
});

interface Session {
  cookie: string;
  csrf: string;
  setCookie: string;
}

async function signIn(apiKey: string, headers: Record<string, string> = {}): Promise<Session> {
  const res = await fetch(`${app.url}/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ apiKey }) });
  expect(res.status).toBe(200);
  const setCookie = res.headers.get('set-cookie')!;
  const body = (await res.json()) as { csrfToken: string };
  return { cookie: setCookie.split(';')[0], csrf: body.csrfToken, setCookie };
}

const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
  fetch(`${app.url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then(readReply<{ message?: string; runId?: string; identity?: { id: string } }>);

const launch = { goal: 'Write the letter C', acceptanceCriteria: ['file c.txt contains "C"'], maxIterations: 1 };

describe('sign-in', () => {
  it('exchanges a valid key for an HttpOnly, SameSite=Strict cookie and a CSRF token; the key is never echoed', async () => {
    const res = await fetch(`${app.url}/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ apiKey: E2E_KEYS.operator }) });
    expect(res.status).toBe(200);
    const setCookie = res.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/^triad_session=[A-Za-z0-9_-]{43};/);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\//);
    expect(setCookie).toMatch(new RegExp(`Max-Age=${TTL_MS / 1000}`));
    expect(setCookie).not.toMatch(/Secure/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const text = await res.text();
    expect(text).not.toContain(E2E_KEYS.operator);
    expect(JSON.parse(text)).toMatchObject({ identity: { id: 'user:ops', roles: ['operator'] }, csrfToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
  });

  it('marks the cookie Secure when a trusted proxy says the request came over TLS', async () => {
    const s = await signIn(E2E_KEYS.operator, { 'x-forwarded-proto': 'https' });
    expect(s.setCookie).toMatch(/; Secure/);
  });

  it('refuses a wrong key (401), a missing one (400), a form post (415) and another origin (403)', async () => {
    expect((await call('POST', '/v1/session', {}, { apiKey: 'wrong-key-123' })).status).toBe(401);
    expect((await call('POST', '/v1/session', {}, {})).status).toBe(400);
    expect((await call('POST', '/v1/session', {}, { apiKey: E2E_KEYS.operator, extra: 1 })).status).toBe(400);
    const form = await fetch(`${app.url}/v1/session`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `apiKey=${E2E_KEYS.operator}` });
    expect(form.status).toBe(415);
    const cross = await call('POST', '/v1/session', { origin: 'https://evil.example' }, { apiKey: E2E_KEYS.operator });
    expect(cross.status).toBe(403);
    expect(cross.headers.get('set-cookie')).toBeNull();
  });
});

describe('the cookie on the API', () => {
  it('reads like a bearer key, and GET /v1/session says who', async () => {
    const s = await signIn(E2E_KEYS.auditor);
    expect((await call('GET', '/v1/runs', { cookie: s.cookie })).status).toBe(200);
    const who = await call('GET', '/v1/session', { cookie: s.cookie });
    expect(who.body).toMatchObject({ signedIn: true, identity: { id: 'user:aud' }, csrfToken: s.csrf });
    // The same role table: an auditor reads decisions, and may not launch.
    expect((await call('GET', '/v1/decisions', { cookie: s.cookie })).status).toBe(200);
    expect((await call('POST', '/v1/runs', { cookie: s.cookie, 'x-csrf-token': s.csrf, origin: app.url }, launch)).status).toBe(403);
  });

  it('is 401 without a cookie or key, with a made-up cookie, and bearer keys work as before whatever the cookie', async () => {
    const none = await call('GET', '/v1/runs', {});
    expect(none.status).toBe(401);
    expect(none.body.message).toBe('an API key is required: Authorization: Bearer <key>');
    expect((await call('GET', '/v1/runs', { cookie: 'triad_session=made-up' })).status).toBe(401);
    expect((await call('GET', '/v1/runs', { cookie: 'triad_session=made-up', authorization: `Bearer ${E2E_KEYS.auditor}` })).status).toBe(200);
    // A bearer request needs no CSRF token, cookie or not.
    expect((await call('POST', '/v1/runs', { cookie: 'triad_session=made-up', authorization: `Bearer ${E2E_KEYS.operator}` }, launch)).status).toBe(202);
    expect((await call('GET', '/v1/runs', { authorization: 'Bearer wrong' })).status).toBe(401);
  });

  it('the session probe answers 200 signedIn: false to nobody (no cookie, a made-up one), and still 401 to a wrong bearer key', async () => {
    for (const headers of [{}, { cookie: 'triad_session=made-up' }] as Array<Record<string, string>>) {
      const probe = await call('GET', '/v1/session', headers);
      expect({ status: probe.status, body: probe.body }).toEqual({ status: 200, body: { signedIn: false } });
    }
    expect((await call('GET', '/v1/session', { authorization: 'Bearer wrong-key-123' })).status).toBe(401);
    expect((await call('GET', '/v1/session', { authorization: `Bearer ${E2E_KEYS.auditor}` })).body).toEqual({ signedIn: true, identity: expect.objectContaining({ id: 'user:aud' }) });
  });

  it('a state-changing request needs the CSRF token (403 without, or with a wrong one, or from another origin) and writes nothing then', async () => {
    const s = await signIn(E2E_KEYS.operator);
    const before = ((await call('GET', '/v1/runs', { cookie: s.cookie })).body as unknown as { runs: unknown[] }).runs.length;
    const noToken = await call('POST', '/v1/runs', { cookie: s.cookie }, launch);
    expect(noToken.status).toBe(403);
    expect(noToken.body.message).toMatch(/x-csrf-token/);
    expect((await call('POST', '/v1/runs', { cookie: s.cookie, 'x-csrf-token': `${s.csrf}x` }, launch)).status).toBe(403);
    expect((await call('POST', '/v1/runs', { cookie: s.cookie, 'x-csrf-token': s.csrf, origin: 'https://evil.example' }, launch)).status).toBe(403);
    const after = ((await call('GET', '/v1/runs', { cookie: s.cookie })).body as unknown as { runs: unknown[] }).runs.length;
    expect(after).toBe(before);
    const ok = await call('POST', '/v1/runs', { cookie: s.cookie, 'x-csrf-token': s.csrf, origin: app.url }, launch);
    expect(ok.status).toBe(202);
    // A session's token is its own.
    const other = await signIn(E2E_KEYS.operator);
    expect((await call('POST', `/v1/runs/${ok.body.runId}/cancel`, { cookie: s.cookie, 'x-csrf-token': other.csrf }, {})).status).toBe(403);
  });

  it('authenticates the SSE stream (EventSource sends no header, only the cookie)', async () => {
    const s = await signIn(E2E_KEYS.operator);
    const launched = await call('POST', '/v1/runs', { cookie: s.cookie, 'x-csrf-token': s.csrf }, launch);
    const controller = new AbortController();
    const res = await fetch(`${app.url}/v1/runs/${launched.body.runId}/events`, { headers: { cookie: s.cookie, accept: 'text/event-stream' }, signal: controller.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain('event: RunLaunched');
    controller.abort();
    const refused = await fetch(`${app.url}/v1/runs/${launched.body.runId}/events`, { headers: { accept: 'text/event-stream' } });
    expect(refused.status).toBe(401);
  });
});

describe('sign-out and expiry', () => {
  it('sign-out needs the CSRF token, ends the session and clears the cookie', async () => {
    const s = await signIn(E2E_KEYS.reviewer);
    expect((await call('DELETE', '/v1/session', { cookie: s.cookie })).status).toBe(403);
    expect((await call('GET', '/v1/reviews', { cookie: s.cookie })).status).toBe(200);
    const out = await call('DELETE', '/v1/session', { cookie: s.cookie, 'x-csrf-token': s.csrf });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^triad_session=;.*Expires=Thu, 01 Jan 1970/);
    const after = await call('GET', '/v1/reviews', { cookie: s.cookie });
    expect(after.status).toBe(401);
    expect(after.body.message).toMatch(/sign in again/);
    // The probe says so without an error: the page shows its sign-in form.
    expect((await call('GET', '/v1/session', { cookie: s.cookie })).body).toEqual({ signedIn: false });
    // Signing out again, or without a session, only clears the cookie.
    expect((await call('DELETE', '/v1/session', { cookie: s.cookie })).status).toBe(204);
    expect((await call('DELETE', '/v1/session', {})).status).toBe(204);
  });

  it('a session ends by itself after TRIAD_SESSION_TTL_MS', async () => {
    const s = await signIn(E2E_KEYS.auditor);
    const opened = Date.now();
    expect((await call('GET', '/v1/runs', { cookie: s.cookie })).status).toBe(200);
    await waitFor('the session to expire', async () => (await call('GET', '/v1/runs', { cookie: s.cookie })).status === 401, TTL_MS + 10_000, 250);
    expect(Date.now() - opened).toBeGreaterThanOrEqual(TTL_MS - 100);
  });
});
