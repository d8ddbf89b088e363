import { connect } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { startFakeMessagesApi, toolUseStep, type FakeMessagesApi } from '../support/fake-messages-api';
import { readReply } from '../support/http-server-child';
import { tempDir } from '../support/temp-dir';
import { appEnv, KEYS, startApp, waitForRun, type AppServer, type KeyHolder, type Loose } from '../team/resilience/approvals-app';

// Input rules of the HTTP API over real HTTP through the real app: a run driven by the real SDK
// against the fake Messages API waits at a tool approval, and every malformed request around it
// is refused with a 4xx while the run's stream stays as it was.

const API_KEY = 'sk-ant-test-http-input-0123456789';
const MODEL = 'claude-sonnet-4-6';
const TEAM = { architect: { model: MODEL }, executor: { model: MODEL }, reviewer: { model: MODEL } };

let api: FakeMessagesApi;
let server: AppServer;
let dir: { path: string; remove(): void };
let runId: string;
let approvalId: string;

/** Sends `body` as is, with the given content type (none when undefined). */
async function raw(method: string, path: string, body: string | undefined, contentType: string | undefined, as: KeyHolder = 'ann'): Promise<{ status: number; body: Loose; text: string }> {
  const headers: Record<string, string> = { authorization: `Bearer ${KEYS[as]}` };
  if (contentType !== undefined) headers['content-type'] = contentType;
  return readReply<Loose>(await fetch(`${server.url}${path}`, { method, headers, body }));
}

const eventCount = async () => (await server.request('GET', `/v1/runs/${runId}/events`, { as: 'aud' })).body.events.length as number;

function expectError(res: { status: number; body: Loose }, status: number, message?: string | RegExp): void {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body).sort()).toEqual(['error', 'message', 'statusCode']);
  expect(res.body.statusCode).toBe(status);
  if (typeof message === 'string') expect(res.body.message).toBe(message);
  else if (message) expect(JSON.stringify(res.body.message)).toMatch(message);
}

beforeAll(async () => {
  api = await startFakeMessagesApi({ apiKey: API_KEY });
  dir = tempDir('triad-http-input-');
  server = await startApp(appEnv(join(dir.path, 'data'), api.url, API_KEY));
  api.enqueue(
    toolUseStep('submit_plan', { plan: '1. run the command' }),
    toolUseStep('run_command', { command: 'echo hi > out.txt' }, { id: 'toolu_cmd_1' }),
    toolUseStep('submit_work', { summary: 'ran it', files: [] }),
    toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'fine' }),
  );
  const res = await server.request('POST', '/v1/runs', { body: { goal: 'Run a command', acceptanceCriteria: ['the command ran'], team: TEAM } });
  expect(res.status).toBe(202);
  runId = res.body.runId;
  const run = await waitForRun(server, runId, (r) => r.status === 'awaiting_approval');
  approvalId = run.pendingApprovals[0].approvalId;
}, 60_000);
afterAll(async () => {
  await server?.close();
  await api?.stop();
  dir?.remove();
});

