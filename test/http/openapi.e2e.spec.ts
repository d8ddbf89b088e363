import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv, { type ValidateFunction } from 'ajv';
import { E2E_API_KEYS_ENV, startE2eApp, type E2eApp, type KeyName, type RequestOptions } from '../support/e2e-app';
import { waitForRun } from '../support/app-client';

// The OpenAPI document the app serves, against the app itself: every route Express holds is in it
// and nothing else, it is a valid OpenAPI 3.0 document, and the answers of real calls — successes
// and errors — are what it declares, with no field it does not list.

jest.setTimeout(60_000);

type Schema = Record<string, unknown>;
interface Operation {
  operationId: string;
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: Schema }>;
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Schema }> }>;
  security?: Array<Record<string, string[]>>;
}
interface OpenApi {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, Schema> };
}

/** The documentation's own routes: the document and its viewer's page and assets. */
const DOCUMENTATION = /^\/(docs(\/|$)|openapi\.(json|yaml)$)/;
/**
 * Routes served but left out of the document, each with why: their bodies are another protocol's
 * JSON-RPC messages, which that protocol's SDK speaks (docs/API.md, "OpenAPI").
 */
const PROTOCOL_ENDPOINTS: Readonly<Record<string, string>> = {
  'POST /a2a': "A2A's JSON-RPC (the A2A SDKs' clients)",
  'POST /mcp': "MCP's JSON-RPC over streamable HTTP (MCP clients, the MCP SDK)",
};
/** An admin's key, for the webhook routes. */
const ADMIN = { secret: 'adm-secret-0123456789' };

let e2e: E2eApp;
let doc: OpenApi;
beforeAll(async () => {
  e2e = await startE2eApp({ TRIAD_API_KEYS: `${E2E_API_KEYS_ENV},adm:admin:${ADMIN.secret}` }, 20_000, { reportRoutes: true });
  const res = await e2e.request<OpenApi>('GET', '/openapi.json', { as: null });
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(async () => {
  await e2e?.close();
});

const operations = (): Array<{ method: string; path: string; op: Operation }> =>
  Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ method: method.toUpperCase(), path, op })));

