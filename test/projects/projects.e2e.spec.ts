import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import type { ProjectView } from '../../src/projects/domain/project-decider';
import type { RunSummary } from '../../src/team/runs/run-summary';
import { sseReader, startE2eApp, type E2eApp } from '../support/e2e-app';

// Projects over real HTTP through the real app (SQLite, offline model): a 3-task dag to its one
// project review, the architect's decomposition, bad graphs refused with nothing written, retry.

jest.setTimeout(60_000);

let e2e: E2eApp;
beforeAll(async () => {
  e2e = await startE2eApp();
});
afterAll(async () => {
  await e2e?.close();
});

const task = (key: string, file: string, dependsOn: string[] = []) => ({ key, goal: `Write ${file}`, acceptanceCriteria: [`file ${file} exists`], dependsOn });

async function launch(body: Record<string, unknown>): Promise<string> {
  const res = await e2e.request<{ projectId: string }>('POST', '/v1/projects', { body });
  expect(res.status).toBe(202);
  return res.body.projectId;
}

async function projectUntil(id: string, check: (p: ProjectView) => boolean, withinMs = 45_000): Promise<ProjectView> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const res = await e2e.request<ProjectView>('GET', `/v1/projects/${id}`);
    expect(res.status).toBe(200);
    if (check(res.body)) return res.body;
    if (Date.now() > deadline) throw new Error(`project ${id} is still ${res.body.status}: ${JSON.stringify(res.body.tasks.map((t) => [t.key, t.status]))}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function projectEvents(id: string): Promise<RecordedEvent[]> {
  const res = await e2e.request<{ events: RecordedEvent[] }>('GET', `/v1/projects/${id}/events`);
  expect(res.status).toBe(200);
  return res.body.events;
}

describe('a dag project', () => {
  it('runs its tasks as linked team runs in dependency order, waits at one project review, and completes when a reviewer approves', async () => {
    const id = await launch({ goal: 'Three files', tasks: [task('a', 'a.txt'), task('b', 'b.txt', ['a']), task('c', 'c.txt', ['a'])], strategy: 'dag' });
    const waiting = await projectUntil(id, (p) => p.status === 'awaiting_review' || p.status === 'failed');
    expect(waiting.status).toBe('awaiting_review');
    expect(waiting.tasks.map((t) => [t.key, t.status, t.attempt])).toEqual([
      ['a', 'completed', 1],
      ['b', 'completed', 1],
      ['c', 'completed', 1],
    ]);
    expect(waiting.runIds).toHaveLength(3);

    // Each task is a run linked to the project, its own gate waived (recorded).
    for (const t of waiting.tasks) {
      const run = await e2e.request<RunSummary>('GET', `/v1/runs/${t.runId}`);
      expect(run.body).toMatchObject({ status: 'completed', project: { projectId: id, taskKey: t.key, attempt: 1 } });
      const events = await e2e.request<{ events: RecordedEvent[] }>('GET', `/v1/runs/${t.runId}/events?fromRevision=0`);
      const launched = events.body.events[0].data as { reviewPolicy: { humanGate: boolean }; idempotencyKey: string };
      expect(launched.reviewPolicy.humanGate).toBe(false);
      expect(launched.idempotencyKey).toBe(`project:${id}:task:${t.key}:attempt:1`);
    }

    // b and c start only once a has ended.
    const events = await projectEvents(id);
    const revisionOf = (type: string, key: string) => events.find((e) => e.type === type && (e.data as { key: string }).key === key)!.revision;
    expect(revisionOf('TaskStarted', 'b')).toBeGreaterThan(revisionOf('TaskEnded', 'a'));
    expect(revisionOf('TaskStarted', 'c')).toBeGreaterThan(revisionOf('TaskEnded', 'a'));
    expect(events.filter((e) => e.type === 'TaskStarted')).toHaveLength(3);

    // The operator may not decide the review; a reviewer may.
    expect((await e2e.request('POST', `/v1/projects/${id}/review/approve`, { body: { reason: 'ok' } })).status).toBe(403);
    const approved = await e2e.request<ProjectView>('POST', `/v1/projects/${id}/review/approve`, { as: 'reviewer', body: { reason: 'all three files are there' } });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ status: 'completed', terminationReason: 'COMPLETED', review: { decision: { decision: 'approve', by: 'user:rev' } } });
    expect((await e2e.request('POST', `/v1/projects/${id}/review/approve`, { as: 'reviewer', body: { reason: 'again' } })).status).toBe(409);

    // The project's SSE replays its events and ends with ProjectEnded.
    const res = await e2e.fetch('GET', `/v1/projects/${id}/events`, { headers: { accept: 'text/event-stream' } });
    const sse = sseReader(res);
    const seen: string[] = [];
    for (let e = await sse.next(10_000); e; e = await sse.next(10_000)) seen.push(e.event);
    expect(seen[0]).toBe('ProjectLaunched');
    expect(seen[seen.length - 1]).toBe('ProjectEnded');

    const list = await e2e.request<{ projects: ProjectView[] }>('GET', '/v1/projects?status=completed');
    expect(list.body.projects.map((p) => p.projectId)).toContain(id);
  });

  it('without tasks, the architect (offline model) decomposes the goal: one task per criterion, recorded', async () => {
    const id = await launch({ goal: 'Two files', acceptanceCriteria: ['file x.txt exists', 'file y.txt exists'], reviewPolicy: { humanGate: false } });
    const done = await projectUntil(id, (p) => p.status === 'completed' || p.status === 'failed');
    expect(done.status).toBe('completed');
    expect(done.planning).toMatchObject({ source: 'architect', architect: { model: 'triad-offline-1', input: { tasks: expect.any(Array) } } });
    expect(done.tasks.map((t) => [t.key, t.acceptanceCriteria, t.dependsOn])).toEqual([
      ['task-1', ['file x.txt exists'], []],
      ['task-2', ['file y.txt exists'], ['task-1']],
    ]);
  });
});

describe('server-sent events', () => {
  it('a project followed from its launch: catch-up, then live events, closing after ProjectEnded', async () => {
    const id = await launch({ goal: 'Live', tasks: [task('l', 'l.txt')], reviewPolicy: { humanGate: false } });
    const res = await e2e.fetch('GET', `/v1/projects/${id}/events`, { headers: { accept: 'text/event-stream' } });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const sse = sseReader(res);
    const seen: Array<[string, string | undefined]> = [];
    for (let e = await sse.next(30_000); e; e = await sse.next(30_000)) seen.push([e.event, e.id]);
    expect(seen.map(([type]) => type)).toEqual(['ProjectLaunched', 'ProjectPlanned', 'TaskStarted', 'TaskEnded', 'ProjectEnded']);
    expect(seen.map(([, revision]) => revision)).toEqual(['0', '1', '2', '3', '4']);
  });
});

describe('review per task', () => {
  it('with reviewPolicy perTask, each task run waits at its own gate (decided with /v1/reviews) and the project completes with the last', async () => {
    const id = await launch({ goal: 'Gated', tasks: [task('g', 'g.txt')], reviewPolicy: { perTask: true } });
    const running = await projectUntil(id, (p) => p.tasks[0].runId !== undefined);
    const runId = running.tasks[0].runId!;
    let run: RunSummary | undefined;
    for (const deadline = Date.now() + 45_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
      run = (await e2e.request<RunSummary>('GET', `/v1/runs/${runId}`)).body;
      if (run.status === 'awaiting_review') break;
    }
    expect(run?.status).toBe('awaiting_review');
    expect((await e2e.request<ProjectView>('GET', `/v1/projects/${id}`)).body.status).toBe('running');
    const decided = await e2e.request('POST', `/v1/reviews/${run!.pendingReview!.reviewId}/approve`, { as: 'reviewer', body: { reason: 'fine' } });
    expect(decided.status).toBe(200);
    const done = await projectUntil(id, (p) => p.status === 'completed' || p.status === 'failed');
    expect(done).toMatchObject({ status: 'completed', terminationReason: 'COMPLETED' });
    expect(done.review).toBeUndefined();
  });
});

describe('bad graphs', () => {
  it.each([
    ['a cycle', [task('a', 'a', ['b']), task('b', 'b', ['a'])], 'dag', /cycle: a -> b -> a/],
    ['an unknown key', [task('a', 'a', ['nope'])], 'dag', /unknown task 'nope'/],
    ['a duplicate key', [task('a', 'a'), task('a', 'b')], 'dag', /'a' is used twice/],
    ['dependencies under parallel', [task('a', 'a'), task('b', 'b', ['a'])], 'parallel', /strategy 'parallel'/],
  ])('%s is a 400 with a clear message, and nothing is written', async (_name, tasks, strategy, message) => {
    const before = (await e2e.request<{ projects: ProjectView[] }>('GET', '/v1/projects')).body.projects.length;
    const res = await e2e.request<{ message: string }>('POST', '/v1/projects', { body: { goal: 'bad', tasks, strategy, idempotencyKey: `bad-${_name.replace(/\W/g, '')}` } });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(message);
    expect((await e2e.request<{ projects: ProjectView[] }>('GET', '/v1/projects')).body.projects).toHaveLength(before);
  });

  it('unknown strategies and projects are refused', async () => {
    expect((await e2e.request('POST', '/v1/projects', { body: { goal: 'x', strategy: 'random' } })).status).toBe(400);
    expect((await e2e.request('GET', '/v1/projects/prj_nope')).status).toBe(404);
    expect((await e2e.request('POST', '/v1/projects/prj_nope/cancel', { body: {} })).status).toBe(404);
    expect((await e2e.request('POST', '/v1/projects/prj_nope/tasks/a/retry')).status).toBe(404);
  });
});

describe('failure, retry and cancel', () => {
  it('a failed task skips its dependents; retrying it starts attempt 2 under a new run', async () => {
    // Three criteria in one iteration: the offline executor meets two per iteration, so the run fails (MAX_ITERATIONS).
    const hard = { key: 'hard', goal: 'Three files at once', acceptanceCriteria: ['file p.txt exists', 'file q.txt exists', 'file r.txt exists'], dependsOn: [] };
    const id = await launch({ goal: 'Fails', tasks: [hard, task('after', 'z.txt', ['hard']), task('free', 'f.txt')], run: { maxIterations: 1 } });
    const failed = await projectUntil(id, (p) => p.status === 'failed');
    expect(failed.terminationReason).toBe('TASKS_FAILED');
    expect(failed.tasks.map((t) => [t.key, t.status])).toEqual([
      ['hard', 'failed'],
      ['after', 'skipped'],
      ['free', 'completed'],
    ]);
    expect((await e2e.request('POST', `/v1/projects/${id}/tasks/after/retry`)).status).toBe(409);
    const retried = await e2e.request<ProjectView>('POST', `/v1/projects/${id}/tasks/hard/retry`);
    expect(retried.status).toBe(202);
    expect(retried.body.status).toBe('running');
    const again = await projectUntil(id, (p) => p.status === 'failed' && p.tasks[0].attempt === 2);
    expect(again.tasks[0].runIds).toHaveLength(2);
    expect(new Set(again.runIds).size).toBe(3);
  });

  it('a project waiting at its review can be cancelled; a cancelled project cannot be again', async () => {
    const id = await launch({ goal: 'One file', tasks: [task('only', 'o.txt')] });
    await projectUntil(id, (p) => p.status === 'awaiting_review');
    expect((await e2e.request('POST', `/v1/projects/${id}/cancel`, { as: 'reviewer', body: {} })).status).toBe(403);
    const res = await e2e.request<ProjectView>('POST', `/v1/projects/${id}/cancel`, { body: { reason: 'not needed' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'cancelled', terminationReason: 'CANCELLED', message: 'not needed' });
    expect((await e2e.request('POST', `/v1/projects/${id}/cancel`, { body: {} })).status).toBe(409);
  });
});