describe('HTTP input rules', () => {
  it('refuses a non-JSON body on a state-changing route with 415 and does nothing (cancel, tool approval)', async () => {
    const before = await eventCount();
    expectError(await raw('POST', `/v1/runs/${runId}/cancel`, 'please stop', 'text/plain'), 415);
    expectError(await raw('POST', `/v1/approvals/${approvalId}/approve`, 'looks fine', 'text/plain', 'bob'), 415);
    expectError(await raw('POST', `/v1/approvals/${approvalId}/reject`, 'reason=no', 'application/x-www-form-urlencoded', 'bob'), 415);
    expectError(await raw('POST', `/v1/runs/${runId}/cancel`, '{"reason":"x"}', undefined), 415);
    expectError(await raw('POST', `/v1/runs/${runId}/cancel`, '{"reason":"x"}', 'application/json; charset=latin1'), 415);
    expectError(await raw('POST', `/v1/runs/${runId}/cancel`, '\uFEFF{"reason":"x"}', 'application/json; charset=utf-16'), 415, 'JSON bodies are read as UTF-8 only');
    expect(await eventCount()).toBe(before);
    const run = (await server.request('GET', `/v1/runs/${runId}`, { as: 'aud' })).body;
    expect(run.status).toBe('awaiting_approval');
    expect(run.pendingApprovals).toHaveLength(1);
  });

  it('refuses a compressed body that does not decompress with 400 naming its encoding, and does nothing; a good one is read', async () => {
    const before = await eventCount();
    const send = async (encoding: string, body: Buffer) =>
      readReply<Loose>(
        await fetch(`${server.url}/v1/runs/${runId}/cancel`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEYS.ann}`, 'content-type': 'application/json', 'content-encoding': encoding },
          body,
        }),
      );
    expectError(await send('deflate', Buffer.from('not deflate')), 400, 'the request body is not valid deflate data');
    expectError(await send('gzip', Buffer.from([0x1f, 0x8b, 8, 0])), 400, 'the request body is not valid gzip data');
    expectError(await send('br', Buffer.from('xx')), 400, 'the request body is not valid br data');
    // A body the parser refuses for its own reasons keeps its message.
    expectError(await send('gzip', gzipSync('{"reason":')), 400, /JSON/);
    expectError(await send('compress', Buffer.from('x')), 415);
    expect(await eventCount()).toBe(before);
    expectError(await send('gzip', gzipSync('{"unknown":1}')), 400, /property unknown should not exist/);
  });

  it('answers what is not HTTP with a JSON error body and closes the connection', async () => {
    const { hostname, port } = new URL(server.url);
    const exchange = (bytes: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => socket.end(bytes));
        let text = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => (text += chunk));
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
      });
    const before = await eventCount();
    const cases: Array<[string, number]> = [
      ['this is not http\r\n\r\n', 400],
      [`POST /v1/runs/${runId}/cancel HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}`, 400],
      [`GET /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Bad: a\u0001b\r\n\r\n`, 400],
      [`GET /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
    ];
    for (const [bytes, status] of cases) {
      const reply = await exchange(bytes);
      const [head, body] = reply.split('\r\n\r\n');
      expect(head).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
      expect(head).toMatch(/\r\nContent-Type: application\/json/);
      expect(head).toMatch(/\r\nConnection: close/);
      expect(JSON.parse(body)).toEqual({ statusCode: status, error: expect.any(String), message: expect.any(String) });
    }
    expect(await eventCount()).toBe(before);

    // Garbage after a request whose answer is under way (an event stream): the connection is
    // closed, and no error is written into the stream's body.
    const streamed = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () =>
        socket.write(`GET /v1/runs/${runId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEYS.aud}\r\nAccept: text/event-stream\r\n\r\n`),
      );
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => {
        text += chunk;
        if (text.includes('\r\n\r\n') && !text.includes('sent garbage')) {
          text += 'sent garbage';
          socket.write('this is not http\r\n\r\n');
        }
      });
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(streamed).toMatch(/^HTTP\/1.1 200 /);
    expect(streamed).toMatch(/\r\nConnection: keep-alive\r\n/);
    expect(streamed).not.toMatch(/HTTP\/1.1 400/);

    // A client that asks for the connection to close is told it will be.
    const head = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () =>
        socket.write(`GET /v1/runs/${runId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEYS.aud}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n`),
      );
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => {
        text += chunk;
        if (text.includes('\r\n\r\n')) {
          socket.destroy();
          resolve(text.split('\r\n\r\n')[0]);
        }
      });
      socket.on('error', reject);
    });
    expect(head).toMatch(/^HTTP\/1.1 200 /);
    expect(head).toMatch(/\r\nConnection: close(\r\n|$)/);
  });

  it('answers a method a path does not take with 405 and the methods it does take, and does nothing', async () => {
    const before = await eventCount();
    const send = (method: string, path: string, body?: string) =>
      fetch(`${server.url}${path}`, { method, headers: { authorization: `Bearer ${KEYS.ann}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body });
    const cases: Array<[string, string, string]> = [
      ['PUT', '/v1/runs', 'GET, HEAD, OPTIONS, POST'],
      ['DELETE', `/v1/runs/${runId}`, 'GET, HEAD, OPTIONS'],
      ['GET', `/v1/runs/${runId}/cancel`, 'OPTIONS, POST'],
      ['PATCH', `/v1/runs/${runId}/cancel/`, 'OPTIONS, POST'],
      ['POST', '/health', 'GET, HEAD, OPTIONS'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await send(method, path, method === 'GET' ? undefined : '{}');
      const reply = await readReply<Loose>(res);
      expectError(reply, 405, new RegExp(`${method} is not allowed here; this path takes ${allow}`));
      expect({ path, allow: res.headers.get('allow') }).toEqual({ path, allow });
    }
    // OPTIONS names the same methods; a path no route has is still 404; a method a path takes is served.
    const options = await send('OPTIONS', '/v1/runs');
    expect({ status: options.status, allow: options.headers.get('allow') }).toEqual({ status: 204, allow: 'GET, HEAD, OPTIONS, POST' });
    expectError(await readReply<Loose>(await send('PUT', '/v1/nothing-here', '{}')), 404);
    expect((await send('HEAD', `/v1/runs/${runId}`)).status).toBe(200);
    expect(await eventCount()).toBe(before);
  });

  it('refuses deep nesting with 400 on every body route (it used to overflow the stack: 500)', async () => {
    const before = await eventCount();
    const deep = (field: string) => `{"${field}":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    const routes: Array<[string, string, KeyHolder]> = [
      ['/v1/runs', 'goal', 'ann'],
      [`/v1/runs/${runId}/cancel`, 'reason', 'ann'],
      [`/v1/runs/${runId}/fork`, 'overrides', 'ann'],
      [`/v1/runs/${runId}/resume`, 'x', 'ann'],
      [`/v1/reviews/rev_${runId}_1/approve`, 'reason', 'bob'],
      [`/v1/reviews/rev_${runId}_1/reject`, 'reason', 'bob'],
      [`/v1/approvals/${approvalId}/approve`, 'reason', 'bob'],
      [`/v1/approvals/${approvalId}/reject`, 'reason', 'bob'],
    ];
    for (const [path, field, as] of routes) expectError(await raw('POST', path, deep(field), 'application/json', as), 400, /nested deeper than 32 levels/);
    expect(await eventCount()).toBe(before);
  });

  it('refuses a launch whose criteria array holds 950,000 numbers before parsing it', async () => {
    const body = JSON.stringify({ goal: 'g', acceptanceCriteria: new Array<number>(950_000).fill(7) });
    expect(body.length).toBeGreaterThan(1_800_000);
    expectError(await raw('POST', '/v1/runs', body, 'application/json'), 400, 'the body holds more than 5000 values');
    const long = JSON.stringify({ goal: 'g', acceptanceCriteria: new Array<number>(1001).fill(7) });
    expectError(await raw('POST', '/v1/runs', long, 'application/json'), 400, 'body.acceptanceCriteria has 1001 items; at most 1000 are accepted');
    expectError(await raw('POST', '/v1/runs', '[1,2,3]', 'application/json'), 400, 'the body must be a JSON object');
    expectError(await raw('POST', '/v1/runs', '{"goal":"g","acceptanceCriteria":["c"],"__proto__":{"x":1}}', 'application/json'), 400, 'body has the key __proto__, which is not accepted');
  });

  it('never coerces types: {"turn": true} or "1" is not turn 1', async () => {
    const runsBefore = (await server.request('GET', '/v1/runs', { as: 'aud' })).body.runs.length;
    for (const turn of [true, '1', [1], 1.5, null]) {
      expectError(await server.request('POST', `/v1/runs/${runId}/fork`, { body: { turn } }), 400, /turn must be an integer number/);
    }
    expectError(await server.request('POST', '/v1/runs', { body: { goal: 'g', acceptanceCriteria: ['c'], maxIterations: '2' } }), 400, /maxIterations must be an integer number/);
    expectError(await server.request('POST', `/v1/reviews/rev_${runId}_1/reject`, { as: 'bob', body: { reason: 'no', rework: 'false' } }), 400, /rework must be a boolean value/);
    expect((await server.request('GET', '/v1/runs', { as: 'aud' })).body.runs.length).toBe(runsBefore);
  });

  it('accepts only the query parameters a route declares, once each, as strict integers where numeric', async () => {
    const cases: Array<[string, string, RegExp]> = [
      ['GET', '/v1/runs?foo=1', /unknown query parameter foo; accepted: (limit, status|status, limit)/],
      ['GET', '/v1/runs?a[b]=1', /unknown query parameter a\[b\]/],
      ['GET', '/v1/runs?status=queued&status=failed', /query parameter status is given more than once/],
      ['GET', `/v1/runs/${runId}?verbose=1`, /this route takes no query parameters \(got verbose\)/],
      ['GET', '/v1/reviews?x=', /this route takes no query parameters/],
      ['GET', '/v1/approvals?run=1', /unknown query parameter run; accepted: runId/],
      ['GET', `/v1/runs/${runId}/events?fromRevision=abc`, /fromRevision must be a non-negative integer/],
      ['GET', `/v1/runs/${runId}/context?revision=1e3`, /revision must be a non-negative integer/],
      ['POST', `/v1/runs/${runId}/wait?timeoutMs=1e3`, /timeoutMs must be a non-negative integer/],
      ['POST', `/v1/runs/${runId}/wait?timeoutMs=-1`, /timeoutMs must be a non-negative integer/],
      ['POST', `/v1/runs/${runId}/wait?timeoutMs=`, /timeoutMs must be a non-negative integer/],
      ['GET', '/v1/runs?limit=', /limit must be a non-negative integer/],
      ['GET', '/v1/runs?limit=0x10', /limit must be a non-negative integer/],
      ['GET', '/v1/decisions?runId=x&bogus=1', /unknown query parameter bogus/],
    ];
    for (const [method, path, message] of cases) expectError(await raw(method, path, undefined, undefined, method === 'GET' && path.startsWith('/v1/decisions') ? 'aud' : 'ann'), 400, message);
  });

  it('refuses NUL and unpaired surrogates in path and query values with 400', async () => {
    const before = await eventCount();
    expectError(await raw('GET', '/v1/runs/%00', undefined, undefined), 400, 'path parameter id holds a NUL character; text must be well-formed Unicode without NUL');
    expectError(await raw('POST', `/v1/runs/run_%00/cancel`, undefined, undefined), 400, /path parameter id/);
    expectError(await raw('GET', '/v1/runs?status=%00', undefined, undefined), 400, 'query parameter status holds a NUL character; text must be well-formed Unicode without NUL');
    expectError(await raw('GET', `/v1/approvals?runId=a%00b`, undefined, undefined), 400, /query parameter runId/);
    expectError(await raw('GET', '/v1/decisions?decider=%00', undefined, undefined, 'aud'), 400, /query parameter decider/);
    expect(await eventCount()).toBe(before);
  });

  it('refuses body fields on a route that takes no body, accepts a bare POST on optional-body routes', async () => {
    expectError(await server.request('POST', `/v1/runs/${runId}/wait`, { body: { force: true } }), 400, 'this route takes no body fields');
    // Resume takes a re-pin (models, endpoint) and nothing else.
    expectError(await server.request('POST', `/v1/runs/${runId}/resume`, { body: { force: true } }), 400, /force/);
    // Approving by JSON works, and the run goes on to the review gate.
    const approved = await server.request('POST', `/v1/approvals/${approvalId}/approve`, { as: 'bob', body: { reason: 'fine' } });
    expect(approved.status).toBe(200);
    await waitForRun(server, runId, (r) => r.status === 'awaiting_review');
    const cancelled = await raw('POST', `/v1/runs/${runId}/cancel`, undefined, undefined);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toEqual({ runId, status: 'cancelled' });
  });
});
