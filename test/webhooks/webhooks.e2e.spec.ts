import { createServer } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { waitForRun } from '../support/app-client';
import { E2E_API_KEYS_ENV, startE2eApp, type E2eApp } from '../support/e2e-app';
import { waitFor } from '../support/wait-for';
import { signatureHeaders, startWebhookReceiver, type WebhookReceiver } from './webhook-receiver';

// Webhooks through the real app over HTTP: an admin adds an endpoint, a run reaches its review
// and ends, and the receiver gets review.opened and run.ended signed so that the standardwebhooks
// verifier accepts them; the secret is shown once and nowhere after; private addresses are
// refused without allowPrivate; other roles are refused; bad input writes nothing.

const ADMIN = { secret: 'adm-secret-0123456789' };
const PUBLIC_URL = 'https://triad.example.com';
let app: E2eApp;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  app = await startE2eApp({ TRIAD_API_KEYS: `${E2E_API_KEYS_ENV},adm:admin:${ADMIN.secret}`, TRIAD_PUBLIC_URL: PUBLIC_URL,
    TRIAD_LEASE_TTL_MS: '400',
    // A receiver that never answers is given up on within seconds here (a day by default).
    TRIAD_WEBHOOK_RETRY_BASE_MS: '50',
    TRIAD_WEBHOOK_RETRY_MAX_MS: '200',
    TRIAD_WEBHOOK_GIVE_UP_MS: '1000',
  });
});
afterAll(async () => {
  await app?.close();
  await receiver?.close();
});

const listed = async () => (await app.request<{ webhooks: Array<Record<string, unknown>> }>('GET', '/v1/webhooks', { as: ADMIN })).body.webhooks;

