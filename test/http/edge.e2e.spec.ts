import { connect } from 'node:net';
import { E2E_KEYS, startE2eApp, type E2eApp } from '../support/e2e-app';

// The HTTP edge, tried over raw sockets and real requests against the real app: what reaches a
// route at all (hosts, sizes, time), the headers of every answer, failed authentications, and the
// metrics. Each case is a request an attacker or a broken client would send.

const METRICS_KEY = 'metrics-key-0123456789abcdef';
const LAUNCH = { goal: 'Write hello.txt', acceptanceCriteria: ['hello.txt exists'] };

let app: E2eApp;
let port: number;

beforeAll(async () => {
  app = await startE2eApp({
    TRIAD_HEADERS_TIMEOUT_MS: '1000',
    TRIAD_REQUEST_TIMEOUT_MS: '2000',
    TRIAD_AUTH_FAILURES_PER_WINDOW: '3',
    TRIAD_AUTH_FAILURE_WINDOW_MS: '60000',
    TRIAD_METRICS_KEY: METRICS_KEY,
  });
  port = Number(new URL(app.url).port);
}, 60_000);
afterAll(async () => app?.close());

interface RawReply {
  status: number;
  head: string;
  body: string;
  /** When the first byte of the answer came, from when the request's first bytes were sent. */
  afterMs: number;
}

/**
 * Sends `head` (request line and headers, without the blank line) and then each of `parts` as it
 * is given, and reads the first answer; the socket is closed once a whole answer is in.
 */
function exchange(head: string, parts: string[] = []): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let firstByteAt: number | undefined;
    let text = '';
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      socket.write(`${head}\r\n\r\n`);
      for (const part of parts) socket.write(part);
    });
    const done = (): void => {
      const [h, ...rest] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(h)?.[1] ?? 0);
      socket.destroy();
      resolve({ status, head: h, body: rest.join('\r\n\r\n'), afterMs: (firstByteAt ?? Date.now()) - started });
    };
    socket.on('data', (chunk: string) => {
      firstByteAt ??= Date.now();
      text += chunk;
      const [h, ...rest] = text.split('\r\n\r\n');
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(h)?.[1] ?? -1);
      if (rest.length > 0 && length >= 0 && Buffer.byteLength(rest.join('\r\n\r\n')) >= length) done();
    });
    socket.on('end', done);
    socket.on('error', reject);
  });
}

const json = (body: string): { statusCode: number; error: string; message: string } => JSON.parse(body);

async function metric(name: string): Promise<number> {
  const res = await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_KEY}` } });
  const line = (await res.text()).split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

const runCount = async (): Promise<number> => ((await app.request<{ runs: unknown[] }>('GET', '/v1/runs', { as: 'auditor' })).body.runs.length);

describe('given a body that names a key twice', () => {
  it('when it is launched, then it is refused 400 naming the key, and no run is written', async () => {
    const before = await runCount();
    const res = await app.request<{ message: string }>('POST', '/v1/runs', {
      rawBody: `{"goal":"Write hello.txt","acceptanceCriteria":["hello.txt exists"],"reviewPolicy":{"allowLauncherToReview":false,"allowLauncherToReview":true}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('body.reviewPolicy.allowLauncherToReview is given twice; a key may appear once in an object');
    // Escapes do not hide a duplicate: "\u0067oal" is "goal".
    const escaped = await app.request<{ message: string }>('POST', '/v1/runs', { rawBody: `{"goal":"a","\\u0067oal":"b","acceptanceCriteria":["x"]}`, headers: { 'content-type': 'application/json' } });
    expect(escaped.status).toBe(400);
    expect(escaped.body.message).toMatch(/^body\.goal is given twice/);
    expect(await runCount()).toBe(before);
  });
});