describe('the document lists every route the app serves', () => {
  it('and no other: the routes of the Express router, both ways', () => {
    const routes = (e2e.routes ?? []).filter((r) => !DOCUMENTATION.test(r.path)).map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`);
    const served = routes.filter((r) => !(r in PROTOCOL_ENDPOINTS));
    const documented = operations().map(({ method, path }) => `${method} ${path}`);
    expect(served.length).toBeGreaterThan(30);
    expect({ undocumented: served.filter((r) => !documented.includes(r)) }).toEqual({ undocumented: [] });
    expect({ notServed: documented.filter((r) => !served.includes(r)) }).toEqual({ notServed: [] });
    // The protocol endpoints left out are served (the list names nothing stale) and are not in the document.
    expect(routes).toEqual(expect.arrayContaining(Object.keys(PROTOCOL_ENDPOINTS)));
    expect(documented.filter((r) => r in PROTOCOL_ENDPOINTS)).toEqual([]);
    // The documentation's routes are there too (so the filter above hides nothing else).
    expect((e2e.routes ?? []).filter((r) => DOCUMENTATION.test(r.path)).map((r) => r.path)).toEqual(expect.arrayContaining(['/openapi.json', '/docs']));
  });

  it('each with its success and error answers, path values and security', () => {
    for (const { method, path, op } of operations()) {
      const where = `${method} ${path}`;
      const statuses = Object.keys(op.responses);
      const success = statuses.filter((s) => s.startsWith('2'));
      expect({ where, success: success.length }).toEqual({ where, success: 1 });
      const body = op.responses[success[0]].content;
      if (success[0] !== '204') expect({ where, typed: body !== undefined && Object.values(body).every((c) => c.schema !== undefined) }).toEqual({ where, typed: true });
      expect({ where, errors: statuses.filter((s) => ['400', '421'].includes(s)) }).toEqual({ where, errors: ['400', '421'] });
      expect(statuses).not.toContain('default');
      for (const name of [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])) {
        expect({ where, name, declared: op.parameters?.some((p) => p.in === 'path' && p.name === name && p.required) }).toEqual({ where, name, declared: true });
      }
      expect(statuses.includes('404')).toBe(path.includes('{'));
      if (path.startsWith('/v1/') && !(path === '/v1/session' && method !== 'GET')) {
        expect({ where, security: op.security }).toEqual({ where, security: [{ apiKey: [] }, { consoleSession: [] }] });
        expect({ where, errors: ['401', '429'].every((s) => statuses.includes(s)) }).toEqual({ where, errors: true });
      } else if (path !== '/metrics') {
        expect({ where, security: op.security }).toEqual({ where, security: [] });
      }
      if (method !== 'GET') expect({ where, errors: ['413', '415'].every((s) => statuses.includes(s)) }).toEqual({ where, errors: true });
    }
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.consoleSession).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'triad_session' });
    expect(doc.paths['/metrics'].get.security).toEqual([{}, { metricsKey: [] }]);
    // Role-guarded routes say so; the conflicts are each route's own.
    expect(Object.keys(doc.paths['/v1/decisions'].get.responses)).toContain('403');
    expect(Object.keys(doc.paths['/v1/runs'].get.responses)).not.toContain('403');
    expect(Object.keys(doc.paths['/v1/reviews/{id}/approve'].post.responses)).toContain('409');
    expect(Object.keys(doc.paths['/v1/runs/{id}'].get.responses)).not.toContain('409');
    expect(doc.paths['/health'].get.responses['503'].content?.['application/json'].schema).toEqual({ $ref: '#/components/schemas/HealthDegraded' });
  });

  it('with the query parameters each route accepts, typed, and bodies required only where a field is', () => {
    const query = (path: string, method: string) => Object.fromEntries((doc.paths[path][method].parameters ?? []).filter((p) => p.in === 'query').map((p) => [p.name, p.schema]));
    expect(query('/v1/runs', 'get')).toEqual({ status: expect.objectContaining({ enum: expect.arrayContaining(['awaiting_review']) }), limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } });
    expect(query('/v1/runs/{id}/wait', 'post')).toEqual({ timeoutMs: { type: 'integer', minimum: 0, maximum: 600_000, default: 30_000 } });
    expect(doc.paths['/v1/runs/{id}/events'].get.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'Last-Event-ID', in: 'header' })]));
    expect(Object.keys(doc.paths['/v1/runs/{id}/events'].get.responses['200'].content ?? {}).sort()).toEqual(['application/json', 'text/event-stream']);
    expect(doc.paths['/v1/runs'].post.requestBody?.required).toBe(true);
    expect(doc.paths['/v1/runs/{id}/cancel'].post.requestBody?.required).toBe(false);
    // No Authorization header parameter: that is the security scheme's.
    expect(doc.paths['/metrics'].get.parameters ?? []).toEqual([]);
  });
});

describe('request schemas and the viewer', () => {
  it("the request bodies' schemas are the DTOs' validation rules", () => {
    const launch = doc.components.schemas.LaunchRunDto as { required: string[]; properties: Record<string, Schema> };
    expect(launch.required).toEqual(expect.arrayContaining(['goal', 'acceptanceCriteria']));
    expect(launch.properties.acceptanceCriteria).toMatchObject({ type: 'array', minItems: 1, maxItems: 100 });
    expect(launch.properties.maxIterations).toMatchObject({ type: 'integer', minimum: 1, maximum: 50 });
    const listDecisions = doc.paths['/v1/decisions'].get.parameters ?? [];
    expect(listDecisions.map((p) => p.name)).toEqual(expect.arrayContaining(['runId', 'decider', 'outcome', 'from', 'to', 'format']));
    expect(listDecisions.every((p) => p.in === 'query' && !p.required)).toBe(true);
    // Query parameters of the event streams, whose handlers also take the raw request and response.
    for (const path of ['/v1/runs/{id}/events', '/v1/projects/{id}/events']) {
      expect(doc.paths[path].get.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'fromRevision', in: 'query', required: false })]));
    }
    expect(doc.paths['/v1/runs/{id}/wait'].post.parameters?.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(['timeoutMs']);
  });

  it('/docs is Swagger UI with its assets served here (no CDN)', async () => {
    const page = await e2e.request('GET', '/docs', { as: null });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThanOrEqual(3);
    for (const asset of assets) {
      expect(asset).not.toMatch(/^(https?:)?\/\//);
      const url = new URL(asset, `${e2e.url}/docs`);
      const res = await fetch(url);
      expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
      await res.arrayBuffer();
    }
  });
});

describe('the document is valid and says what the app answers', () => {
  it('validates as OpenAPI 3.0 with every $ref resolved', async () => {
    expect(doc.openapi).toMatch(/^3\.0\./);
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
  });

  it('real answers match their declared schemas, with no field the document does not list', async () => {
    const check = answerChecker(doc);
    const call = async (as: RequestOptions['as'], method: string, path: string, body?: unknown, expected?: number, headers?: Record<string, string>) => {
      const res = await e2e.request(method, path, { as, body, headers });
      if (expected !== undefined) expect({ path, status: res.status, text: res.text }).toEqual({ path, status: expected, text: res.text });
      check(method, path, res.status, res.headers.get('content-type') ?? '', res.body);
      return res.body as Record<string, unknown>;
    };

    await call(null, 'GET', '/health');
    await call('operator', 'GET', '/v1/session', undefined, 200);
    expect(await call(null, 'GET', '/v1/session', undefined, 200)).toEqual({ signedIn: false });
    // The agent card in both of its shapes.
    expect(await call(null, 'GET', '/.well-known/agent-card.json', undefined, 200)).toMatchObject({ protocolVersion: '0.3.0', url: `${e2e.url}/a2a` });
    expect(await call(null, 'GET', '/.well-known/agent-card.json', undefined, 200, { 'a2a-version': '1.0' })).toMatchObject({ supportedInterfaces: expect.any(Array) });
    const { runId } = (await call('operator', 'POST', '/v1/runs', { goal: 'Write a greeting', acceptanceCriteria: ['file hello.txt contains "Hello"'] }, 202)) as { runId: string };
    await waitForRun<{ status: string }, KeyName>(e2e, runId, (r) => r.status === 'awaiting_review', 30_000);
    await call('operator', 'POST', `/v1/runs/${runId}/wait?timeoutMs=1000`, undefined, 200);
    const run = await call('operator', 'GET', `/v1/runs/${runId}`, undefined, 200);
    // The check bites: a field the document does not list, or one of the wrong type, fails it.
    expect(() => check('GET', `/v1/runs/${runId}`, 200, 'application/json', { ...run, undocumented: true })).toThrow();
    expect(() => check('GET', `/v1/runs/${runId}`, 200, 'application/json', { ...run, usage: { ...(run.usage as object), turns: 'one' } })).toThrow();
    await call('operator', 'GET', '/v1/runs?limit=5', undefined, 200);
    await call('operator', 'GET', `/v1/runs/${runId}/events?fromRevision=0`, undefined, 200);
    await call('operator', 'GET', `/v1/runs/${runId}/workspace`, undefined, 200);
    expect(await call('operator', 'GET', `/v1/runs/${runId}/workspace?diff=previous`, undefined, 200)).toMatchObject({ diff: { against: 'previous' } });
    await call('operator', 'GET', `/v1/runs/${runId}/context`, undefined, 200);
    const { reviews } = (await call('reviewer', 'GET', '/v1/reviews', undefined, 200)) as { reviews: Array<{ reviewId: string; runId: string }> };
    const review = reviews.find((r) => r.runId === runId)!;
    await call('reviewer', 'GET', `/v1/reviews/${review.reviewId}/statement?outcome=approved&reason=fine`, undefined, 200);
    expect(await call('reviewer', 'GET', `/v1/reviews/${review.reviewId}`, undefined, 200)).toMatchObject({ state: 'open', caller: { mayDecide: true }, iterations: [{ iteration: 1, diff: { previous: { against: 'previous' } } }] });
    await call('reviewer', 'POST', `/v1/reviews/${review.reviewId}/approve`, { reason: 'looks right' }, 200);
    expect(await call('operator', 'GET', `/v1/reviews/${review.reviewId}`, undefined, 200)).toMatchObject({ state: 'decided', caller: { mayDecide: false } });
    await call('reviewer', 'POST', `/v1/reviews/${review.reviewId}/approve`, { reason: 'again' }, 409);
    await call('reviewer', 'GET', '/v1/approvals', undefined, 200);
    await call('auditor', 'GET', '/v1/decisions', undefined, 200);
    await call('auditor', 'GET', '/v1/decisions/head', undefined, 200);
    await call('auditor', 'GET', '/v1/decisions/keys', undefined, 200);
    await call('auditor', 'GET', '/v1/decisions/verify', undefined, 200);
    await call('operator', 'POST', `/v1/runs/${runId}/cancel`, {}, 409);
    const { projectId } = (await call('operator', 'POST', '/v1/projects', { goal: 'One file', tasks: [{ key: 'a', goal: 'Write a.txt', acceptanceCriteria: ['file a.txt exists'] }] }, 202)) as { projectId: string };
    await call('operator', 'GET', `/v1/projects/${projectId}`, undefined, 200);
    await call('operator', 'GET', '/v1/projects', undefined, 200);
    await call('operator', 'POST', `/v1/projects/${projectId}/cancel`, {}, 200);
    // Webhooks, added last so that nothing is delivered to the address that nothing listens on.
    const hook = (await call(ADMIN, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['run.ended'], allowPrivate: true }, 201)) as { id: string };
    await call(ADMIN, 'GET', '/v1/webhooks', undefined, 200);
    await call(ADMIN, 'GET', `/v1/webhooks/${hook.id}/deliveries?limit=5`, undefined, 200);
    await call(ADMIN, 'DELETE', `/v1/webhooks/${hook.id}`, undefined, 204);
    await call(ADMIN, 'GET', `/v1/webhooks/${hook.id}/deliveries`, undefined, 404);
    await call('operator', 'GET', '/v1/webhooks', undefined, 403);
    // Errors, each as declared for its route.
    await call('operator', 'GET', '/v1/runs/run_unknown', undefined, 404);
    await call(null, 'GET', '/v1/runs', undefined, 401);
    await call('operator', 'GET', '/v1/decisions', undefined, 403);
    await call('operator', 'POST', '/v1/runs', { goal: '' }, 400);
    await call('operator', 'GET', '/v1/runs?limit=0', undefined, 400);
  });
});

/**
 * Checks an answer against the document: its status must be declared for the operation, and its
 * JSON body valid against that status's schema, every object closed to fields the document does
 * not list (where it does not say the object is open).
 */
function answerChecker(document: OpenApi): (method: string, path: string, status: number, contentType: string, body: unknown) => void {
  const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema({ $id: 'doc', components: { schemas: closed(document.components.schemas) } });
  const routes = Object.entries(document.paths).map(([template, item]) => ({ pattern: new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`), item }));
  const compiled = new Map<string, ValidateFunction>();
  return (method, path, status, contentType, body) => {
    const pathname = path.split('?')[0];
    const op = routes.find((r) => r.pattern.test(pathname))?.item[method.toLowerCase()];
    const where = `${method} ${path} → ${status}`;
    expect({ where, documented: op !== undefined }).toEqual({ where, documented: true });
    const response = op!.responses[String(status)];
    expect({ where, declared: response !== undefined }).toEqual({ where, declared: true });
    if (!contentType.startsWith('application/json')) return;
    const schema = response.content?.['application/json']?.schema;
    expect({ where, schema: schema !== undefined }).toEqual({ where, schema: true });
    const key = JSON.stringify(schema);
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajv.compile(rebased(closed(schema!) as Schema));
      compiled.set(key, validate);
    }
    const valid = validate(body);
    expect({ where, errors: valid ? [] : validate.errors, body: valid ? undefined : body }).toEqual({ where, errors: [], body: undefined });
  };
}

/** The schema with every object that lists its fields closed to others (unless it says it is open). */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, k === 'properties' || k === 'schemas' ? Object.fromEntries(Object.entries(v as Schema).map(([n, s]) => [n, closed(s)])) : closed(v)]));
  if ('properties' in out && !('additionalProperties' in out)) out.additionalProperties = false;
  return out;
}

/** `#/components/schemas/X` refs pointed at the document registered as `doc`. */
function rebased(schema: Schema): Schema {
  return JSON.parse(JSON.stringify(schema).replace(/"#\/components\/schemas\//g, '"doc#/components/schemas/')) as Schema;
}
