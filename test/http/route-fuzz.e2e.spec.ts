import fc from 'fast-check';
import { request as httpRequest } from 'node:http';
import { duplicateKeyIn } from '../../src/shared/strict-json';
import { declaredRoutes, FUZZ_KEYS, startFuzzApp, type FuzzApp, type FuzzKey, type StoreKind, type StoreSnapshot } from './fuzz-support';

// Property-based fuzzing of every HTTP route through the real app, on SQLite and on PostgreSQL:
// arbitrary bodies (any JSON, any Unicode, NUL, deep nesting, long arrays, broken JSON), content
// types, headers, keys, path ids and query strings. Whatever arrives: never a 5xx; every error is
// JSON `{statusCode, error, message}` with no stack or database text; and a refused request
// (any 4xx) leaves the store exactly as it was (head position and decision records).
// Bounded by count and time (TRIAD_FUZZ_RUNS, TRIAD_FUZZ_SECONDS; TRIAD_FUZZ_SEED replays a run).

jest.setTimeout(120_000);

const RUNS = Number(process.env.TRIAD_FUZZ_RUNS ?? 250);
const SECONDS = Number(process.env.TRIAD_FUZZ_SECONDS ?? 25);
const SEED = process.env.TRIAD_FUZZ_SEED === undefined ? undefined : Number(process.env.TRIAD_FUZZ_SEED);

type IdKind = 'run' | 'review' | 'approval' | 'project' | 'webhook';
interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  /** The key that has the role for it; null for public routes. */
  as: FuzzKey | null;
  query?: string[];
  id?: IdKind;
  /** A valid body, the seed of the mutated ones. */
  body?: Record<string, unknown>;
}

