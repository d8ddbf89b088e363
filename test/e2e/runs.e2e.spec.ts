import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import type { RunSummary } from '../../src/team/runs/run-summary';
import { E2E_KEYS, sseReader, startE2eApp, type E2eApp, type RequestOptions, type SseEvent } from '../support/e2e-app';
import { waitForRun } from '../support/app-client';

// The runs API over real HTTP through the real Nest app: SQLite store, offline model, API keys.

jest.setTimeout(20_000);

let e2e: E2eApp;

beforeAll(async () => {
  e2e = await startE2eApp();
});
afterAll(async () => {
  await e2e?.close();
});

interface Launched {
  runId: string;
  acceptedAt: string;
}
interface RunList {
  runs: RunSummary[];
}
interface EventPage {
  runId: string;
  events: RecordedEvent[];
}
interface WaitResult {
  status: 'ok' | 'error' | 'timeout' | 'waiting';
  runStatus: string;
  startedAt?: string;
  endedAt?: string | null;
}
interface ErrorBody {
  statusCode: number;
  error: string;
  message: string | string[];
}

const CRITERIA = ['file hello.txt contains "Hello"'];
const launchBody = (extra: Record<string, unknown> = {}) => ({ goal: 'Write a greeting', acceptanceCriteria: CRITERIA, ...extra });

async function launch(extra: Record<string, unknown> = {}): Promise<string> {
  const res = await e2e.request<Launched>('POST', '/v1/runs', { body: launchBody(extra) });
  expect(res.status).toBe(202);
  return res.body.runId;
}

const runUntil = (runId: string, check: (run: RunSummary) => boolean) => waitForRun(e2e, runId, check, 45_000, { detail: () => e2e.stderr });

async function headPosition(): Promise<number> {
  const res = await e2e.request<{ headPosition: number }>('GET', '/health', { as: null });
  expect(res.status).toBe(200);
  return res.body.headPosition;
}

/**
 * Makes the store's head stand still: cancels runs waiting at the human gate, then waits until
 * every run has ended and no driver is active.
 */
