import { join } from 'node:path';
import { httpErrorStep, startFakeMessagesApi, toolUseStep, type FakeMessagesApi } from '../../support/fake-messages-api';
import { tempDir } from '../../support/temp-dir';
import { appEnv, startApp, waitForRun, type AppServer, type Loose } from './approvals-app';

// Model retries through the real app: the Anthropic SDK against the loopback Messages API, which
// answers 529 (overloaded) and then 200. The process is configured with a short schedule
// (TRIAD_MODEL_RETRY_DELAYS_MS); one launch shrinks it further with its own `retry` policy.

const API_KEY = 'sk-ant-test-retries-0123456789';
const MODEL = 'claude-sonnet-4-6';
const TEAM = { architect: { model: MODEL }, executor: { model: MODEL }, reviewer: { model: MODEL } };

let api: FakeMessagesApi;
let server: AppServer;
let dir: { path: string; remove(): void };

beforeAll(async () => {
  api = await startFakeMessagesApi({ apiKey: API_KEY });
  dir = tempDir('triad-retries-');
  server = await startApp(appEnv(join(dir.path, 'data'), api.url, API_KEY, { TRIAD_MODEL_RETRY_DELAYS_MS: '60,60' }));
}, 60_000);
afterAll(async () => {
  await server?.close();
  await api?.stop();
  dir?.remove();
});
afterEach(() => api.reset());

const overloaded = () => httpErrorStep(529, { message: 'Overloaded' });
const approvedRun = () => [
  toolUseStep('submit_plan', { plan: '1. write the report' }),
  toolUseStep('submit_work', { summary: 'wrote it', files: [] }),
  toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'fine' }),
];

async function launch(extra: Record<string, unknown> = {}): Promise<string> {
  const res = await server.request('POST', '/v1/runs', { as: 'ann', body: { goal: 'Write a report', acceptanceCriteria: ['a report'], team: TEAM, ...extra } });
  expect(res.status).toBe(202);
  return res.body.runId as string;
}

async function eventsOf(runId: string): Promise<Array<{ type: string; data: Loose }>> {
  const res = await server.request('GET', `/v1/runs/${runId}/events`, { as: 'aud' });
  expect(res.status).toBe(200);
  return res.body.events;
}

describe('model retries over HTTP', () => {
  it('a launch with its own schedule: 529, then 200 — one ModelCallFailed with the wait, and the run goes on to the review gate', async () => {
    api.enqueue(overloaded(), ...approvedRun());
    const runId = await launch({ retry: { delaysMs: [25] } });
    await waitForRun(server, runId, (r) => r.status === 'awaiting_review', 60_000);

    const events = await eventsOf(runId);
    expect(events.find((e) => e.type === 'RunLaunched')!.data.retry).toEqual({ delaysMs: [25], maxDelayMs: 300_000 });
    const failed = events.filter((e) => e.type === 'ModelCallFailed').map((e) => e.data);
    expect(failed).toEqual([expect.objectContaining({ role: 'architect', attempt: 1, kind: 'overloaded', status: 529 })]);
    expect(failed[0].retryInMs).toBeGreaterThanOrEqual(25);
    expect(failed[0].retryInMs).toBeLessThanOrEqual(28);
    // The same request went out again, and nothing more.
    expect(api.requests).toHaveLength(4);
    expect(api.requests[1].body!.messages).toEqual(api.requests[0].body!.messages);
  });

  it('a launch without a schedule records the configured one; two 529s in a row are retried on it', async () => {
    api.enqueue(overloaded(), overloaded(), ...approvedRun());
    const runId = await launch();
    await waitForRun(server, runId, (r) => r.status === 'awaiting_review', 60_000);

    const events = await eventsOf(runId);
    expect(events.find((e) => e.type === 'RunLaunched')!.data.retry).toEqual({ delaysMs: [60, 60], maxDelayMs: 300_000 });
    const failed = events.filter((e) => e.type === 'ModelCallFailed').map((e) => e.data);
    expect(failed.map((f) => [f.attempt, f.kind, f.status])).toEqual([
      [1, 'overloaded', 529],
      [2, 'overloaded', 529],
    ]);
  });

  it('a 529 more than the schedule allows ends the run failed, ERROR', async () => {
    api.enqueue(overloaded(), overloaded());
    const runId = await launch({ retry: { delaysMs: [10] } });
    const run = await waitForRun(server, runId, (r) => r.status === 'failed', 60_000);
    expect(run.terminationReason).toBe('ERROR');
    expect((await eventsOf(runId)).filter((e) => e.type === 'ModelCallFailed')).toHaveLength(2);
  });

  it('a retry policy that cannot be honoured is refused with 400, and no run is written', async () => {
    const before = (await server.request('GET', '/v1/runs', { as: 'aud' })).body;
    for (const retry of [{ delaysMs: [-1] }, { delaysMs: ['10'] }, { delaysMs: [10], maxAttempts: 3 }, { delaysMs: [10_000], maxDelayMs: 5_000 }]) {
      const res = await server.request('POST', '/v1/runs', { as: 'ann', body: { goal: 'x', acceptanceCriteria: ['y'], retry } });
      expect({ retry, status: res.status }).toEqual({ retry, status: 400 });
      expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    }
    expect((await server.request('GET', '/v1/runs', { as: 'aud' })).body).toEqual(before);
  });
});