const REASON = { reason: 'looks right' };
const ROUTES: Route[] = [
  { method: 'POST', path: '/v1/runs', as: 'op', body: { goal: 'Write the letter B', acceptanceCriteria: ['file b.txt contains "B"'], maxIterations: 1 } },
  { method: 'GET', path: '/v1/runs', as: 'aud', query: ['status', 'limit'] },
  { method: 'GET', path: '/v1/runs/:id', as: 'aud', id: 'run' },
  { method: 'GET', path: '/v1/runs/:id/events', as: 'aud', id: 'run', query: ['fromRevision'] },
  { method: 'POST', path: '/v1/runs/:id/wait', as: 'aud', id: 'run', query: ['timeoutMs'] },
  { method: 'POST', path: '/v1/runs/:id/cancel', as: 'op', id: 'run', body: { reason: 'not needed' } },
  { method: 'GET', path: '/v1/runs/:id/context', as: 'aud', id: 'run', query: ['revision'] },
  { method: 'GET', path: '/v1/runs/:id/workspace', as: 'aud', id: 'run', query: ['iteration', 'diff'] },
  { method: 'POST', path: '/v1/session', as: null, body: { apiKey: 'not-a-key-of-anyone' } },
  { method: 'GET', path: '/v1/session', as: 'aud' },
  { method: 'DELETE', path: '/v1/session', as: null },
  { method: 'POST', path: '/v1/auth/passkeys/options', as: 'rev', body: {} },
  { method: 'POST', path: '/v1/auth/passkeys', as: 'rev', body: { response: { id: 'AA', rawId: 'AA', type: 'public-key', response: { clientDataJSON: 'AA', attestationObject: 'AA' } } } },
  { method: 'GET', path: '/v1/auth/passkeys', as: 'aud' },
  { method: 'POST', path: '/v1/runs/:id/resume', as: 'op', id: 'run' },
  { method: 'POST', path: '/v1/runs/:id/fork', as: 'op', id: 'run', body: { turn: 1, overrides: { team: { executor: { model: 'offline' } } } } },
  { method: 'GET', path: '/v1/reviews', as: 'rev' },
  { method: 'POST', path: '/v1/reviews/:id/approve', as: 'rev', id: 'review', body: REASON },
  { method: 'POST', path: '/v1/reviews/:id/reject', as: 'rev', id: 'review', body: { ...REASON, rework: false } },
  { method: 'GET', path: '/v1/reviews/:id', as: 'aud', id: 'review' },
  { method: 'GET', path: '/v1/reviews/:id/statement', as: 'rev', id: 'review', query: ['outcome', 'reason'] },
  { method: 'GET', path: '/v1/approvals', as: 'rev', query: ['runId'] },
  { method: 'POST', path: '/v1/approvals/:id/approve', as: 'rev', id: 'approval', body: REASON },
  { method: 'POST', path: '/v1/approvals/:id/reject', as: 'rev', id: 'approval', body: REASON },
  { method: 'GET', path: '/v1/approvals/:id/statement', as: 'rev', id: 'approval', query: ['outcome', 'reason'] },
  { method: 'GET', path: '/v1/decisions', as: 'aud', query: ['runId', 'decider', 'outcome', 'from', 'to', 'limit', 'afterSeq', 'format'] },
  { method: 'GET', path: '/v1/decisions/verify', as: 'aud', query: ['since'] },
  { method: 'GET', path: '/v1/decisions/head', as: 'aud', query: ['since'] },
  { method: 'GET', path: '/v1/decisions/keys', as: 'aud' },
  {
    method: 'POST',
    path: '/v1/projects',
    as: 'op',
    body: { goal: 'Two letters', tasks: [{ key: 'c', goal: 'Write c', acceptanceCriteria: ['file c.txt exists'] }], strategy: 'dag', run: { maxIterations: 1 } },
  },
  { method: 'GET', path: '/v1/projects', as: 'aud', query: ['status', 'limit'] },
  { method: 'GET', path: '/v1/projects/:id', as: 'aud', id: 'project' },
  { method: 'GET', path: '/v1/projects/:id/events', as: 'aud', id: 'project', query: ['fromRevision'] },
  { method: 'POST', path: '/v1/projects/:id/cancel', as: 'op', id: 'project', body: { reason: 'not needed' } },
  { method: 'POST', path: '/v1/projects/:id/tasks/:key/retry', as: 'op', id: 'project' },
  { method: 'POST', path: '/v1/projects/:id/review/approve', as: 'rev', id: 'project', body: REASON },
  { method: 'POST', path: '/v1/projects/:id/review/reject', as: 'rev', id: 'project', body: REASON },
  // A public host that does not resolve here: every add is refused (400) without reaching anything.
  { method: 'POST', path: '/v1/webhooks', as: 'adm', body: { url: 'https://hooks.example.invalid/triad', events: ['run.ended'] } },
  { method: 'GET', path: '/v1/webhooks', as: 'adm' },
  { method: 'DELETE', path: '/v1/webhooks/:id', as: 'adm', id: 'webhook' },
  { method: 'GET', path: '/v1/webhooks/:id/deliveries', as: 'adm', id: 'webhook', query: ['limit'] },
  { method: 'GET', path: '/health', as: null },
  { method: 'GET', path: '/metrics', as: null },
  { method: 'GET', path: '/.well-known/agent-card.json', as: null },
  { method: 'POST', path: '/a2a', as: 'aud', body: { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'run_x' } } },
  { method: 'POST', path: '/mcp', as: 'aud', body: { jsonrpc: '2.0', id: 1, method: 'ping' } },
];

interface FuzzRequest {
  route: Route;
  /** The path as sent (ids already percent-encoded, or raw fragments). */
  path: string;
  query: string;
  as: FuzzKey | null | { raw: string };
  contentType?: string;
  body?: string;
  chunked: boolean;
  headers: Record<string, string>;
  /** A Host header of the fuzz's own (fetch always sends the URL's), sent through node:http. */
  host?: string;
}

const describeRequest = (r: FuzzRequest) =>
  `${r.route.method} ${r.path}${r.query ? `?${r.query}` : ''} host=${JSON.stringify(r.host)} as=${JSON.stringify(r.as)} ct=${JSON.stringify(r.contentType)} chunked=${r.chunked} headers=${JSON.stringify(r.headers)} body=${JSON.stringify(r.body?.slice(0, 300))}${(r.body?.length ?? 0) > 300 ? `… (${r.body!.length} chars)` : ''}`;

/** Percent-encodes any string, lone surrogates included (as the bytes a lax encoder would send). */
function encodeAny(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    if (pair) {
      out += encodeURIComponent(s.slice(i, i + 2));
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    } else out += encodeURIComponent(s[i]);
  }
  return out;
}

