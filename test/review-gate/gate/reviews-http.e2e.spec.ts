import { join } from 'node:path';
import type { IterationStartedData, ModelCallStartedData } from '../../../src/team/domain/run-events';
import { tempDir } from '../../support/temp-dir';
import {
  awaitingReview,
  decisionsIn,
  getRun,
  launch,
  pendingReviewOf,
  runEvents,
  startServer,
  waitForRun,
  type GateServer,
  type RequestOptions,
} from './gate-support';

// The review gate over real HTTP: the real app on SQLite with the offline model. ann launches
// (operator+reviewer), bob reviews, olga only operates, aud audits.

jest.setTimeout(90_000);

describe('review gate over HTTP (SQLite, offline model)', () => {
  const dir = tempDir('triad-gate-http-');
  let server: GateServer;

  beforeAll(async () => {
    server = await startServer({ TRIAD_DATA_DIR: join(dir.path, 'data') });
  });

  afterAll(async () => {
    await server?.close();
    dir.remove();
  });

  const decide = (reviewId: string, verb: 'approve' | 'reject', options: RequestOptions) =>
    server.request('POST', `/v1/reviews/${encodeURIComponent(reviewId)}/${verb}`, options);

  async function atGate(): Promise<{ runId: string; reviewId: string }> {
    const runId = await launch(server);
    const run = await waitForRun(server, runId, awaitingReview);
    return { runId, reviewId: pendingReviewOf(run).reviewId };
  }

  it('a run reaches the gate, is listed for reviewers, refused to the launcher and non-reviewers, approved once by bob', async () => {
    const { runId, reviewId } = await atGate();
    expect(reviewId).toBe(`rev_${runId}_1`);

    // Listed for a reviewer; the list is the reviewer's route only.
    const listed = await server.request('GET', '/v1/reviews', { as: 'bob' });
    expect(listed.status).toBe(200);
    expect(listed.body.reviews).toContainEqual(
      expect.objectContaining({ reviewId, runId, iteration: 1, launchedBy: 'user:ann', executor: `agent:executor:${runId}`, acceptanceCriteria: ['file a.txt contains "A"'] }),
    );
    expect((await server.request('GET', '/v1/reviews', { as: 'olga' })).status).toBe(403);
    expect((await server.request('GET', '/v1/reviews', { as: 'aud' })).status).toBe(403);
    expect((await server.request('GET', '/v1/reviews', { as: null })).status).toBe(401);

    const before = (await runEvents(server, runId)).length;

    // The launcher: 403 with a generic message, nothing written.
    for (const verb of ['approve', 'reject'] as const) {
      const res = await decide(reviewId, verb, { as: 'ann', body: { reason: 'my own work is fine' } });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ statusCode: 403, error: 'Forbidden', message: expect.any(String) });
      for (const id of [runId, reviewId, 'rev_', 'run_', 'ann']) expect(res.body.message).not.toContain(id);
    }
    // Without the reviewer role: 403, nothing written.
    for (const as of ['olga', 'aud'] as const) {
      const res = await decide(reviewId, 'approve', { as, body: { reason: 'ok' } });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ statusCode: 403, error: 'Forbidden' });
      expect(res.body.message).not.toContain(runId);
    }
    expect((await decide(reviewId, 'approve', { as: null, body: { reason: 'ok' } })).status).toBe(401);
    expect((await runEvents(server, runId)).length).toBe(before);
    expect((await getRun(server, runId)).status).toBe('awaiting_review');

    // bob approves: 200 and the run is completed.
    const ok = await decide(reviewId, 'approve', { as: 'bob', body: { reason: 'a.txt holds the A' } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ reviewId, outcome: 'approved', runStatus: 'completed', decisionId: expect.any(String) });
    const run = await getRun(server, runId);
    expect(run).toMatchObject({ status: 'completed', terminationReason: 'COMPLETED' });
    expect(run.pendingReview).toBeUndefined();

    // The decision and the run's end are one append, with the decision's snapshot.
    const events = await runEvents(server, runId);
    expect(events.slice(-2).map((e) => e.type)).toEqual(['ReviewDecided', 'RunEnded']);
    expect(events[events.length - 2].revision + 1).toBe(events[events.length - 1].revision);
    expect(events[events.length - 2].metadata.actor).toBe('user:bob');
    expect(decisionsIn(events)).toEqual([
      expect.objectContaining({
        reviewId,
        iteration: 1,
        outcome: 'approved',
        decider: 'user:bob',
        deciderKind: 'human',
        reason: 'a.txt holds the A',
        executor: `agent:executor:${runId}`,
        acceptanceCriteria: ['file a.txt contains "A"'],
        artifactHash: expect.stringMatching(/^sha256:/),
        charterVersion: expect.any(String),
      }),
    ]);

    // Decided: a second decision is a conflict, and the review is no longer listed.
    const again = await decide(reviewId, 'approve', { as: 'bob', body: { reason: 'again' } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ statusCode: 409, error: 'Conflict' });
    expect(again.body.message).toMatch(new RegExp(`^review ${reviewId} was already decided: approved by user:bob at \\d{4}-`));
    expect((await decide(reviewId, 'reject', { as: 'bob', body: { reason: 'changed my mind' } })).status).toBe(409);
    expect((await runEvents(server, runId)).length).toBe(events.length);
    expect((await server.request('GET', '/v1/reviews', { as: 'bob' })).body.reviews?.map((r) => r.reviewId)).not.toContain(reviewId);
  });

  it('reject with rework: back to the executor with the feedback, and at the gate again in iteration 2', async () => {
    const { runId, reviewId } = await atGate();
    const res = await decide(reviewId, 'reject', { as: 'bob', body: { reason: 'Also mention B in a.txt', rework: true } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ outcome: 'rejected', runStatus: 'executing' });

    const run = await waitForRun(server, runId, (r) => awaitingReview(r) && r.iteration === 2);
    expect(pendingReviewOf(run).reviewId).toBe(`rev_${runId}_2`);

    const events = await runEvents(server, runId);
    const started = events.find((e) => e.type === 'IterationStarted' && (e.data as IterationStartedData).reason === 'human_rejected');
    expect(started?.data).toMatchObject({ iteration: 2, feedback: 'Also mention B in a.txt' });
    // The executor's first model call of iteration 2 carries the human's reason.
    const afterRework = events.slice(events.indexOf(started!));
    const executorCall = afterRework.find((e) => e.type === 'ModelCallStarted' && (e.data as ModelCallStartedData).role === 'executor');
    expect(JSON.stringify(executorCall?.data)).toContain('Human reviewer feedback:\\nAlso mention B in a.txt');
    // The old review is no longer pending; the new one is.
    const late = await decide(reviewId, 'approve', { as: 'bob', body: { reason: 'late' } });
    expect(late.status).toBe(409);
    expect(late.body.message).toContain('was already decided: rejected by user:bob');

    // Reject without rework: the run ends REJECTED at once.
    const end = await decide(`rev_${runId}_2`, 'reject', { as: 'bob', body: { reason: 'not what we need', rework: false } });
    expect(end.status).toBe(200);
    expect(end.body).toMatchObject({ outcome: 'rejected', runStatus: 'failed' });
    expect(await getRun(server, runId)).toMatchObject({ status: 'failed', terminationReason: 'REJECTED' });
    expect(decisionsIn(await runEvents(server, runId)).map((d) => [d.iteration, d.outcome, d.rework])).toEqual([
      [1, 'rejected', true],
      [2, 'rejected', false],
    ]);
  });

  it("a forked run's review is decided like any other (its history starts in the parent's stream)", async () => {
    const { runId: parentId } = await atGate();
    const fork = await server.request('POST', `/v1/runs/${parentId}/fork`, { as: 'olga', body: { turn: 1 } });
    expect(fork.status).toBe(202);
    const forkId = fork.body.runId!;
    const forked = await waitForRun(server, forkId, awaitingReview);
    expect(pendingReviewOf(forked).reviewId).toBe(`rev_${forkId}_1`);
    // The fork's launcher is whoever forked it.
    expect((await decide(`rev_${forkId}_1`, 'approve', { as: 'ann', body: { reason: 'not mine' } })).status).toBe(200);
    expect(await getRun(server, forkId)).toMatchObject({ status: 'completed', terminationReason: 'COMPLETED' });
    expect(decisionsIn(await runEvents(server, forkId))).toEqual([expect.objectContaining({ reviewId: `rev_${forkId}_1`, decider: 'user:ann', outcome: 'approved' })]);
    // The parent still waits for its own decision.
    expect((await getRun(server, parentId)).status).toBe('awaiting_review');
  });

  it('a review of a cancelled run is 409 saying so, and writes nothing', async () => {
    const { runId, reviewId } = await atGate();
    expect((await server.request('POST', `/v1/runs/${runId}/cancel`, { as: 'olga', body: { reason: 'not needed' } })).status).toBeLessThan(300);
    const before = (await runEvents(server, runId)).length;
    for (const verb of ['approve', 'reject'] as const) {
      const res = await decide(reviewId, verb, { as: 'bob', body: { reason: 'ok' } });
      expect(res.status).toBe(409);
      expect(res.body.message).toBe(`review ${reviewId} can no longer be decided: the run was cancelled`);
    }
    expect((await runEvents(server, runId)).length).toBe(before);
  });

  it('malformed bodies are 400 and write nothing', async () => {
    const { runId, reviewId } = await atGate();
    const before = (await runEvents(server, runId)).length;
    const bad: Array<['approve' | 'reject', { body?: unknown; rawBody?: string }]> = [
      ['approve', { body: {} }],
      ['approve', { body: { reason: '' } }],
      ['approve', { body: { reason: '   \n\t ' } }],
      ['approve', { body: { reason: 42 } }],
      ['approve', { body: { reason: ['ok'] } }],
      ['approve', { body: { reason: null } }],
      ['approve', { body: { reason: 'ok', extra: true } }],
      ['approve', { body: { reason: 'ok', rework: false } }],
      ['approve', { body: { reason: 'x'.repeat(4001) } }],
      ['approve', { rawBody: '{"reason": "ok"' }],
      ['approve', { rawBody: '"ok"' }],
      ['reject', { body: { reason: 'no', rework: 'yes' } }],
      ['reject', { body: { reason: 'no', rework: 1 } }],
      ['reject', { body: { rework: true } }],
      ['reject', { body: { reason: '  ' } }],
      ['reject', { body: { reason: 'no', decider: 'user:someone' } }],
    ];
    for (const [verb, options] of bad) {
      const res = await decide(reviewId, verb, { as: 'bob', ...options });
      expect({ verb, options, status: res.status }).toEqual({ verb, options, status: 400 });
      expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    }
    expect((await runEvents(server, runId)).length).toBe(before);
    expect((await getRun(server, runId)).status).toBe('awaiting_review');
  });

  it('unknown and malformed review ids are 404 and write nothing', async () => {
    const { runId } = await atGate();
    const before = (await runEvents(server, runId)).length;
    // `_0` and `_01` parse, at or below the open review's iteration, but no such review was ever opened.
    const ids = [`rev_${runId}_0`, `rev_${runId}_01`, `rev_${runId}_7`, 'rev_run_doesnotexist_1', 'rev_', 'nonsense', `rev_${runId}`, `${runId}_1`, 'rev_a b_1', 'rev_x_1_', `rev_${'x'.repeat(300)}_1`, "rev_x_1'--"];
    for (const id of ids) {
      for (const verb of ['approve', 'reject'] as const) {
        const res = await decide(id, verb, { as: 'bob', body: { reason: 'ok' } });
        expect({ id, verb, status: res.status }).toEqual({ id, verb, status: 404 });
        expect(res.body).toMatchObject({ statusCode: 404, error: 'Not Found' });
      }
    }
    expect((await runEvents(server, runId)).length).toBe(before);
  });
});
