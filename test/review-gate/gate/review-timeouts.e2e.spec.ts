import { join } from 'node:path';
import type { RunLaunchedData } from '../../../src/team/domain/run-events';
import type { RunSummary } from '../../../src/team/runs/run-summary';
import { tempDir } from '../../support/temp-dir';
import {
  awaitingReview,
  decisionsIn,
  freshPgSchema,
  getRun,
  ONE_ITERATION,
  pendingReviewOf,
  runEvents,
  seedLaunch,
  sleep,
  startServer as startGateServer,
  waitForRun as waitForGateRun,
  type GateServer,
  type PgSchema,
} from './gate-support';

// Review timeout policies with durable timers: the due time is recorded in ReviewOpened, every
// process scans for reviews past due (TRIAD_REVIEW_TIMER_MS), and firing is a decision appended at
// the run's expected revision, with the system as decider.
//
// Runs with a timeout policy are launched with the domain's launchRun straight into the server's
// store (its recovery scan drives them): POST /v1/runs refuses them today — the first test below
// pins that bug.

jest.setTimeout(240_000);

// Generous deadlines: on a loaded machine an app start or a run through three agents takes seconds.
const startServer = (env: Record<string, string | undefined>) => startGateServer(env, 90_000);
const waitForRun = (server: GateServer, runId: string, until: (run: RunSummary) => boolean) => waitForGateRun(server, runId, until, 90_000);

/** Polls until the wall clock is past `iso`. */
async function until(iso: string): Promise<void> {
  while (Date.now() <= Date.parse(iso)) await sleep(20);
}

type Policy = 'auto_approve' | 'auto_deny' | 'escalate';
const withTimeout = (policy: Policy, afterMs: number) => ({ ...ONE_ITERATION, reviewPolicy: { timeout: { policy, afterMs } } });

describe('review timeout policies (SQLite)', () => {
  const dir = tempDir('triad-gate-timeouts-');
  const dataDir = join(dir.path, 'data');
  let server: GateServer;
  beforeAll(async () => {
    server = await startServer({ TRIAD_DATA_DIR: dataDir, TRIAD_REVIEW_TIMER_MS: '50' });
  });
  afterAll(async () => {
    await server?.close();
    dir.remove();
  });
  const launch = (_server: GateServer, body: ReturnType<typeof withTimeout>) => seedLaunch({ dataDir }, body);

  it('POST /v1/runs accepts reviewPolicy.timeout and records the policy', async () => {
    const res = await server.request('POST', '/v1/runs', { as: 'ann', body: withTimeout('auto_approve', 60_000) });
    expect({ status: res.status, body: res.body }).toEqual({ status: 202, body: expect.objectContaining({ runId: expect.any(String) }) });
    const events = await runEvents(server, res.body.runId!);
    expect((events[0].data as RunLaunchedData).reviewPolicy.timeout).toEqual({ policy: 'auto_approve', afterMs: 60_000 });
  });

  it('auto_approve: the system approves after the timeout and the run completes', async () => {
    const runId = await launch(server, withTimeout('auto_approve', 200));
    const run = await waitForRun(server, runId, (r) => r.status === 'completed');
    expect(run.terminationReason).toBe('COMPLETED');
    const events = await runEvents(server, runId);
    const opened = events.find((e) => e.type === 'ReviewOpened')!.data as { at: string; timeout: { policy: string; dueAt: string } };
    expect(opened.timeout.policy).toBe('auto_approve');
    // Due afterMs after the review opened (at least: the driver reads its clock again after hashing
    // the workspace, which a loaded machine makes slow, so no upper bound is asserted).
    const dueIn = Date.parse(opened.timeout.dueAt) - Date.parse(opened.at);
    expect(dueIn).toBeGreaterThanOrEqual(200);
    const decisions = decisionsIn(events);
    expect(decisions).toEqual([expect.objectContaining({ outcome: 'approved', decider: 'system', deciderKind: 'system', policy: 'auto_approve' })]);
    expect(Date.parse(decisions[0].at)).toBeGreaterThanOrEqual(Date.parse(opened.timeout.dueAt));
    expect(events.find((e) => e.type === 'ReviewDecided')!.metadata.actor).toBe('system');
  });

  it('auto_deny: the system rejects without rework and the run ends REJECTED', async () => {
    const runId = await launch(server, withTimeout('auto_deny', 200));
    const run = await waitForRun(server, runId, (r) => r.status === 'failed');
    expect(run.terminationReason).toBe('REJECTED');
    expect(decisionsIn(await runEvents(server, runId))).toEqual([
      expect.objectContaining({ outcome: 'rejected', rework: false, decider: 'system', deciderKind: 'system', policy: 'auto_deny' }),
    ]);
  });

  it('escalate: one escalated decision, the run keeps waiting for a human, who can still decide', async () => {
    const runId = await launch(server, withTimeout('escalate', 200));
    const pendingReview = pendingReviewOf(await waitForRun(server, runId, awaitingReview));
    await waitForRun(server, runId, (r) => r.pendingReview?.escalated === true);
    // Many more scans: still exactly one escalation. (A later escalation has fired: the scans went past ours.)
    const later = await launch(server, withTimeout('escalate', 200));
    await waitForRun(server, later, (r) => r.pendingReview?.escalated === true);
    const decisions = decisionsIn(await runEvents(server, runId));
    expect(decisions).toEqual([expect.objectContaining({ outcome: 'escalated', decider: 'system', deciderKind: 'system', policy: 'escalate' })]);
    expect((await getRun(server, runId)).status).toBe('awaiting_review');
    const listed = (await server.request('GET', '/v1/reviews', { as: 'bob' })).body.reviews?.find((r) => r.reviewId === pendingReview.reviewId);
    expect(listed).toMatchObject({ escalated: true, timeout: { policy: 'escalate' } });

    const res = await server.request('POST', `/v1/reviews/${pendingReview.reviewId}/approve`, { as: 'bob', body: { reason: 'seen after escalation' } });
    expect(res.status).toBe(200);
    expect(await getRun(server, runId)).toMatchObject({ status: 'completed' });
    expect(decisionsIn(await runEvents(server, runId)).map((d) => d.outcome)).toEqual(['escalated', 'approved']);
  });

});