// ---- arbitraries -------------------------------------------------------------------------------

const nastyText = fc.constantFrom('', ' ', '\0', 'a\0b', '\uD800', 'x\uDFFFy', '\uFEFF', '\u202E', '😀', '%00', '../..', "'; DROP TABLE events; --", 'null', 'true', '1e3', '-1', '0x10', '1.5', '99999999999999999999');
const text = fc.oneof({ arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 3 }, { arbitrary: nastyText, weight: 2 }, { arbitrary: fc.string({ maxLength: 20 }), weight: 2 });
const anyJson = fc.jsonValue({ maxDepth: 4, stringUnit: 'binary' });
const printable = fc.string({ unit: 'grapheme-ascii', maxLength: 40 });
const rawFragment = fc.constantFrom('%', '%zz', '%ff', '%00', '%ED%A0%80', '%C0%80', '&', '=', '%26', '+', '[]', 'a[b]');

function idArb(route: Route, ids: Record<IdKind, string[]>): fc.Arbitrary<string> {
  return fc.oneof(
    // The pool grows as the fuzz launches and forks runs, so later requests aim at them too.
    { arbitrary: fc.nat().map((i) => ids[route.id!][i % ids[route.id!].length]), weight: 6 },
    { arbitrary: text.map(encodeAny), weight: 3 },
    { arbitrary: fc.constantFrom('%00', 'run_%00', '%ff', '%ED%A0%80', '..', '%2e%2e', 'a%2Fb', 'x'.repeat(300), '%20', 'rev_', 'apr_.'), weight: 2 },
  );
}

function queryArb(route: Route): fc.Arbitrary<string> {
  const declared = route.query ?? [];
  const key = fc.oneof(
    ...(declared.length > 0 ? [{ arbitrary: fc.constantFrom(...declared), weight: 4 }] : []),
    { arbitrary: fc.constantFrom('limit', 'status', 'x', '__proto__', 'constructor', 'a[b]', ''), weight: 1 },
    { arbitrary: text, weight: 1 },
  );
  const value = fc.oneof(
    { arbitrary: fc.constantFrom('0', '1', '10', 'queued', 'awaiting_review', 'json', 'csv', 'ndjson', 'approved', '2025-01-01', '2025-01-31T12:00:00Z', 'user:rev', 'system'), weight: 3 },
    { arbitrary: text, weight: 3 },
  );
  const pair = fc.oneof(
    { arbitrary: fc.tuple(key, value).map(([k, v]) => `${encodeAny(k)}=${encodeAny(v)}`), weight: 5 },
    { arbitrary: fc.tuple(key, rawFragment).map(([k, v]) => `${encodeAny(k)}=${v}`), weight: 1 },
    { arbitrary: key.map(encodeAny), weight: 1 },
  );
  const pairs = fc.oneof({ arbitrary: fc.constant([]), weight: 3 }, { arbitrary: fc.array(pair, { minLength: 1, maxLength: 4 }), weight: 2 });
  if (route.path.endsWith('/wait')) {
    // Bounded waits only: a wait without a small timeout would hold the fuzz for 30 s.
    return fc.tuple(pairs, fc.constantFrom('0', '0', '1', 'abc', '1e3', '-1', '%00')).map(([ps, t]) => [...ps.filter((p) => !p.startsWith('timeoutMs')), `timeoutMs=${t}`].join('&'));
  }
  return pairs.map((ps) => ps.join('&'));
}