async function settle(): Promise<void> {
  const deadline = Date.now() + 10_000;
  const ended = new Set(['completed', 'failed', 'blocked', 'cancelled']);
  for (;;) {
    const runs = (await e2e.request<RunList>('GET', '/v1/runs')).body.runs;
    for (const r of runs.filter((r) => r.status === 'awaiting_review')) await e2e.request('POST', `/v1/runs/${r.runId}/cancel`);
    const metrics = await e2e.request('GET', '/metrics', { as: null });
    const active = /triad_active_drivers (\d+)/.exec(metrics.text)?.[1];
    if (active === '0' && runs.every((r) => ended.has(r.status))) return;
    if (Date.now() > deadline) throw new Error('runs did not settle');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function expectErrorBody(body: unknown, statusCode: number, error: string): void {
  expect(body).toEqual({ statusCode, error, message: expect.anything() });
  const { message } = body as ErrorBody;
  expect(typeof message === 'string' || Array.isArray(message)).toBe(true);
}

describe('launch, read and wait', () => {
  let completedRun: string;

  it('POST /v1/runs answers 202 {runId, acceptedAt}: the launch is recorded, the run is driven afterwards', async () => {
    const res = await e2e.request<Launched>('POST', '/v1/runs', { body: launchBody({ reviewPolicy: { humanGate: false } }) });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ runId: expect.stringMatching(/^run_/), acceptedAt: expect.any(String) });
    expect(Number.isNaN(Date.parse(res.body.acceptedAt))).toBe(false);
    completedRun = res.body.runId;
  });

  it('POST /v1/runs/:id/wait: a run without the human gate completes → status ok', async () => {
    const res = await e2e.request<WaitResult>('POST', `/v1/runs/${completedRun}/wait?timeoutMs=15000`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', runStatus: 'completed', startedAt: expect.any(String), endedAt: expect.any(String) });
  });

  it('GET /v1/runs/:id shows status, iteration, usage and termination reason', async () => {
    const res = await e2e.request<RunSummary>('GET', `/v1/runs/${completedRun}`, { as: 'auditor' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      runId: completedRun,
      goal: 'Write a greeting',
      acceptanceCriteria: CRITERIA,
      status: 'completed',
      terminationReason: 'COMPLETED',
      iteration: 1,
      launchedBy: 'user:ops',
      provider: 'offline',
    });
    expect(res.body.usage.turns).toBeGreaterThan(0);
    expect(res.body.pendingReview).toBeUndefined();
  });

  it('GET /v1/runs filters by status', async () => {
    const gated = await launch();
    await runUntil(gated, (r) => r.status === 'awaiting_review');
    const completed = await e2e.request<RunList>('GET', '/v1/runs?status=completed', { as: 'reviewer' });
    expect(completed.status).toBe(200);
    const ids = completed.body.runs.map((r) => r.runId);
    expect(ids).toContain(completedRun);
    expect(ids).not.toContain(gated);
    expect(completed.body.runs.every((r) => r.status === 'completed')).toBe(true);

    const awaiting = await e2e.request<RunList>('GET', '/v1/runs?status=awaiting_review');
    expect(awaiting.body.runs.map((r) => r.runId)).toEqual(expect.arrayContaining([gated]));
    expect(awaiting.body.runs.map((r) => r.runId)).not.toContain(completedRun);

    const all = await e2e.request<RunList>('GET', '/v1/runs');
    expect(all.body.runs.map((r) => r.runId)).toEqual(expect.arrayContaining([gated, completedRun]));

    const bad = await e2e.request('GET', '/v1/runs?status=finished');
    expect(bad.status).toBe(400);
    expectErrorBody(bad.body, 400, 'Bad Request');
  });

  it('POST /v1/runs/:id/wait: a run at the human gate answers status waiting at once, not at its timeout', async () => {
    const runId = await launch();
    const run = await runUntil(runId, (r) => r.status === 'awaiting_review');
    expect(run.pendingReview).toMatchObject({ reviewId: expect.any(String), iteration: 1 });
    // A timeout far beyond the test's: only an answer at once can pass.
    const res = await e2e.request<WaitResult>('POST', `/v1/runs/${runId}/wait?timeoutMs=600000`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'waiting', runStatus: 'awaiting_review', startedAt: run.startedAt, endedAt: null });

    // Launched and waited for at once: the answer comes when the run reaches the gate.
    const next = await launch();
    const waited = await e2e.request<WaitResult>('POST', `/v1/runs/${next}/wait?timeoutMs=600000`);
    expect(waited.body).toMatchObject({ status: 'waiting', runStatus: 'awaiting_review', endedAt: null });

    const bad = await e2e.request('POST', `/v1/runs/${runId}/wait?timeoutMs=soon`);
    expect(bad.status).toBe(400);
  });
});