describe('given a Host this server does not answer for', () => {
  it('when a DNS-rebinding page sends its own name as Host and Origin, then it is refused 421 before any route', async () => {
    const before = await metric('triad_http_refusals_total{reason="host"}');
    const reply = await exchange(`POST /v1/session HTTP/1.1\r\nHost: evil.example:${port}\r\nOrigin: http://evil.example:${port}\r\nContent-Type: application/json\r\nContent-Length: 40`, [
      JSON.stringify({ apiKey: E2E_KEYS.operator }).padEnd(40),
    ]);
    expect(reply.status).toBe(421);
    expect(reply.head).not.toMatch(/set-cookie/i);
    expect(json(reply.body)).toEqual({ statusCode: 421, error: 'Misdirected Request', message: expect.stringMatching(/does not answer for the host "evil\.example:\d+".*TRIAD_ALLOWED_HOSTS/) });
    // An unauthenticated route too: nothing of triad's answers a page of another name.
    expect((await exchange(`GET /health HTTP/1.1\r\nHost: evil.example`)).status).toBe(421);
    expect(await metric('triad_http_refusals_total{reason="host"}')).toBe(before + 2);
  });

  it('when a request has no Host, then it is a 400 with a JSON body', async () => {
    const reply = await exchange('GET /health HTTP/1.1');
    expect(reply.status).toBe(400);
    expect(json(reply.body)).toEqual({ statusCode: 400, error: 'Bad Request', message: 'the request has no Host header' });
  });

  it('when the Host is an allowed one, with any port, then it is served', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'LOCALHOST']) expect((await exchange(`GET /health HTTP/1.1\r\nHost: ${host}`)).status).toBe(200);
  });
});