describe('a human decision before the timeout (SQLite)', () => {
  const dir = tempDir('triad-gate-human-first-');
  const dataDir = join(dir.path, 'data');
  const servers: GateServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
    dir.remove();
  });

  it('wins; the timer does not fire afterwards', async () => {
    // The human decides in a process that scans no timers, so the decision certainly comes first
    // however slow the machine; then a scanning process starts after the due time.
    const runId = await seedLaunch({ dataDir }, withTimeout('auto_deny', 200));
    const first = await startServer({ TRIAD_DATA_DIR: dataDir, TRIAD_REVIEW_TIMER_MS: '0' });
    servers.push(first);
    const pendingReview = pendingReviewOf(await waitForRun(first, runId, awaitingReview));
    const res = await first.request('POST', `/v1/reviews/${pendingReview.reviewId}/approve`, { as: 'bob', body: { reason: 'in time' } });
    expect(res.status).toBe(200);
    const opened = (await runEvents(first, runId)).find((e) => e.type === 'ReviewOpened')!.data as { timeout: { dueAt: string } };
    await first.close();
    await until(opened.timeout.dueAt);

    // A later review with a timeout fires in the next process: its scans have passed ours, due too.
    const later = await seedLaunch({ dataDir }, withTimeout('auto_approve', 200));
    const second = await startServer({ TRIAD_DATA_DIR: dataDir, TRIAD_REVIEW_TIMER_MS: '50' });
    servers.push(second);
    await waitForRun(second, later, (r) => r.status === 'completed');
    expect(decisionsIn(await runEvents(second, runId))).toEqual([expect.objectContaining({ outcome: 'approved', decider: 'user:bob' })]);
    expect((await getRun(second, runId)).status).toBe('completed');
  });
});