describe('events: JSON and SSE', () => {
  let runId: string;
  let stored: RecordedEvent[];

  beforeAll(async () => {
    runId = await launch();
    await runUntil(runId, (r) => r.status === 'awaiting_review');
  });

  it('GET /v1/runs/:id/events returns the stored events in revision order, from ?fromRevision', async () => {
    const res = await e2e.request<EventPage>('GET', `/v1/runs/${runId}/events`);
    expect(res.status).toBe(200);
    expect(res.body.runId).toBe(runId);
    stored = res.body.events;
    expect(stored.length).toBeGreaterThan(8);
    expect(stored.map((e) => e.revision)).toEqual(stored.map((_, i) => i));
    expect(stored[0].type).toBe('RunLaunched');
    expect(stored[stored.length - 1].type).toBe('ReviewOpened');
    expect(stored[0]).toMatchObject({ streamId: `run-${runId}`, metadata: { runId } });

    const from = await e2e.request<EventPage>('GET', `/v1/runs/${runId}/events?fromRevision=3`);
    expect(from.body.events.map((e) => e.revision)).toEqual(stored.slice(3).map((e) => e.revision));
    expect((await e2e.request('GET', `/v1/runs/${runId}/events?fromRevision=-1`)).status).toBe(400);
  });

  it('SSE: catch-up then live; Last-Event-ID resumes after it with no duplicates; the stream closes after RunEnded', async () => {
    const head = stored[stored.length - 1].revision;
    const idsSeen: number[] = [];
    const collect = (e: SseEvent | undefined): SseEvent => {
      expect(e).toBeDefined();
      if (e!.id !== undefined) {
        const data = JSON.parse(e!.data);
        expect(Number(e!.id)).toBe(data.revision);
        expect(e!.event).toBe(data.type);
        idsSeen.push(data.revision);
      }
      return e!;
    };

    // First connection: read up to revision 4, then drop it.
    const first = await e2e.fetch('GET', `/v1/runs/${runId}/events`, { headers: { accept: 'text/event-stream' } });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/text\/event-stream/);
    const one = sseReader(first);
    while (idsSeen.length === 0 || idsSeen[idsSeen.length - 1] < 4) collect(await one.next());
    await one.cancel();

    // Reconnect with Last-Event-ID: 4 → catch-up from 5 to the head...
    const second = await e2e.fetch('GET', `/v1/runs/${runId}/events`, { headers: { accept: 'text/event-stream', 'last-event-id': '4' } });
    expect(second.status).toBe(200);
    const two = sseReader(second);
    while (idsSeen[idsSeen.length - 1] < head) collect(await two.next());
    expect(idsSeen).toEqual(stored.map((e) => e.revision));

    // ...then live: cancelling the run appends RunEnded, which arrives on the open stream.
    const cancel = await e2e.request('POST', `/v1/runs/${runId}/cancel`, { body: { reason: 'e2e' } });
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ runId, status: 'cancelled' });
    let live: SseEvent;
    do live = collect(await two.next());
    while (live.event !== 'RunEnded');
    expect(Number(live.id)).toBeGreaterThan(head);
    expect(JSON.parse(live.data).data).toMatchObject({ status: 'cancelled', reason: 'CANCELLED' });
    // The server ends the stream after RunEnded.
    let rest: SseEvent | undefined;
    do rest = await two.next(3000);
    while (rest !== undefined && rest.id === undefined);
    expect(rest).toBeUndefined();

    // Over both connections: every stored event exactly once, in order.
    const all = (await e2e.request<EventPage>('GET', `/v1/runs/${runId}/events`)).body.events;
    expect(all[all.length - 1].type).toBe('RunEnded');
    expect(idsSeen).toEqual(all.map((e) => e.revision));
    expect(idsSeen).toEqual(idsSeen.map((_, i) => i));
    stored = all;

    // A second cancel is a conflict.
    const again = await e2e.request('POST', `/v1/runs/${runId}/cancel`);
    expect(again.status).toBe(409);
    expectErrorBody(again.body, 409, 'Conflict');
  });

  it('SSE on an ended run: Last-Event-ID resumes at N+1 and the stream closes by itself', async () => {
    const last = stored.length - 1;
    const res = await e2e.fetch('GET', `/v1/runs/${runId}/events`, { as: 'auditor', headers: { accept: 'text/event-stream', 'last-event-id': String(last - 2) } });
    const reader = sseReader(res);
    const got: number[] = [];
    for (let e = await reader.next(); e !== undefined; e = await reader.next()) if (e.id !== undefined) got.push(Number(e.id));
    expect(got).toEqual([last - 1, last]);
  });

  it('SSE resumed at or past the end of an ended run closes at once, sending nothing', async () => {
    const last = stored.length - 1;
    const resumes: RequestOptions[] = [
      // What an auto-reconnecting EventSource sends after the last event.
      { headers: { accept: 'text/event-stream', 'last-event-id': String(last) } },
      { headers: { accept: 'text/event-stream', 'last-event-id': String(last + 50) } },
    ];
    for (const options of resumes) {
      const reader = sseReader(await e2e.fetch('GET', `/v1/runs/${runId}/events`, options));
      // Comment frames (heartbeats) are skipped by the reader: the first thing seen is the end.
      expect(await reader.next(10_000)).toBeUndefined();
    }
    for (const from of [last + 1, last + 7]) {
      const reader = sseReader(await e2e.fetch('GET', `/v1/runs/${runId}/events?fromRevision=${from}`, { headers: { accept: 'text/event-stream' } }));
      expect(await reader.next(10_000)).toBeUndefined();
    }
  });

  it('SSE resumed at the end of a run waiting for a human stays open: the decision and the end arrive on it', async () => {
    const waiting = await launch();
    const run = await runUntil(waiting, (r) => r.status === 'awaiting_review');
    const page = await e2e.request<EventPage>('GET', `/v1/runs/${waiting}/events`);
    const last = page.body.events[page.body.events.length - 1].revision;
    const reader = sseReader(await e2e.fetch('GET', `/v1/runs/${waiting}/events`, { headers: { accept: 'text/event-stream', 'last-event-id': String(last) } }));
    const approved = await e2e.request('POST', `/v1/reviews/${run.pendingReview!.reviewId}/approve`, { as: 'reviewer', body: { reason: 'looks right' } });
    expect(approved.status).toBe(200);
    const types: string[] = [];
    for (let e = await reader.next(10_000); e !== undefined; e = await reader.next(10_000)) if (e.id !== undefined) types.push(e.event);
    expect(types).toEqual(['ReviewDecided', 'RunEnded']);
  });

  it('SSE resumed past the head of a run waiting for a human sends nothing before its id, and still closes when the run ends', async () => {
    const waiting = await launch();
    const run = await runUntil(waiting, (r) => r.status === 'awaiting_review');
    const reader = sseReader(await e2e.fetch('GET', `/v1/runs/${waiting}/events`, { headers: { accept: 'text/event-stream', 'last-event-id': '100000' } }));
    const approved = await e2e.request('POST', `/v1/reviews/${run.pendingReview!.reviewId}/approve`, { as: 'reviewer', body: { reason: 'looks right' } });
    expect(approved.status).toBe(200);
    // Comment frames (heartbeats) are skipped by the reader: the first thing seen is the end of the response.
    expect(await reader.next(10_000)).toBeUndefined();
  });
});

