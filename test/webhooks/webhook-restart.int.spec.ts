import { Webhook } from 'standardwebhooks';
import { dropSchema, freshSchema, PG_URL } from '../support/pg';
import { tempDir } from '../support/temp-dir';
import { startServe, stopServe, waitFor, type Serve } from '../faults/serve-support';
import { signatureHeaders, startWebhookReceiver, type WebhookReceiver } from './webhook-receiver';

// At least once from the event log, across a receiver that is down and a triad that is killed:
// real `triad serve` processes on one SQLite data directory, then on one PostgreSQL schema. The receiver answers 503 while runs
// reach their reviews, then goes off the network; triad is killed (SIGKILL) meanwhile and two
// processes start in its place. The receiver, back, gets everything it missed exactly once per
// webhook-id (one process delivers per endpoint), and a later restart sends nothing again.

const KEYS = { op: 'restart-op-0123456789', rev: 'restart-rev-0123456789', adm: 'restart-adm-0123456789' };
const RUNS = 3;

describe.each(['sqlite', 'postgres'] as const)('on %s', (store) => {
let dir: ReturnType<typeof tempDir>;
let receiver: WebhookReceiver;
const serves: Serve[] = [];
const schema = freshSchema('triad_webhooks');

const env = () => ({
  TRIAD_DATA_DIR: dir.path,
  TRIAD_STORE: store,
  ...(store === 'postgres' ? { TRIAD_PG_URL: PG_URL, TRIAD_PG_SCHEMA: schema } : {}),
  TRIAD_API_KEYS: `op:operator:${KEYS.op},rev:reviewer:${KEYS.rev},adm:admin:${KEYS.adm}`,
  // Quick retries and leases, so that the test waits on conditions of seconds, not minutes.
  TRIAD_WEBHOOK_RETRY_BASE_MS: '50',
  TRIAD_WEBHOOK_RETRY_MAX_MS: '250',
  TRIAD_LEASE_TTL_MS: '1000',
  TRIAD_RECOVERY_INTERVAL_MS: '500',
});

async function call<T>(serve: Serve, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${serve.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

async function start(): Promise<Serve> {
  const serve = await startServe(env());
  serves.push(serve);
  return serve;
}

beforeAll(async () => {
  dir = tempDir('triad-webhook-restart-');
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  for (const s of serves) await stopServe(s);
  await receiver.close();
  dir.remove();
  if (store === 'postgres') await dropSchema(schema);
});

it('delivers what a down receiver missed across a kill and restart, exactly once per webhook-id, and nothing again after', async () => {
  receiver.down = true;
  const first = await start();
  const added = await call<{ id: string; secret: string }>(first, KEYS.adm, 'POST', '/v1/webhooks', { url: receiver.url, events: ['review.opened', 'run.ended'], allowPrivate: true });
  expect(added.status).toBe(201);
  const { secret, id: endpointId } = added.body;

  const runIds: string[] = [];
  for (let i = 0; i < RUNS; i++) {
    const res = await call<{ runId: string }>(first, KEYS.op, 'POST', '/v1/runs', { goal: `Greeting ${i}`, acceptanceCriteria: [`file g${i}.txt exists`] });
    expect(res.status).toBe(202);
    runIds.push(res.body.runId);
  }
  // Every run at its review, the first review.opened refused (503) more than once: retried, in order.
  await waitFor(
    'the runs at their reviews and the first delivery retried',
    async () => {
      const runs = await Promise.all(runIds.map((id) => call<{ status: string }>(first, KEYS.op, 'GET', `/v1/runs/${id}`)));
      return runs.every((r) => r.body.status === 'awaiting_review') && receiver.received.filter((r) => r.status === 503).length >= 3;
    },
    30_000,
    50,
    () => first.stderr.slice(-2000),
  );
  const refusedIds = new Set(receiver.received.map((r) => r.id));
  expect(refusedIds.size).toBe(1);
  const log = await call<{ deliveries: Array<{ status: string; attempts: number; responseCode: number; nextRetryAt?: string }> }>(first, KEYS.adm, 'GET', `/v1/webhooks/${endpointId}/deliveries`);
  expect(log.body.deliveries[0]).toMatchObject({ status: 'retrying', responseCode: 503, nextRetryAt: expect.any(String) });

  // The receiver goes off the network, triad is killed, and two processes take its place.
  await receiver.close();
  await stopServe(first);
  const [a, b] = await Promise.all([start(), start()]);
  await waitFor('an attempt to fail against the closed receiver', async () => {
    const res = await call<{ deliveries: Array<{ error?: string }> }>(a, KEYS.adm, 'GET', `/v1/webhooks/${endpointId}/deliveries`);
    return res.body.deliveries[0]?.error?.startsWith('ECONNREFUSED');
  }, 20_000);
  receiver.down = false;
  await receiver.open();

  await waitFor('every review.opened acknowledged', () => receiver.acked().size === RUNS, 30_000, 50, () => a.stderr.slice(-1000) + b.stderr.slice(-1000));
  const acked = receiver.acked();
  for (const [id, deliveries] of acked) {
    expect([id, deliveries.length]).toEqual([id, 1]);
    const message = new Webhook(secret).verify(deliveries[0].body, signatureHeaders(deliveries[0])) as { type: string; data: { runId: string } };
    expect(message.type).toBe('review.opened');
  }
  // In the order of the log (the runs reached their reviews in whatever order they were driven),
  // the first one refused before the kill among them, under the same webhook-id.
  const openedAt = new Map<string, number>();
  for (const id of runIds) {
    const page = await call<{ events: Array<{ type: string; position: number }> }>(a, KEYS.op, 'GET', `/v1/runs/${id}/events`);
    openedAt.set(id, page.body.events.find((e) => e.type === 'ReviewOpened')!.position);
  }
  const order = [...acked.values()].map((d) => (JSON.parse(d[0].body) as { data: { runId: string } }).data.runId);
  expect(order).toEqual([...runIds].sort((x, y) => openedAt.get(x)! - openedAt.get(y)!));
  expect(acked.has([...refusedIds][0])).toBe(true);

  // A review decided now ends its run: its run.ended is acknowledged after everything before it.
  const run = await call<{ pendingReview: { reviewId: string } }>(a, KEYS.op, 'GET', `/v1/runs/${runIds[0]}`);
  expect((await call(a, KEYS.rev, 'POST', `/v1/reviews/${run.body.pendingReview.reviewId}/approve`, { reason: 'fine' })).status).toBe(200);
  await waitFor('run.ended acknowledged', () => receiver.received.some((r) => r.status === 204 && r.body.includes('"run.ended"')), 30_000);
  // Recorded as delivered (the receiver's answer and the record are two moments: a kill in
  // between would send it again, which at least once allows and receivers deduplicate).
  await waitFor('run.ended recorded as delivered', async () => {
    const res = await call<{ deliveries: Array<{ type: string; status: string }> }>(a, KEYS.adm, 'GET', `/v1/webhooks/${endpointId}/deliveries`);
    return res.body.deliveries.some((d) => d.type === 'run.ended' && d.status === 'delivered');
  }, 10_000);

  // Killed and restarted once more: nothing acknowledged is sent again. A last review decided
  // after the restart is delivered, so the endpoint's worker has been over everything before it.
  await Promise.all([stopServe(a), stopServe(b)]);
  const last = await start();
  const other = await call<{ pendingReview: { reviewId: string } }>(last, KEYS.op, 'GET', `/v1/runs/${runIds[1]}`);
  expect((await call(last, KEYS.rev, 'POST', `/v1/reviews/${other.body.pendingReview.reviewId}/reject`, { reason: 'no', rework: false })).status).toBe(200);
  await waitFor('the second run.ended acknowledged', () => receiver.received.filter((r) => r.status === 204 && r.body.includes('"run.ended"')).length === 2, 30_000, 50, () => last.stderr.slice(-2000));
  expect([...receiver.acked().values()].map((d) => d.length)).toEqual([1, 1, 1, 1, 1]);
  const ended = receiver.received.filter((r) => r.body.includes('"run.ended"')).map((r) => JSON.parse(r.body) as { data: { outcome: string } });
  expect(ended.map((m) => m.data.outcome)).toEqual(['COMPLETED', 'REJECTED']);
});
});