describe('given a body that is too large or too slow', () => {
  it('when a Content-Length over the limit is declared, then it is refused 413 before a byte of the body is sent', async () => {
    const before = await metric('triad_http_refusals_total{reason="body_too_large"}');
    const reply = await exchange(`POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${E2E_KEYS.operator}\r\nContent-Type: application/json\r\nContent-Length: 999999999`);
    expect(reply.status).toBe(413);
    expect(reply.head).toMatch(/\r\nConnection: close/i);
    expect(json(reply.body).message).toBe('the request body is 999999999 bytes; at most 2097152 are accepted');
    expect(await metric('triad_http_refusals_total{reason="body_too_large"}')).toBe(before + 1);
  });

  it('when Expect: 100-continue comes with a Content-Length over the limit, then the answer is 413, not 100 Continue', async () => {
    const reply = await exchange(`POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${E2E_KEYS.operator}\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\nExpect: 100-continue`);
    expect(reply.status).toBe(413);
    expect(reply.head).not.toMatch(/100 Continue/);
    expect(await metric('triad_http_refusals_total{reason="expect_too_large"}')).toBeGreaterThanOrEqual(1);
  });

  it('when Expect: 100-continue comes with a body within the limit, then it is continued and served', async () => {
    const body = JSON.stringify(LAUNCH);
    const socket = connect(port, '127.0.0.1');
    const text = await new Promise<string>((resolve, reject) => {
      let got = '';
      socket.setEncoding('utf8');
      socket.on('connect', () => socket.write(`POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${E2E_KEYS.operator}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`));
      socket.on('data', (chunk: string) => {
        if (got === '' && chunk.startsWith('HTTP/1.1 100 Continue')) socket.write(body);
        got += chunk;
      });
      socket.on('end', () => resolve(got));
      socket.on('error', reject);
    });
    expect(text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 202 /);
  });

  it('when the body arrives slower than the request timeout allows, then the request is cut with a 408 near the limit', async () => {
    const before = await metric('triad_http_refusals_total{reason="timeout"}');
    // 10 bytes of 100, then nothing: the server must not wait for the rest forever.
    const reply = await exchange(`POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${E2E_KEYS.operator}\r\nContent-Type: application/json\r\nContent-Length: 100`, ['{"goal":"a']);
    expect(reply.status).toBe(408);
    expect(json(reply.body)).toEqual({ statusCode: 408, error: 'Request Timeout', message: 'the request took too long to arrive' });
    // Limit 2 s, checked every second: well before Node's default 300 s (and far from a loaded machine's noise).
    expect(reply.afterMs).toBeLessThan(15_000);
    expect(await metric('triad_http_refusals_total{reason="timeout"}')).toBe(before + 1);
  });

  it('when the headers arrive slower than the headers timeout allows, then the connection gets a 408', async () => {
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    const text = await new Promise<string>((resolve, reject) => {
      let got = '';
      socket.setEncoding('utf8');
      // The request line and one header, and never the blank line that ends the headers.
      socket.on('connect', () => socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n'));
      socket.on('data', (chunk: string) => (got += chunk));
      socket.on('close', () => resolve(got));
      socket.on('error', reject);
    });
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});

describe('the headers of every answer', () => {
  it('given an API answer, then it says no-store and nosniff, and not what serves it', async () => {
    const res = await app.request('GET', '/v1/runs', { as: 'auditor' });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-powered-by')).toBeNull();
    const refused = await app.request('GET', '/v1/runs', { as: null });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('cache-control')).toBe('no-store');
    expect(refused.headers.get('x-powered-by')).toBeNull();
  });

  it('given the API docs, then they are framed by no one, sniffed by no one, and run no inline script', async () => {
    const res = await fetch(`${app.url}/docs`, { redirect: 'follow' });
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    // Its page loads its scripts as files: the policy does not break it.
    const html = await res.text();
    expect(html).not.toMatch(/<script>(?!\s*<\/script>)/);
  });
});

describe('given failed authentications from one address', () => {
  it('given a browser whose session ended, when it keeps sending the stale cookie, then each is a 401 and the address is not locked out', async () => {
    // A session id is 256 random bits: nothing to guess, and a signed-out page sends it for a while.
    for (let i = 0; i < 15; i++) {
      const res = await fetch(`${app.url}/v1/runs`, { headers: { cookie: `triad_session=ended-session-${i}` } });
      expect(res.status).toBe(401);
    }
    expect((await app.request('GET', '/v1/runs', { as: 'auditor' })).status).toBe(200);
  });

  it('when they pass the limit, then every credentialed request from it is refused 429 with Retry-After, and the failures are counted', async () => {
    const failedBefore = await metric('triad_auth_failures_total{outcome="failed"}');
    for (let i = 0; i < 3; i++) expect((await app.request('GET', '/v1/runs', { as: { raw: `Bearer wrong-key-${i}-0123456789` } })).status).toBe(401);
    const limited = await app.request<{ message: string }>('GET', '/v1/runs', { as: { raw: 'Bearer wrong-key-3-0123456789' } });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.body.message).toMatch(/too many failed authentications/);
    // A right key from this address now says nothing about its rightness either.
    expect((await app.request('GET', '/v1/runs', { as: 'auditor' })).status).toBe(429);
    // The console's sign-in is an authentication too.
    expect((await app.request('POST', '/v1/session', { as: null, body: { apiKey: E2E_KEYS.operator } })).status).toBe(429);
    // A request without credentials is not an attempt: it is told what it lacks.
    expect((await app.request('GET', '/v1/runs', { as: null })).status).toBe(401);
    expect(await metric('triad_auth_failures_total{outcome="failed"}')).toBe(failedBefore + 3);
    expect(await metric('triad_auth_failures_total{outcome="limited"}')).toBeGreaterThanOrEqual(3);
  });
});

describe('the metrics', () => {
  it('given TRIAD_METRICS_KEY, then /metrics needs it', async () => {
    expect((await fetch(`${app.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${app.url}/metrics`, { headers: { authorization: 'Bearer not-the-metrics-key' } })).status).toBe(401);
    const res = await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_KEY}` } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('triad_http_refusals_total');
  });
});