describe('idempotency keys', () => {
  it('the same body twice gives the same run; a different body with the same key is a 409', async () => {
    const body = launchBody({ idempotencyKey: 'e2e-key-1', reviewPolicy: { humanGate: false } });
    const a = await e2e.request<Launched>('POST', '/v1/runs', { body });
    const b = await e2e.request<Launched>('POST', '/v1/runs', { body });
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(b.body.runId).toBe(a.body.runId);
    expect(b.body.acceptedAt).toBe(a.body.acceptedAt);

    await runUntil(a.body.runId, (r) => r.status === 'completed');
    const events = await e2e.request<EventPage>('GET', `/v1/runs/${a.body.runId}/events`);
    expect(events.body.events.filter((e) => e.type === 'RunLaunched')).toHaveLength(1);

    await settle();
    const before = await headPosition();
    const c = await e2e.request('POST', '/v1/runs', { body: { ...body, goal: 'Something else' } });
    expect(c.status).toBe(409);
    expectErrorBody(c.body, 409, 'Conflict');
    expect(await headPosition()).toBe(before);
    // A retry after the run has ended still names the same run, and starts nothing.
    const later = await e2e.request<Launched>('POST', '/v1/runs', { body });
    expect(later.status).toBe(202);
    expect(later.body.runId).toBe(a.body.runId);
    await settle();
    expect(await headPosition()).toBe(before);
  });
});

describe('bad input is a 400 and writes nothing', () => {
  beforeAll(() => settle());

  const cases: Array<[string, unknown]> = [
    ['missing goal', { acceptanceCriteria: CRITERIA }],
    ['blank goal', { goal: '   ', acceptanceCriteria: CRITERIA }],
    ['empty criteria', { goal: 'g', acceptanceCriteria: [] }],
    ['criteria not strings', { goal: 'g', acceptanceCriteria: [1, 2] }],
    ['criteria not an array', { goal: 'g', acceptanceCriteria: 'file a exists' }],
    ['a blank criterion', { goal: 'g', acceptanceCriteria: ['ok', '   '] }],
    ['unknown field', { ...launchBody(), colour: 'red' }],
    ['unknown nested field', { ...launchBody(), team: { executor: { temperature: 2 } } }],
    ['maxIterations 0', { ...launchBody(), maxIterations: 0 }],
    ['maxIterations 1.5', { ...launchBody(), maxIterations: 1.5 }],
    ['maxIterations "3"', { ...launchBody(), maxIterations: '3' }],
    ['timeoutMs negative', { ...launchBody(), timeoutMs: -5 }],
    ['budget not an object', { ...launchBody(), budget: 5 }],
    ['reviewer given write_file', { ...launchBody(), team: { reviewer: { tools: ['write_file'] } } }],
    ['an unknown tool', { ...launchBody(), team: { executor: { tools: ['rm_rf'] } } }],
    ['a review timeout policy without afterMs', { ...launchBody(), reviewPolicy: { timeout: { policy: 'auto_approve' } } }],
    ['a body that is an array', [launchBody()]],
    ['a bad idempotency key', { ...launchBody(), idempotencyKey: 'has spaces' }],
  ];

  it.each(cases)('%s', async (_name, body) => {
    const before = await headPosition();
    const res = await e2e.request('POST', '/v1/runs', { body });
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 400, 'Bad Request');
    expect(await headPosition()).toBe(before);
  });

  it('malformed JSON', async () => {
    const before = await headPosition();
    const res = await e2e.request('POST', '/v1/runs', { rawBody: '{"goal": "x", "acceptanceCriteria": [' });
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 400, 'Bad Request');
    expect(await headPosition()).toBe(before);
  });
});

