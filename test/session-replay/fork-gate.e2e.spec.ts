import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import { openStorage } from '../../src/storage/storage';
import type { RunSummary } from '../../src/team/runs/run-summary';
import { E2E_API_KEYS_ENV, E2E_KEYS, startE2eApp, type E2eApp } from '../support/e2e-app';
import { runCliInProcess, stopInProcessCli } from '../support/in-process-cli';
import { waitForRun } from '../support/app-client';

// A fork at any turn, the last included, is a run that can go on: the parent's review (or tool
// approval) is not inherited, so the fork reaches the gate again and opens a review of its own.
// Over HTTP and through the CLI, against the real app (SQLite, offline model).

jest.setTimeout(120_000);

let e2e: E2eApp;

beforeAll(async () => {
  e2e = await startE2eApp();
});
afterAll(async () => {
  await stopInProcessCli();
  await e2e?.close();
});

const launchBody = { goal: 'Write the letter A', acceptanceCriteria: ['file a.txt contains "A"'] };

const runUntil = (runId: string, check: (run: RunSummary) => boolean) => waitForRun(e2e, runId, check, 30_000, { detail: () => e2e.stderr });

/** A run at its human gate, and how many model turns it took. */
async function runAtGate(): Promise<{ runId: string; turns: number; reviewId: string }> {
  const launched = await e2e.request<{ runId: string }>('POST', '/v1/runs', { body: launchBody });
  expect(launched.status).toBe(202);
  const runId = launched.body.runId;
  const run = await runUntil(runId, (r) => r.status === 'awaiting_review');
  const events = (await e2e.request<{ events: RecordedEvent[] }>('GET', `/v1/runs/${runId}/events`)).body.events;
  return { runId, turns: events.filter((e) => e.type === 'ModelCallCompleted').length, reviewId: run.pendingReview!.reviewId };
}

async function runCount(): Promise<number> {
  return (await e2e.request<{ runs: RunSummary[] }>('GET', '/v1/runs?limit=1000')).body.runs.length;
}

/** The fork reaches a review of its own, which a reviewer decides: it completes. */
async function expectOwnReviewThatCompletes(forkId: string, parentReviewId: string): Promise<void> {
  const fork = await runUntil(forkId, (r) => r.status === 'awaiting_review' && r.pendingReview !== undefined);
  expect(fork.pendingReview!.reviewId).toBe(`rev_${forkId}_1`);
  expect(fork.pendingReview!.reviewId).not.toBe(parentReviewId);
  const pending = (await e2e.request<{ reviews: Array<{ reviewId: string }> }>('GET', '/v1/reviews', { as: 'reviewer' })).body.reviews.map((r) => r.reviewId);
  expect(pending).toContain(fork.pendingReview!.reviewId);
  const approved = await e2e.request('POST', `/v1/reviews/${fork.pendingReview!.reviewId}/approve`, { as: 'reviewer', body: { reason: 'the fork did it' } });
  expect(approved.status).toBe(200);
  await runUntil(forkId, (r) => r.status === 'completed');
}

describe('fork at the last turn', () => {
  it('over HTTP, of a run waiting at its review: the fork opens and completes a review of its own; the parent still waits on its own', async () => {
    const parent = await runAtGate();
    const res = await e2e.request<{ runId: string; forkedFrom: { turn: number } }>('POST', `/v1/runs/${parent.runId}/fork`, { body: { turn: parent.turns } });
    expect(res.status).toBe(202);
    expect(res.body.forkedFrom.turn).toBe(parent.turns);
    await expectOwnReviewThatCompletes(res.body.runId, parent.reviewId);
    expect((await runUntil(parent.runId, () => true)).pendingReview?.reviewId).toBe(parent.reviewId);
  });

  it('over HTTP, of a run whose review was decided (completed): the fork still goes on to a review of its own', async () => {
    const parent = await runAtGate();
    expect((await e2e.request('POST', `/v1/reviews/${parent.reviewId}/approve`, { as: 'reviewer', body: { reason: 'fine' } })).status).toBe(200);
    await runUntil(parent.runId, (r) => r.status === 'completed');
    const res = await e2e.request<{ runId: string }>('POST', `/v1/runs/${parent.runId}/fork`, { body: { turn: parent.turns } });
    expect(res.status).toBe(202);
    await expectOwnReviewThatCompletes(res.body.runId, parent.reviewId);
  });

  it('with the CLI: `triad fork --turn <last>` drives the fork to a review of its own, exit 0', async () => {
    const parent = await runAtGate();
    const env: NodeJS.ProcessEnv = { ...process.env, TRIAD_DATA_DIR: e2e.dataDir, TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline', TRIAD_USER: 'ops', ANTHROPIC_API_KEY: '' };
    const r = await runCliInProcess(['fork', parent.runId, '--turn', String(parent.turns), '--json'], env);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { runId: string; run: RunSummary };
    expect(out.run).toMatchObject({ runId: out.runId, status: 'awaiting_review', pendingReview: { reviewId: `rev_${out.runId}_1` } });
    await expectOwnReviewThatCompletes(out.runId, parent.reviewId);
  });
});

describe('the CLI and a run another process holds', () => {
  it('`triad review reject` waits while another process holds the run, then the run goes on to a review of its own: exit 0', async () => {
    const parent = await runAtGate();
    // Another process holds the run's lease for a while (a serving process that took it first, or one that died holding it).
    const storage = await openStorage({ store: 'sqlite', dataDir: e2e.dataDir, pgUrl: undefined });
    try {
      expect(await storage.leases.tryAcquire(parent.runId, 'proc-elsewhere', 1_500, Date.now())).toBe(true);
    } finally {
      await storage.close();
    }
    // The reviewer rev decides with the key the app was given.
    const env: NodeJS.ProcessEnv = { ...process.env, TRIAD_DATA_DIR: e2e.dataDir, TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline', ANTHROPIC_API_KEY: '', TRIAD_API_KEYS: E2E_API_KEYS_ENV, TRIAD_API_KEY: E2E_KEYS.reviewer };
    const r = await runCliInProcess(['review', 'reject', parent.reviewId, '--as', 'rev', '--reason', 'Also mention B', '--json'], env);
    expect(r.stderr).toContain(`run ${parent.runId} is driven by another process (proc-elsewhere)`);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { run: RunSummary };
    expect(out.run).toMatchObject({ runId: parent.runId, status: 'awaiting_review', pendingReview: { reviewId: `rev_${parent.runId}_2` } });
  });
});

describe('fork input', () => {
  it('turn must be a JSON integer: true, "3", 1.5 and a missing turn are 400 and fork nothing', async () => {
    const parent = await runAtGate();
    const before = await runCount();
    for (const body of [{ turn: true }, { turn: '3' }, { turn: 1.5 }, { turn: -1 }, {}, { turn: null }]) {
      const res = await e2e.request<{ statusCode: number; message: unknown }>('POST', `/v1/runs/${parent.runId}/fork`, { body });
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body.statusCode).toBe(400);
    }
    expect(await runCount()).toBe(before);
  });
});