function deepText(depth: number, object: boolean, field: string): string {
  return object ? `{"${field}":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}` : `{"${field}":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}

function bodyArb(route: Route): fc.Arbitrary<string | undefined> {
  const valid = route.body ?? {};
  const fields = Object.keys(valid);
  const field = fc.constantFrom(...(fields.length > 0 ? fields : ['reason']));
  // A valid body with some fields replaced by anything and perhaps an unknown one added.
  const mutated = fc
    .tuple(fc.subarray(fields), anyJson, fc.option(fc.tuple(text, anyJson), { nil: undefined }))
    .map(([replaced, value, extra]) => {
      const body: Record<string, unknown> = { ...valid };
      for (const f of replaced) body[f] = value;
      if (extra) body[extra[0]] = extra[1];
      return JSON.stringify(body);
    });
  const stringField = fc.tuple(field, text).map(([f, v]) => JSON.stringify({ ...valid, [f]: v }));
  // A valid body with one of its keys given a second time, first or nested, plainly or escaped.
  const duplicated = fc.tuple(field, anyJson, fc.boolean(), fc.boolean()).map(([f, v, escaped, nested]) => {
    const name = escaped ? JSON.stringify(f).replace(/^"(.)/, (_m, c: string) => `"\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : JSON.stringify(f);
    const text = JSON.stringify(valid);
    return nested ? `{"wrap":{${name}:1,${JSON.stringify(f)}:2},${text.slice(1)}` : `{${name}:${JSON.stringify(v)},${text.slice(1)}`;
  });
  const shaped = fc.oneof(
    fc.tuple(fc.integer({ min: 30, max: 20_000 }), fc.boolean(), field).map(([d, o, f]) => deepText(d, o, f)),
    fc.tuple(fc.integer({ min: 900, max: 300_000 }), field).map(([n, f]) => `{"${f}":[${'7,'.repeat(n)}7]}`),
    fc.tuple(fc.integer({ min: 4000, max: 200_000 }), field).map(([n, f]) => JSON.stringify({ ...valid, [f]: 'x'.repeat(n) })),
    fc.constantFrom('{', 'nul', '{"a":1,}', '\u0000', '"str"', '123', 'null', '[]', '{}', '\uFEFF{}', '{"reason":"\\ud800"}', '{"reason":"a\\u0000b"}', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}'),
  );
  return fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 2 },
    { arbitrary: fc.constant(JSON.stringify(valid)), weight: 3 },
    { arbitrary: anyJson.map((v) => JSON.stringify(v)), weight: 3 },
    { arbitrary: mutated, weight: 4 },
    { arbitrary: stringField, weight: 2 },
    { arbitrary: shaped, weight: 2 },
    ...(fields.length > 0 ? [{ arbitrary: duplicated, weight: 2 }] : []),
  );
}

/** Host headers: this machine's names, any port, and names a rebinding page or a broken client sends. */
const hostArb = fc.oneof(
  { arbitrary: fc.constant(undefined), weight: 12 },
  {
    arbitrary: fc.constantFrom('127.0.0.1', 'localhost:1', 'LOCALHOST', '[::1]:3000', 'evil.example', '127.0.0.1.evil.example', 'localhost.evil.example:80', '', ' ', 'a'.repeat(300), '127.0.0.1:abc', '%00', '[::1'),
    weight: 2,
  },
  { arbitrary: printable, weight: 1 },
);
const ALLOWED_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d*)?$/i;

const contentTypeArb = fc.oneof(
  { arbitrary: fc.constant('application/json'), weight: 12 },
  {
    arbitrary: fc.constantFrom<string | undefined>(
      undefined,
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      'application/json;charset=UTF-16',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/merge-patch+json',
      'application/jsonx',
      '',
    ),
    weight: 3,
  },
  { arbitrary: printable, weight: 1 },
);

const asArb = (route: Route): fc.Arbitrary<FuzzRequest['as']> =>
  fc.oneof(
    { arbitrary: fc.constant(route.as), weight: 10 },
    { arbitrary: fc.constantFrom<FuzzKey | null>('op', 'rev', 'aud', 'adm', null), weight: 2 },
    { arbitrary: fc.constantFrom('Bearer ', 'Bearer nope', 'Basic b3A6b3A=', `bearer ${FUZZ_KEYS.op}`, `Bearer ${FUZZ_KEYS.op} extra`).map((raw) => ({ raw })), weight: 1 },
  );

const headersArb = fc.record(
  {
    accept: fc.constantFrom('application/json', '*/*', 'text/html', 'text/event-stream', 'application/x-ndjson', 'text/csv'),
    'last-event-id': fc.oneof(fc.constantFrom('0', '-1', '1e3', 'abc', '99999999999999999999'), printable),
    'x-fuzz': printable,
    'accept-encoding': fc.constantFrom('gzip', 'identity', 'br;q=0'),
  },
  { requiredKeys: [] },
);