describe('a review timeout that falls due while no process runs (SQLite)', () => {
  const dir = tempDir('triad-gate-durable-');
  const dataDir = join(dir.path, 'data');
  const servers: GateServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
    dir.remove();
  });

  it('fires exactly once at the next start', async () => {
    // The first process scans no timers, so it certainly stops before the timeout is due: what
    // is under test is the next start, not a race with the first process's shutdown.
    const runId = await seedLaunch({ dataDir }, withTimeout('auto_approve', 300));
    const first = await startServer({ TRIAD_DATA_DIR: dataDir, TRIAD_REVIEW_TIMER_MS: '0' });
    servers.push(first);
    await waitForRun(first, runId, awaitingReview);
    const beforeStop = await runEvents(first, runId);
    await first.close();
    const opened = beforeStop.find((e) => e.type === 'ReviewOpened')!.data as { timeout: { dueAt: string } };
    expect(decisionsIn(beforeStop)).toEqual([]);

    // Due while nothing runs.
    await until(opened.timeout.dueAt);

    const second = await startServer({ TRIAD_DATA_DIR: dataDir, TRIAD_REVIEW_TIMER_MS: '50' });
    servers.push(second);
    await waitForRun(second, runId, (r) => r.status === 'completed');
    await sleep(300);
    const events = await runEvents(second, runId);
    expect(decisionsIn(events)).toEqual([expect.objectContaining({ outcome: 'approved', decider: 'system', policy: 'auto_approve' })]);
    expect(events.length).toBe(beforeStop.length + 2);
    await second.close();

    // A third start finds nothing left to fire (it fires a later review's timeout: its scans went past ours).
    const later = await seedLaunch({ dataDir }, withTimeout('auto_approve', 200));
    const third = await startServer({ TRIAD_DATA_DIR: dataDir, TRIAD_REVIEW_TIMER_MS: '50' });
    servers.push(third);
    await waitForRun(third, later, (r) => r.status === 'completed');
    expect(decisionsIn(await runEvents(third, runId))).toHaveLength(1);
  });
});

describe('two processes on one PostgreSQL database racing to fire the same timeouts', () => {
  const dirs = [tempDir('triad-gate-pg-a-'), tempDir('triad-gate-pg-b-')];
  let pg: PgSchema | undefined;
  const servers: GateServer[] = [];
  beforeAll(async () => {
    pg = await freshPgSchema();
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
    await pg?.drop();
    for (const d of dirs) d.remove();
  });

  it('exactly one decision per timeout, whichever process fires it', async () => {
    expect(pg).toBeDefined();
    const env = (i: number) => ({ TRIAD_DATA_DIR: join(dirs[i].path, 'data'), ...pg!.env, TRIAD_REVIEW_TIMER_MS: '10' });
    const [a, b] = await Promise.all([startServer(env(0)), startServer(env(1))]);
    servers.push(a, b);

    const policies: Policy[] = ['auto_approve', 'auto_deny', 'escalate', 'auto_approve', 'escalate', 'auto_deny'];
    const runIds = await Promise.all(policies.map((p) => seedLaunch({ pg: pg! }, withTimeout(p, 3000))));
    const reviews = await Promise.all(runIds.map((id) => waitForRun(b, id, awaitingReview)));
    // Both processes see the pending reviews (on a loaded machine one may already have fallen due
    // and been decided by now: then there is nothing left to list, and the checks below still hold).
    const listedByA = (await a.request('GET', '/v1/reviews', { as: 'bob' })).body.reviews?.map((r) => r.reviewId) ?? [];
    for (let i = 0; i < reviews.length; i++) {
      if (!listedByA.includes(pendingReviewOf(reviews[i]).reviewId)) expect(decisionsIn(await runEvents(a, runIds[i]))).toHaveLength(1);
    }

    for (let i = 0; i < runIds.length; i++) {
      const settled = (r: RunSummary) => (policies[i] === 'escalate' ? r.pendingReview?.escalated === true : r.status === 'completed' || r.status === 'failed');
      await waitForRun(a, runIds[i], settled);
    }
    await sleep(500);
    for (let i = 0; i < runIds.length; i++) {
      const decisions = decisionsIn(await runEvents(a, runIds[i]));
      const expected = { auto_approve: 'approved', auto_deny: 'rejected', escalate: 'escalated' }[policies[i]];
      expect({ run: i, decisions: decisions.map((d) => `${d.decider}:${d.outcome}:${d.policy}`) }).toEqual({ run: i, decisions: [`system:${expected}:${policies[i]}`] });
    }
    // Each firing was logged by exactly one of the two processes.
    for (const r of reviews) {
      const line = `review ${pendingReviewOf(r).reviewId}: timeout policy`;
      expect(a.stdout.split(line).length - 1 + (b.stdout.split(line).length - 1)).toBe(1);
    }
  });
});
