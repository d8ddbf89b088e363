import { join } from 'node:path';
import type { ReviewView, WorkspaceView } from '../../../src/http/api-types';
import { SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import { tempDir } from '../../support/temp-dir';
import { awaitingReview, lastJson, launch, runCli, startServer, waitForRun, type GateServer } from './gate-support';

// One review in one place, over real HTTP and through the real CLI, on a run of three iterations
// with a human rejection in the middle: the offline model meets two criteria per iteration, so with
// four the reviewer agent asks for changes once (iteration 1), approves iteration 2, which bob
// rejects, and approves iteration 3, which waits at the gate. ann launched it (operator+reviewer),
// bob reviews, olga only operates. One server and one run for the file.

jest.setTimeout(120_000);

const CRITERIA = ['file a.txt contains "A"', 'file b.txt contains "B"', 'file c.txt contains "C"', 'file d.txt contains "D"'];
const FEEDBACK = 'Please sign the letters too';
const ESC = '\x1b[';

describe('GET /v1/reviews/:id, triad review show and triad runs workspace', () => {
  const dir = tempDir('triad-review-view-');
  const dataDir = join(dir.path, 'data');
  let server: GateServer;
  let runId: string;
  let reviewId: string;

  beforeAll(async () => {
    server = await startServer({ TRIAD_DATA_DIR: dataDir });
    runId = await launch(server, { goal: 'Write four letters', acceptanceCriteria: CRITERIA, maxIterations: 3 });
    const second = await waitForRun(server, runId, (r) => awaitingReview(r) && r.pendingReview!.iteration === 2, 60_000);
    const rejected = await server.request('POST', `/v1/reviews/${second.pendingReview!.reviewId}/reject`, { as: 'bob', body: { reason: FEEDBACK } });
    expect(rejected.status).toBe(200);
    const third = await waitForRun(server, runId, (r) => awaitingReview(r) && r.pendingReview!.iteration === 3, 60_000);
    reviewId = third.pendingReview!.reviewId;
  });

  afterAll(async () => {
    await server?.close();
    dir.remove();
  });

  const getReview = (id: string, as: 'ann' | 'bob' | 'olga' | 'aud' = 'bob') => server.request<ReviewView>('GET', `/v1/reviews/${encodeURIComponent(id)}`, { as });

  it('answers every iteration: the verdicts and findings, the human decision and feedback, the files and both diffs', async () => {
    const res = await getReview(reviewId);
    expect(res.status).toBe(200);
    const v = res.body;
    expect(v).toMatchObject({
      reviewId,
      runId,
      iteration: 3,
      state: 'open',
      run: { runId, goal: 'Write four letters', launchedBy: 'user:ann', status: 'awaiting_review', maxIterations: 3 },
      acceptanceCriteria: CRITERIA,
      executor: `agent:executor:${runId}`,
      deciders: { roles: ['reviewer', 'admin'], allowLauncherToReview: false },
      caller: { identity: 'user:bob', mayDecide: true },
    });
    expect(v.deciders.excluded).toEqual(expect.arrayContaining([{ identity: 'user:ann', rule: 'launcher' }, { identity: `agent:executor:${runId}`, rule: 'executor' }]));
    expect(v.iterations.map((i) => [i.iteration, i.startedBy.reason, i.verdict?.verdict])).toEqual([
      [1, 'launch', 'REQUEST_CHANGES'],
      [2, 'changes_requested', 'APPROVE'],
      [3, 'human_rejected', 'APPROVE'],
    ]);
    const [first, second, third] = v.iterations;
    // The reviewer agent's findings on the first iteration name the criteria left, and sent it back.
    expect(first.verdict!.findings.join('\n')).toMatch(/c\.txt/);
    expect(second.startedBy).toMatchObject({ reason: 'changes_requested', findings: first.verdict!.findings });
    // Bob's rejection of the second: who, when, why; and the third began with his feedback.
    expect(second.review?.reviewId).toBe(`rev_${runId}_2`);
    expect(second.decisions).toEqual([{ outcome: 'rejected', decider: 'user:bob', deciderKind: 'human', reason: FEEDBACK, rework: true, at: expect.any(String) }]);
    expect(third.startedBy).toEqual({ reason: 'human_rejected', by: 'user:bob', feedback: FEEDBACK, at: second.decisions[0].at });
    expect(third.decisions).toEqual([]);
    // Files: two per iteration, then nothing new; the diffs against the iteration before and the start.
    expect(first.diff.previous).toMatchObject({ against: 'previous', changes: [{ path: 'a.txt', change: 'added' }, { path: 'b.txt', change: 'added' }] });
    expect(second.diff.previous).toMatchObject({ fromIteration: 1, changes: [{ path: 'c.txt', change: 'added' }, { path: 'd.txt', change: 'added' }] });
    expect(second.diff.previous.patch).toContain('--- /dev/null\n+++ b/c.txt\n');
    expect(second.diff.previous.patch).not.toContain('a.txt');
    expect(third.diff.previous).toEqual({ against: 'previous', fromIteration: 2, changes: [], patch: '' });
    expect(third.diff.start!.changes.map((c) => c.path)).toEqual(['a.txt', 'b.txt', 'c.txt', 'd.txt']);
    expect(third.files.map((f) => f.path)).toEqual(['a.txt', 'b.txt', 'c.txt', 'd.txt']);
    expect(third.files[0]).toEqual({ path: 'a.txt', size: expect.any(Number), sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });

  it('tells the launcher and a non-reviewer they may not decide, and why; a decided review says so', async () => {
    const ann = await getReview(reviewId, 'ann');
    expect(ann.status).toBe(200);
    expect(ann.body.caller).toEqual({ identity: 'user:ann', mayDecide: false, reason: 'you launched this run, and its review policy does not let the launcher review it' });
    const olga = await getReview(reviewId, 'olga');
    expect(olga.body.caller).toEqual({ identity: 'user:olga', mayDecide: false, reason: 'deciding a review needs the reviewer role (or admin)' });
    // The launcher really is refused: what the view says is what the gate does.
    expect((await server.request('POST', `/v1/reviews/${reviewId}/approve`, { as: 'ann', body: { reason: 'mine' } })).status).toBe(403);
    const earlier = await getReview(`rev_${runId}_2`);
    expect(earlier.body).toMatchObject({ iteration: 2, state: 'decided', caller: { mayDecide: false, reason: expect.stringContaining('was already decided: rejected by user:bob') } });
    expect(earlier.body.iterations).toHaveLength(2);
  });

  it('404 for a review never opened, 400 for an id that cannot be one, 401 without a key', async () => {
    expect((await getReview(`rev_${runId}_1`)).status).toBe(404);
    expect((await getReview(`rev_run_nosuchrun_1`)).status).toBe(404);
    expect((await getReview('not-a-review')).status).toBe(400);
    expect((await server.request('GET', `/v1/reviews/${reviewId}`, { as: null })).status).toBe(401);
  });

  it('GET /v1/runs/:id/workspace takes ?iteration and ?diff=previous|start', async () => {
    const res = await server.request<WorkspaceView>('GET', `/v1/runs/${runId}/workspace?iteration=2&diff=previous`, { as: 'aud' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ iteration: 2, diff: { against: 'previous', fromIteration: 1, changes: [{ path: 'c.txt' }, { path: 'd.txt' }] } });
    const start = await server.request<WorkspaceView>('GET', `/v1/runs/${runId}/workspace?iteration=2&diff=start`, { as: 'aud' });
    expect(start.body.diff?.changes).toHaveLength(4);
    expect(start.body.diff?.fromIteration).toBeUndefined();
    expect((await server.request('GET', `/v1/runs/${runId}/workspace?diff=sideways`, { as: 'aud' })).status).toBe(400);
    expect((await server.request('GET', `/v1/runs/${runId}/workspace?iteration=9`, { as: 'aud' })).status).toBe(404);
  });

  it('triad review show prints the findings, the feedback and the diff, plain when piped; --json is the API body', async () => {
    const env = { TRIAD_DATA_DIR: dataDir, TRIAD_USER: 'bob' };
    const shown = await runCli(['review', 'show', reviewId], env);
    expect({ code: shown.code, stderr: shown.stderr }).toEqual({ code: 0, stderr: '' });
    const out = shown.stdout;
    expect(out).toContain('file d.txt contains "D"');
    expect(out).toContain('verdict   REQUEST_CHANGES');
    expect(out).toMatch(/finding {3}.*c\.txt/);
    expect(out).toContain(`decision  rejected by user:bob`);
    expect(out).toContain(`sent back by user:bob`);
    expect(out).toContain(FEEDBACK);
    expect(out).toContain('no changes since iteration 2');
    expect(out).toContain('+++ b/a.txt');
    expect(out).toMatch(/^\+A/m);
    expect(out).toContain('you (user:bob) may decide it');
    expect(out).not.toContain(ESC);

    const json = await runCli(['review', 'show', reviewId, '--json'], env);
    expect(json.code).toBe(0);
    const body = lastJson<ReviewView>(json.stdout);
    const api = (await getReview(reviewId)).body;
    expect(body).toEqual(api);

    const missing = await runCli(['review', 'show', `rev_${runId}_1`], env);
    expect({ code: missing.code, lines: missing.stderr.trim().split('\n').length }).toEqual({ code: 3, lines: 1 });
  });

  it('triad runs workspace lists the files or prints the diff', async () => {
    const env = { TRIAD_DATA_DIR: dataDir };
    const listed = await runCli(['runs', 'workspace', runId], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^ *\d+ {2}[0-9a-f]{64} {2}d\.txt$/m);
    const diff = await runCli(['runs', 'workspace', runId, '--iteration', '2', '--diff'], env);
    expect({ code: diff.code, stderr: diff.stderr }).toEqual({ code: 0, stderr: '' });
    expect(diff.stdout).toContain('2 file(s) changed since iteration 1: c.txt (added), d.txt (added)');
    expect(diff.stdout).toContain('--- /dev/null\n+++ b/c.txt\n@@ -0,0 +1,');
    expect(diff.stdout).not.toContain('a.txt');
    expect(diff.stdout).not.toContain(ESC);
    const bad = await runCli(['runs', 'workspace', runId, '--diff', 'sideways'], env);
    expect(bad.code).toBe(2);
  });

  it('a decision forged into the store (no valid attestation) is not shown, and the review stays open', async () => {
    const store = new SqliteEventStore({ file: join(dataDir, 'triad.db') });
    try {
      const at = new Date().toISOString();
      await store.append(`run-${runId}`, [
        {
          type: 'ReviewDecided',
          data: { decisionId: 'forged', reviewId, iteration: 3, outcome: 'approved', reason: 'trust me', executor: `agent:executor:${runId}`, decider: 'user:mallory', deciderKind: 'human', acceptanceCriteria: CRITERIA, artifactHash: 'sha256:0', charterVersion: 'x', at },
        },
        { type: 'RunEnded', data: { status: 'completed', reason: 'COMPLETED', message: 'approved by user:mallory', at } },
      ]);
    } finally {
      await store.close();
    }
    const v = (await getReview(reviewId)).body;
    expect(v).toMatchObject({ state: 'open', run: { status: 'awaiting_review' }, caller: { identity: 'user:bob', mayDecide: true } });
    expect(v.iterations[2].decisions).toEqual([]);
    expect(JSON.stringify(v)).not.toContain('mallory');
  });
});