function requestArb(ids: Record<IdKind, string[]>): fc.Arbitrary<FuzzRequest> {
  return fc.constantFrom(...ROUTES).chain((route) =>
    fc.record({
      route: fc.constant(route),
      path: route.id ? idArb(route, ids).map((id) => route.path.replace(':id', id).replace(':key', 'a')) : fc.constant(route.path),
      query: queryArb(route),
      as: asArb(route),
      contentType: route.method === 'POST' ? contentTypeArb : fc.constant(undefined),
      body: route.method === 'POST' ? bodyArb(route) : fc.constant(undefined),
      chunked: fc.boolean(),
      headers: headersArb,
      host: hostArb,
    }),
  );
}

// ---- sending and checking ------------------------------------------------------------------------

interface Reply {
  status: number;
  contentType: string;
  text: string;
}

/** One request through node:http, which sends the Host it is given. */
function sendWithHost(app: FuzzApp, r: FuzzRequest, headers: Record<string, string>): Promise<Reply> {
  const url = new URL(app.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method: r.route.method, path: `${r.path}${r.query ? `?${r.query}` : ''}`, headers: { ...headers, host: r.host }, setHost: false, timeout: 20_000 },
      (res) => {
        const contentType = String(res.headers['content-type'] ?? '');
        let text = '';
        res.setEncoding('utf8');
        if (contentType.startsWith('text/event-stream')) {
          res.destroy();
          return resolve({ status: res.statusCode ?? 0, contentType, text: '' });
        }
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(r.body);
  });
}

async function send(app: FuzzApp, r: FuzzRequest): Promise<Reply> {
  const headers: Record<string, string> = { ...r.headers };
  if (r.as !== null) headers.authorization = typeof r.as === 'string' ? `Bearer ${FUZZ_KEYS[r.as]}` : r.as.raw;
  if (r.contentType !== undefined) headers['content-type'] = r.contentType;
  if (r.host !== undefined) return sendWithHost(app, r, headers);
  let body: RequestInit['body'] = r.body;
  if (r.body !== undefined && r.chunked) {
    const bytes = new TextEncoder().encode(r.body);
    body = new ReadableStream({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 64 * 1024) controller.enqueue(bytes.subarray(i, i + 64 * 1024));
        controller.close();
      },
    });
  }
  const init: RequestInit & { duplex?: 'half' } = { method: r.route.method, headers, body, signal: AbortSignal.timeout(20_000) };
  if (body instanceof ReadableStream) init.duplex = 'half';
  const res = await fetch(`${app.url}${r.path}${r.query ? `?${r.query}` : ''}`, init);
  const contentType = res.headers.get('content-type') ?? '';
  if (contentType.startsWith('text/event-stream')) {
    await res.body?.cancel();
    return { status: res.status, contentType, text: '' };
  }
  return { status: res.status, contentType, text: await res.text() };
}

/** A stack frame, a source path, or SQLite's and PostgreSQL's own words — none of which a request could make up by chance. */
const LEAKS = /\n\s+at .*:\d+:\d+|node_modules|SQLITE_[A-Z]+|invalid byte sequence for encoding|syntax error at or near|violates (?:unique|foreign key|not-null|check) constraint|duplicate key value/;

function checkReply(r: FuzzRequest, reply: Reply): void {
  const fail = (why: string) => {
    throw new Error(`${why}\nrequest: ${describeRequest(r)}\nreply: ${reply.status} ${reply.contentType} ${reply.text.slice(0, 500)}`);
  };
  if (reply.status >= 500) fail('a 5xx');
  if (reply.status < 400 && r.host !== undefined && !ALLOWED_HOST.test(r.host.trim())) fail('a Host this server does not answer for was served');
  if (reply.status < 400 && r.body !== undefined && duplicateKeyIn(r.body) !== undefined) fail('a body naming a key twice was acted on');
  if (reply.status < 400) return;
  if (!reply.contentType.startsWith('application/json')) fail('an error that is not JSON');
  let body: { statusCode?: unknown; error?: unknown; message?: unknown };
  try {
    body = JSON.parse(reply.text) as typeof body;
  } catch {
    return fail('an error body that does not parse');
  }
  if (Object.keys(body).sort().join() !== 'error,message,statusCode') fail('an error body with other fields than {statusCode, error, message}');
  if (body.statusCode !== reply.status || typeof body.error !== 'string') fail('an error body whose statusCode or error is off');
  const messages = Array.isArray(body.message) ? body.message : [body.message];
  if (messages.length === 0 || !messages.every((m) => typeof m === 'string')) fail('an error message that is not text');
  if (messages.some((m) => LEAKS.test(m as string))) fail('an error that shows a stack, a path or database text');
}