describe('unknown runs are 404 on every route', () => {
  const id = 'run_doesnotexist';
  // Every row has all three values: jest hands a missing one to the test as a `done` callback.
  const routes: Array<[string, string, Record<string, string>]> = [
    ['GET', `/v1/runs/${id}`, {}],
    ['GET', `/v1/runs/${id}/events`, {}],
    ['GET', `/v1/runs/${id}/events`, { accept: 'text/event-stream' }],
    ['POST', `/v1/runs/${id}/wait?timeoutMs=100`, {}],
    ['POST', `/v1/runs/${id}/cancel`, {}],
  ];

  it.each(routes)('%s %s %j', async (method, path, headers) => {
    const before = await headPosition();
    const res = await e2e.request(method, path, { headers });
    expect(res.status).toBe(404);
    expectErrorBody(res.body, 404, 'Not Found');
    expect(await headPosition()).toBe(before);
  });
});

describe('authentication and roles', () => {
  it('no key → 401, on reads and on launches', async () => {
    for (const [method, path] of [
      ['GET', '/v1/runs'],
      ['POST', '/v1/runs'],
    ]) {
      const res = await e2e.request(method, path, { as: null, body: method === 'POST' ? launchBody() : undefined });
      expect(res.status).toBe(401);
      expectErrorBody(res.body, 401, 'Unauthorized');
    }
  });

  it('a wrong or malformed key → 401, and the secret is not echoed', async () => {
    const wrong = await e2e.request('GET', '/v1/runs', { as: { raw: 'Bearer not-a-valid-key-123' } });
    expect(wrong.status).toBe(401);
    expectErrorBody(wrong.body, 401, 'Unauthorized');
    expect(wrong.text).not.toContain('not-a-valid-key-123');
    const basic = await e2e.request('GET', '/v1/runs', { as: { raw: `Basic ${E2E_KEYS.operator}` } });
    expect(basic.status).toBe(401);
  });

  it('an auditor or a reviewer launching → 403 and nothing written; an auditor may read', async () => {
    await settle();
    const before = await headPosition();
    for (const as of ['auditor', 'reviewer'] as const) {
      const res = await e2e.request('POST', '/v1/runs', { as, body: launchBody() });
      expect(res.status).toBe(403);
      expectErrorBody(res.body, 403, 'Forbidden');
    }
    expect(await headPosition()).toBe(before);
    expect((await e2e.request('GET', '/v1/runs', { as: 'auditor' })).status).toBe(200);
  });

  it('a reviewer cannot cancel a run', async () => {
    const runId = await launch();
    await runUntil(runId, (r) => r.status === 'awaiting_review');
    const res = await e2e.request('POST', `/v1/runs/${runId}/cancel`, { as: 'reviewer' });
    expect(res.status).toBe(403);
    expect((await e2e.request<RunSummary>('GET', `/v1/runs/${runId}`)).body.status).toBe('awaiting_review');
  });

  it('/health and /metrics need no key', async () => {
    const health = await e2e.request('GET', '/health', { as: null });
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', store: 'sqlite', model: 'offline', offlineModel: true, headPosition: expect.any(Number) });
    const metrics = await e2e.request('GET', '/metrics', { as: null });
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/text\/plain/);
    expect(metrics.text).toMatch(/^triad_runs\{status="completed"\} \d+$/m);
    expect(metrics.text).toMatch(/^triad_event_store_head_position \d+$/m);
  });
});