describe('delivery', () => {
  let secret: string;
  let endpointId: string;
  let runId: string;

  it('an admin adds an endpoint: 201 with its id and whsec_ secret, shown only then', async () => {
    const res = await app.request<{ id: string; secret: string; secretHint: string; events: string[] }>('POST', '/v1/webhooks', {
      as: ADMIN,
      body: { url: receiver.url, events: ['review.opened', 'run.ended'], allowPrivate: true },
    });
    expect(res.status).toBe(201);
    expect(res.body.id).toMatch(/^wh_[0-9a-f]{16}$/);
    expect(res.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    ({ secret, id: endpointId } = res.body);
    const list = await listed();
    expect(list).toEqual([expect.objectContaining({ id: endpointId, url: receiver.url, events: ['review.opened', 'run.ended'], allowPrivate: true, secretHint: `…${secret.slice(-4)}` })]);
    expect(JSON.stringify(list)).not.toContain(secret);
  });

  it('a review opened at the gate reaches the receiver as review.opened, with a signature the Standard Webhooks verifier accepts', async () => {
    const launch = await app.request<{ runId: string }>('POST', '/v1/runs', { as: 'operator', body: { goal: 'Write a greeting', acceptanceCriteria: ['file hello.txt contains "Hello"'] } });
    expect(launch.status).toBe(202);
    runId = launch.body.runId;
    const got = await waitFor('review.opened at the receiver', () => receiver.received.find((r) => r.body.includes('review.opened')), 20_000, 50, () => app.stderr);
    const message = new Webhook(secret).verify(got.body, signatureHeaders(got)) as { type: string; timestamp: string; data: Record<string, unknown> };
    expect(message).toMatchObject({ type: 'review.opened', data: { runId, goal: 'Write a greeting', reviewId: expect.stringMatching(/^rev_/), url: `${PUBLIC_URL}/#/reviews` } });
    expect(Date.parse(message.timestamp)).not.toBeNaN();
    expect(got.headers['content-type']).toBe('application/json');
  });

  it('the run ended by a reviewer reaches it as run.ended with the outcome; the delivery log shows both, acknowledged at the first attempt', async () => {
    const run = await waitForRun<{ pendingReview?: { reviewId: string } }, 'operator'>(app, runId, (r) => r.pendingReview !== undefined, 10_000);
    const approve = await app.request('POST', `/v1/reviews/${run.pendingReview!.reviewId}/approve`, { as: 'reviewer', body: { reason: 'fine' } });
    expect(approve.status).toBe(200);
    const got = await waitFor('run.ended at the receiver', () => receiver.received.find((r) => r.body.includes('run.ended')), 20_000, 50, () => app.stderr);
    expect(new Webhook(secret).verify(got.body, signatureHeaders(got))).toMatchObject({ type: 'run.ended', data: { runId, outcome: 'COMPLETED', status: 'completed', url: `${PUBLIC_URL}/#/runs/${runId}` } });
    const log = await waitFor('both deliveries settled', async () => {
      const res = await app.request<{ deliveries: Array<{ type: string; status: string; attempts: number; responseCode: number; webhookId: string }> }>('GET', `/v1/webhooks/${endpointId}/deliveries`, { as: ADMIN });
      return res.body.deliveries.length === 2 && res.body.deliveries.every((d) => d.status === 'delivered') && res.body.deliveries;
    }, 5_000);
    expect(log.map((d) => [d.type, d.attempts, d.responseCode])).toEqual([
      ['run.ended', 1, 204],
      ['review.opened', 1, 204],
    ]);
    expect(log.map((d) => d.webhookId).sort()).toEqual([...receiver.acked().keys()].sort());
    expect((await listed())[0]).toMatchObject({ lastDelivery: { type: 'run.ended', status: 'delivered', attempts: 1, responseCode: 204 } });
  });

  it('the secret is in no event, log line or other answer', async () => {
    const events = await app.request('GET', `/v1/runs/${runId}/events`, { as: 'auditor' });
    for (const text of [events.text, app.stderr, (await app.request('GET', '/v1/webhooks', { as: ADMIN })).text, (await app.request('GET', `/v1/webhooks/${endpointId}/deliveries`, { as: ADMIN })).text]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(secret.slice('whsec_'.length));
    }
  });

  it('/metrics counts deliveries by outcome', async () => {
    const metrics = await app.request('GET', '/metrics', { as: null });
    expect(metrics.text).toMatch(/triad_webhook_deliveries_total\{outcome="delivered"\} [2-9]/);
    expect(metrics.text).toContain('triad_webhook_deliveries_total{outcome="failed"} 0');
  });

  it('a removed endpoint is gone with its log: 204, then 404', async () => {
    expect((await app.request('DELETE', `/v1/webhooks/${endpointId}`, { as: ADMIN })).status).toBe(204);
    expect((await app.request('DELETE', `/v1/webhooks/${endpointId}`, { as: ADMIN })).status).toBe(404);
    expect((await app.request('GET', `/v1/webhooks/${endpointId}/deliveries`, { as: ADMIN })).status).toBe(404);
    expect(await listed()).toEqual([]);
  });
});

describe('giving up', () => {
  it('a receiver that never answers: retried with backoff, then failed in the delivery log and /metrics, and the endpoint moves on', async () => {
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const added = await app.request<{ id: string; position: number }>('POST', '/v1/webhooks', { as: ADMIN, body: { url: `http://127.0.0.1:${closed}/hook`, events: ['run.ended'], allowPrivate: true } });
    expect(added.status).toBe(201);
    const launch = await app.request<{ runId: string }>('POST', '/v1/runs', { as: 'operator', body: { goal: 'Cancelled soon', acceptanceCriteria: ['file a.txt exists'] } });
    expect((await app.request('POST', `/v1/runs/${launch.body.runId}/cancel`, { as: 'operator', body: { reason: 'not needed' } })).status).toBe(200);
    const failed = await waitFor('the delivery given up', async () => {
      const res = await app.request<{ deliveries: Array<{ status: string; attempts: number; error?: string; type: string }> }>('GET', `/v1/webhooks/${added.body.id}/deliveries`, { as: ADMIN });
      return res.body.deliveries.find((d) => d.status === 'failed');
    }, 15_000, 50, () => app.stderr);
    expect(failed).toMatchObject({ type: 'run.ended', error: 'ECONNREFUSED' });
    expect(failed.attempts).toBeGreaterThan(2);
    const metrics = await app.request('GET', '/metrics', { as: null });
    expect(metrics.text).toContain('triad_webhook_deliveries_total{outcome="failed"} 1');
    expect(metrics.text).toMatch(/triad_webhook_deliveries_total\{outcome="retried"\} [1-9]/);
    // Past the event given up on: the next one would be sent.
    const [endpoint] = (await listed()).filter((w) => w.id === added.body.id);
    expect(endpoint).toMatchObject({ lastDelivery: { status: 'failed' } });
    expect(endpoint.position as number).toBeGreaterThan(added.body.position);
    expect((await app.request('DELETE', `/v1/webhooks/${added.body.id}`, { as: ADMIN })).status).toBe(204);
  });
});

describe('attacks and bad input write nothing', () => {
  const port = () => new URL(receiver.url).port;

  it.each([
    ['loopback', () => `http://127.0.0.1:${port()}/hook`],
    ['IPv6 loopback', () => `http://[::1]:${port()}/hook`],
    ['IPv4-mapped loopback', () => `http://[::ffff:127.0.0.1]:${port()}/hook`],
    ['loopback as one decimal number', () => `http://2130706433:${port()}/hook`],
    ['a private network', () => 'http://10.1.2.3/hook'],
    ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data/'],
    ['a unique-local IPv6 address', () => 'http://[fd00::1]/hook'],
    ['a name resolving to loopback', () => `http://localhost:${port()}/hook`],
  ])('%s is refused without allowPrivate (400)', async (_what, url) => {
    const res = await app.request<{ message: string }>('POST', '/v1/webhooks', { as: ADMIN, body: { url: url(), events: ['run.ended'] } });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/private, loopback or link-local/);
    expect(await listed()).toEqual([]);
  });

  it.each([
    ['no events', { url: 'https://hooks.example.com/x' }],
    ['an unknown event', { url: 'https://hooks.example.com/x', events: ['run.started'] }],
    ['events as a string', { url: 'https://hooks.example.com/x', events: 'run.ended' }],
    ['another scheme', { url: 'ftp://hooks.example.com/x', events: ['run.ended'] }],
    ['credentials in the URL', { url: 'https://u:p@hooks.example.com/x', events: ['run.ended'] }],
    ['not a URL', { url: 'hooks', events: ['run.ended'] }],
    ['an unknown field', { url: 'https://hooks.example.com/x', events: ['run.ended'], secret: 'mine' }],
    ['allowPrivate as a string', { url: 'https://hooks.example.com/x', events: ['run.ended'], allowPrivate: 'yes' }],
  ])('%s is 400', async (_what, body) => {
    const res = await app.request('POST', '/v1/webhooks', { as: ADMIN, body });
    expect(res.status).toBe(400);
    expect(await listed()).toEqual([]);
  });

  it('a body that is not JSON is 415; a limit out of range is 400', async () => {
    const res = await app.request('POST', '/v1/webhooks', { as: ADMIN, rawBody: 'url=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(415);
    expect((await app.request('GET', '/v1/webhooks/wh_0000000000000000/deliveries?limit=0', { as: ADMIN })).status).toBe(400);
    expect(await listed()).toEqual([]);
  });

  it('other roles are refused every route (403), and no key is 401', async () => {
    const routes: Array<[string, string, unknown?]> = [
      ['POST', '/v1/webhooks', { url: receiver.url, events: ['run.ended'], allowPrivate: true }],
      ['GET', '/v1/webhooks'],
      ['DELETE', '/v1/webhooks/wh_0000000000000000'],
      ['GET', '/v1/webhooks/wh_0000000000000000/deliveries'],
    ];
    for (const [method, path, body] of routes) {
      for (const as of ['operator', 'reviewer', 'auditor'] as const) expect([method, path, as, (await app.request(method, path, { as, body })).status]).toEqual([method, path, as, 403]);
      expect((await app.request(method, path, { as: null, body })).status).toBe(401);
    }
    expect(await listed()).toEqual([]);
  });
});