const ACTIVE = new Set(['queued', 'planning', 'executing', 'reviewing']);

/** Waits until no run is being driven and the store stops moving (after an accepted request). */
async function quiesce(app: FuzzApp): Promise<StoreSnapshot> {
  const deadline = Date.now() + 60_000;
  let last = await app.snapshot();
  for (;;) {
    const res = await fetch(`${app.url}/v1/runs?limit=1000`, { headers: { authorization: `Bearer ${FUZZ_KEYS.adm}` } });
    const runs = ((await res.json()) as { runs: Array<{ status: string }> }).runs;
    const busy = runs.some((run) => ACTIVE.has(run.status));
    await new Promise((r) => setTimeout(r, busy ? 50 : 250));
    const now = await app.snapshot();
    if (!busy && now.head === last.head && now.decisions === last.decisions) return now;
    if (Date.now() > deadline) throw new Error(`the store did not settle: ${JSON.stringify(now)}\n${app.stderr}`);
    last = now;
  }
}

/** One request: its reply is well-formed, and a refused request wrote nothing. */
async function exercise(app: FuzzApp, r: FuzzRequest, ids?: Record<IdKind, string[]>): Promise<void> {
  const before = await app.snapshot();
  const reply = await send(app, r);
  checkReply(r, reply);
  if (reply.status >= 400) {
    const after = await app.snapshot();
    if (after.head !== before.head || after.decisions !== before.decisions) {
      throw new Error(`a refused request (${reply.status}) wrote: ${JSON.stringify(before)} -> ${JSON.stringify(after)}\nrequest: ${describeRequest(r)}`);
    }
  } else if (r.route.method === 'POST') {
    const { runId, projectId } = JSON.parse(reply.text) as { runId?: unknown; projectId?: unknown };
    if (ids && reply.status === 202 && typeof runId === 'string' && !ids.run.includes(runId)) {
      ids.run.push(runId);
      ids.review.push(`rev_${runId}_1`);
    }
    if (ids && reply.status === 202 && typeof projectId === 'string' && !ids.project.includes(projectId)) ids.project.push(projectId);
    await quiesce(app);
  }
}

const route = (method: string, path: string) => ROUTES.find((r) => r.method === method && r.path === path)!;

/** Requests that once gave a 500 or acted on a body they could not read. */
function knownCases(ids: Record<IdKind, string[]>): FuzzRequest[] {
  const base = { query: '', chunked: false, headers: {} };
  const run = ids.run[0];
  const req = (method: string, path: string, sent: string, extra: Partial<FuzzRequest> = {}): FuzzRequest => {
    const r = route(method, path);
    return { ...base, route: r, path: sent, as: r.as, contentType: method === 'POST' ? 'application/json' : undefined, ...extra };
  };
  return [
    req('POST', '/v1/runs', '/v1/runs', { body: deepText(5000, true, 'goal') }),
    req('POST', '/v1/runs/:id/cancel', `/v1/runs/${run}/cancel`, { body: deepText(20_000, false, 'reason') }),
    req('POST', '/v1/runs', '/v1/runs', { body: JSON.stringify({ goal: 'g', acceptanceCriteria: new Array<number>(950_000).fill(7) }) }),
    req('POST', '/v1/runs/:id/cancel', `/v1/runs/${run}/cancel`, { contentType: 'text/plain', body: 'stop' }),
    req('POST', '/v1/approvals/:id/approve', `/v1/approvals/${ids.approval[0]}/approve`, { contentType: 'text/plain', body: 'ok' }),
    req('POST', '/v1/runs/:id/fork', `/v1/runs/${run}/fork`, { body: '{"turn":true}' }),
    req('GET', '/v1/runs/:id', '/v1/runs/%00'),
    req('GET', '/v1/runs/:id/events', '/v1/runs/%00/events'),
    req('GET', '/v1/runs/:id/context', '/v1/runs/%00/context'),
    req('POST', '/v1/runs/:id/resume', '/v1/runs/%00/resume'),
    req('POST', '/v1/reviews/:id/approve', '/v1/reviews/rev_%00_1/approve', { body: JSON.stringify(REASON) }),
    req('POST', '/v1/approvals/:id/reject', '/v1/approvals/apr_%00.x/reject', { body: JSON.stringify(REASON) }),
    req('GET', '/v1/runs', '/v1/runs', { query: 'status=%00' }),
    req('GET', '/v1/approvals', '/v1/approvals', { query: 'runId=%00' }),
    req('GET', '/v1/decisions', '/v1/decisions', { query: 'runId=%00' }),
    req('GET', '/v1/decisions', '/v1/decisions', { query: 'decider=a%00' }),
    req('GET', '/v1/runs/:id/events', `/v1/runs/${run}/events`, { query: 'fromRevision=abc' }),
    req('POST', '/v1/runs/:id/wait', `/v1/runs/${run}/wait`, { query: 'timeoutMs=1e3' }),
    req('POST', '/v1/projects', '/v1/projects', { body: JSON.stringify({ goal: 'P', tasks: [[]] }) }),
    req('POST', '/v1/projects', '/v1/projects', { body: JSON.stringify({ goal: 'P', tasks: [[{ key: 'a', goal: 'A', acceptanceCriteria: ['x'] }]] }) }),
  ];
}

/** Settings fields given as arrays (or scalars), which nested validation alone let through as their defaults. */
function settingsNotObjects(): Array<{ path: string; body: Record<string, unknown>; message: RegExp }> {
  const launch = { goal: 'g', acceptanceCriteria: ['file a.txt exists'] };
  const runCases = (['team', 'budget', 'reviewPolicy', 'retry', 'toolApproval', 'stagnation', 'contextWindow'] as const).flatMap((field) => [
    { path: '/v1/runs', body: { ...launch, [field]: [{}] }, message: new RegExp(`${field} must be an object`) },
    { path: '/v1/runs', body: { ...launch, [field]: 7 }, message: new RegExp(`${field} must be an object`) },
  ]);
  return [
    ...runCases,
    { path: '/v1/runs', body: { ...launch, budget: [{ totalTokens: 10 }] }, message: /budget must be an object/ },
    { path: '/v1/runs', body: { ...launch, team: { executor: [] } }, message: /team.executor must be an object/ },
    { path: '/v1/runs', body: { ...launch, team: { executor: { thinking: [[]] } } }, message: /thinking must be an object/ },
    // A role's network allow-list: hosts only, at most 50.
    { path: '/v1/runs', body: { ...launch, team: { executor: { network: ['not a host!'] } } }, message: /team\.executor\.network\[0\] \\"not a host!\\" must be a host name/ },
    { path: '/v1/runs', body: { ...launch, team: { executor: { network: ['*.10.0.0.1'] } } }, message: /team\.executor\.network\[0\]/ },
    { path: '/v1/runs', body: { ...launch, team: { executor: { network: ['127.0.0.1:99999'] } } }, message: /port outside 1 to 65535/ },
    { path: '/v1/runs', body: { ...launch, team: { executor: { network: [7] } } }, message: /network/ },
    { path: '/v1/runs', body: { ...launch, team: { executor: { network: 'registry.npmjs.org' } } }, message: /network/ },
    { path: '/v1/runs', body: { ...launch, team: { reviewer: { network: Array.from({ length: 51 }, (_, i) => `h${i}.example`) } } }, message: /network/ },
    { path: '/v1/runs', body: { ...launch, budget: { perRole: [] } }, message: /perRole must be an object/ },
    { path: '/v1/runs', body: { ...launch, reviewPolicy: { timeout: [] } }, message: /timeout must be an object/ },
    { path: '/v1/projects', body: { goal: 'P', run: [] }, message: /run must be an object/ },
    { path: '/v1/projects', body: { goal: 'P', run: { budget: [] } }, message: /budget must be an object/ },
    { path: '/v1/projects', body: { goal: 'P', reviewPolicy: [] }, message: /reviewPolicy must be an object/ },
    { path: '/v1/projects', body: { goal: 'P', tasks: [[]] }, message: /each value in tasks must be an object/ },
  ];
}

describe('the route table', () => {
  it('covers every route the controllers declare', () => {
    const fuzzed = new Set(ROUTES.map((r) => `${r.method} ${r.path}`));
    expect(declaredRoutes().filter((r) => !fuzzed.has(r))).toEqual([]);
  });
});

describe.each<StoreKind>(['sqlite', 'postgres'])('route fuzz on %s', (kind) => {
  let app: FuzzApp;
  let ids: Record<IdKind, string[]>;

  beforeAll(async () => {
    app = await startFuzzApp(kind);
    // One run waiting at the human gate gives real ids to aim at.
    const res = await fetch(`${app.url}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${FUZZ_KEYS.op}`, 'content-type': 'application/json' },
      body: JSON.stringify({ goal: 'Write the letter A', acceptanceCriteria: ['file a.txt contains "A"'] }),
    });
    expect(res.status).toBe(202);
    const { runId } = (await res.json()) as { runId: string };
    // And a project with one task (key a) waiting at its review.
    const project = await fetch(`${app.url}/v1/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${FUZZ_KEYS.op}`, 'content-type': 'application/json' },
      body: JSON.stringify({ goal: 'One letter', tasks: [{ key: 'a', goal: 'Write a', acceptanceCriteria: ['file a.txt exists'] }] }),
    });
    expect(project.status).toBe(202);
    const { projectId } = (await project.json()) as { projectId: string };
    await quiesce(app);
    ids = { run: [runId], review: [`rev_${runId}_1`, `rev_${runId}_2`], approval: [`apr_${runId}.toolu_1`], project: [projectId], webhook: ['wh_0000000000000000'] };
  }, 90_000);
  afterAll(async () => {
    await app?.close();
  });

  it('answers the requests that once failed with a 4xx and writes nothing', async () => {
    for (const r of knownCases(ids)) {
      await exercise(app, r);
    }
  });

  it('refuses settings given as arrays or scalars, and text no one can see, with a 400 naming the field, and writes nothing', async () => {
    const blank = '\u200b\ufeff';
    const cases = [
      ...settingsNotObjects(),
      { path: '/v1/runs', body: { goal: blank, acceptanceCriteria: ['file a.txt exists'] }, message: /goal must not be blank/ },
      { path: '/v1/runs', body: { goal: 'g', acceptanceCriteria: [blank] }, message: /acceptance criteria must not be blank/ },
      { path: '/v1/projects', body: { goal: blank }, message: /goal must not be blank/ },
      { path: '/v1/projects', body: { goal: 'P', acceptanceCriteria: ['   '] }, message: /acceptance criteria must not be blank/ },
      { path: '/v1/projects', body: { goal: 'P', tasks: [{ key: 'a', goal: 'A', acceptanceCriteria: [blank] }] }, message: /acceptance criteria must not be blank/ },
      { path: `/v1/reviews/${ids.review[0]}/approve`, route: '/v1/reviews/:id/approve', body: { reason: blank }, message: /reason must not be blank/ },
      { path: `/v1/reviews/${ids.review[0]}/reject`, route: '/v1/reviews/:id/reject', body: { reason: ' \u200b ' }, message: /reason must not be blank/ },
    ];
    for (const c of cases) {
      const declared = route('POST', 'route' in c && c.route ? c.route : c.path);
      const r = { ...knownCases(ids)[0], route: declared, path: c.path, as: declared.as, body: JSON.stringify(c.body) };
      const before = await app.snapshot();
      const reply = await send(app, r);
      expect({ body: c.body, status: reply.status }).toEqual({ body: c.body, status: 400 });
      expect(reply.text).toMatch(c.message);
      expect(await app.snapshot()).toEqual(before);
    }
  });

  it('never answers 5xx, always a JSON error body, and writes nothing when it refuses', async () => {
    await fc.assert(
      fc.asyncProperty(requestArb(ids), (r) => exercise(app, r, ids)),
      { numRuns: RUNS, seed: SEED, plugins: [fc.interruptAfterTimeLimit(SECONDS * 1000)] },
    );
  });
});
