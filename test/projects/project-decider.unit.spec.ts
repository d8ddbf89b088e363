import {
  decideProject,
  evolveProject,
  initialProjectState,
  InvalidTaskGraphError,
  ProjectConflictError,
  projectDecider,
  ProjectIdempotencyConflictError,
  ProjectSelfReviewError,
  taskRunIdempotencyKey,
  type ProjectCommand,
} from '../../src/projects/domain/project-decider';
import type { ProjectEvent, ProjectLaunchedData, ProjectState } from '../../src/projects/domain/project-events';
import type { ProjectStrategy, TaskSpec } from '../../src/projects/domain/task-graph';
import { runIdForIdempotencyKey } from '../../src/team/domain/run-id';
import { DeciderSpecification } from '../support/decider-specification';

const PROJECT = 'prj_1';
const AT = '2025-01-02T00:00:00.000Z';
const given = DeciderSpecification.for<ProjectState, ProjectCommand, ProjectEvent>(projectDecider);

const task = (key: string, dependsOn: string[] = []): TaskSpec => ({ key, goal: `do ${key}`, acceptanceCriteria: [`${key} done`], dependsOn });
const DAG = [task('a'), task('b', ['a']), task('c', ['a'])];
const launchedData = (over: Partial<ProjectLaunchedData> = {}): ProjectLaunchedData => ({
  projectId: PROJECT,
  goal: 'build it',
  acceptanceCriteria: [],
  strategy: 'dag' as ProjectStrategy,
  concurrency: 10,
  reviewPolicy: { humanGate: true, perTask: false, allowLauncherToReview: false },
  run: {},
  launchedBy: 'user:olga',
  launchedAt: AT,
  ...over,
});
const planning = (): ProjectEvent[] => decideProject({ type: 'LaunchProject', data: launchedData() }, initialProjectState(PROJECT));
const runOf = (key: string, attempt = 1) => runIdForIdempotencyKey('user:olga', taskRunIdempotencyKey(PROJECT, key, attempt));
const launched = (tasks: TaskSpec[] = DAG, over: Partial<ProjectLaunchedData> = {}): ProjectEvent[] => decideProject({ type: 'LaunchProject', data: launchedData(over), tasks }, initialProjectState(PROJECT));
const advance = (outcomes: Record<string, string>): ProjectCommand => ({
  type: 'Advance',
  runOutcomes: Object.fromEntries(Object.entries(outcomes).map(([k, status]) => [runOf(k), { status, ...(status !== 'completed' ? { terminationReason: 'ERROR' } : {}) }])),
  at: AT,
});
/** The events after advancing `past` with `outcomes`. */
const after = (past: ProjectEvent[], outcomes: Record<string, string>): ProjectEvent[] => {
  const state = past.reduce((s, e, i) => evolveProject(s, e, { revision: i }), initialProjectState(PROJECT));
  return [...past, ...decideProject(advance(outcomes), state)];
};

describe('launching a project', () => {
  it('given nothing, when launched with a task graph, then it is planned and its ready tasks start with deterministic run ids', () => {
    given([])
      .when({ type: 'LaunchProject', data: launchedData(), tasks: DAG })
      .then([
        { type: 'ProjectLaunched' },
        { type: 'ProjectPlanned', data: { source: 'user', tasks: DAG } },
        { type: 'TaskStarted', data: { key: 'a', attempt: 1, runId: runOf('a'), idempotencyKey: `project:${PROJECT}:task:a:attempt:1` } },
      ]);
  });

  it('given nothing, when launched without tasks, then it waits for the architect (planning)', () => {
    const { state } = given([]).when({ type: 'LaunchProject', data: launchedData() }).then([{ type: 'ProjectLaunched' }]);
    expect(state.status).toBe('planning');
  });

  it('given a project launched with its tasks, when the same request comes again later, then nothing is decided: it is the same project', () => {
    given(launched())
      .when({ type: 'LaunchProject', data: launchedData({ launchedAt: '2025-01-02T00:05:00.000Z' }), tasks: DAG })
      .thenNothing();
  });

  it('given a project launched with its tasks, when the same key comes with other tasks, then it is a conflict', () => {
    given(launched())
      .when({ type: 'LaunchProject', data: launchedData(), tasks: [task('a')] })
      .thenThrows(ProjectIdempotencyConflictError, (e) => expect(e.kind).toBe('conflict'));
  });

  it('given a project the architect planned, when its launch is retried without tasks, then nothing is decided', () => {
    const past = [...planning(), ...decideProject({ type: 'RecordPlan', tasks: [task('x')], architect: { model: 'm' }, at: AT }, planning().reduce((st, e, i) => evolveProject(st, e, { revision: i }), initialProjectState(PROJECT)))];
    given(past).when({ type: 'LaunchProject', data: launchedData() }).thenNothing();
  });

  it('given a project, when another goal comes under its key, then it is a conflict', () => {
    given(planning())
      .when({ type: 'LaunchProject', data: launchedData({ goal: 'build something else' }) })
      .thenThrows(ProjectIdempotencyConflictError);
  });

  it.each([
    ['a cycle', [task('a', ['b']), task('b', ['a'])], /cycle/],
    ['an unknown key', [task('a', ['x'])], /unknown task 'x'/],
    ['a duplicate key', [task('a'), task('a')], /used twice/],
  ])('given nothing, when launched with %s, then it is refused and nothing is decided', (_n, tasks, message) => {
    given([])
      .when({ type: 'LaunchProject', data: launchedData(), tasks })
      .thenThrows(InvalidTaskGraphError, (e) => expect(e.message).toMatch(message));
  });

  it('given a project in planning, when the architect submits a valid graph, then it is planned and started', () => {
    given(planning())
      .when({ type: 'RecordPlan', tasks: [{ key: 'x', goal: 'g', acceptanceCriteria: ['c'] }], architect: { model: 'm', toolUseId: 't1' }, at: AT })
      .then([{ type: 'ProjectPlanned', data: { source: 'architect', architect: { model: 'm' } } }, { type: 'TaskStarted', data: { key: 'x' } }]);
  });

  it('given a project in planning, when the architect submits a cyclic graph, then the failure is recorded and the project ends failed', () => {
    const { state } = given(planning())
      .when({ type: 'RecordPlan', tasks: [task('a', ['b']), task('b', ['a'])], architect: { model: 'm' }, at: AT })
      .then([{ type: 'ProjectPlanningFailed', data: { reason: expect.stringMatching(/cycle/) } }, { type: 'ProjectEnded', data: { status: 'failed', reason: 'PLANNING_FAILED' } }]);
    expect(state.status).toBe('failed');
  });
});

describe('advancing', () => {
  it('given a running task, when its run completes, then its dependents start together (dag)', () => {
    given(launched())
      .when(advance({ a: 'completed' }))
      .then([{ type: 'TaskEnded', data: { key: 'a', status: 'completed' } }, { type: 'TaskStarted', data: { key: 'b' } }, { type: 'TaskStarted', data: { key: 'c' } }]);
  });

  it('given a dag whose tasks all complete, when the last ends, then the project review opens (one gate per project)', () => {
    const past = after(launched(), { a: 'completed' });
    const { state } = given(past).when(advance({ b: 'completed', c: 'completed' })).then([{ type: 'TaskEnded' }, { type: 'TaskEnded' }, { type: 'ProjectReviewOpened' }]);
    expect(state.status).toBe('awaiting_review');
  });

  it('given reviewPolicy perTask, when the last task ends, then the project completes without a gate of its own', () => {
    given(after(launched([task('a')], { reviewPolicy: { humanGate: true, perTask: true, allowLauncherToReview: false } }), {}))
      .when(advance({ a: 'completed' }))
      .then([{ type: 'TaskEnded' }, { type: 'ProjectEnded', data: { status: 'completed', reason: 'COMPLETED' } }]);
  });

  it('given a failed task, when it ends, then its dependents are skipped, the others go on, and the project ends TASKS_FAILED', () => {
    const graph = [task('a'), task('b', ['a']), task('c')];
    const { state } = given(launched(graph))
      .when(advance({ a: 'failed' }))
      .then([{ type: 'TaskEnded', data: { key: 'a', status: 'failed', runStatus: 'failed' } }, { type: 'TasksSkipped', data: { keys: ['b'], because: 'a' } }]);
    expect(state.tasks.find((t) => t.key === 'c')!.status).toBe('running');
    given(after(launched(graph), { a: 'failed' }))
      .when(advance({ c: 'completed' }))
      .then([{ type: 'TaskEnded', data: { key: 'c' } }, { type: 'ProjectEnded', data: { status: 'failed', reason: 'TASKS_FAILED' } }]);
  });

  it('given sequential, when a task completes, then the next one starts', () => {
    const seq = launched([task('a'), task('b')], { strategy: 'sequential' });
    expect(seq.filter((e) => e.type === 'TaskStarted')).toHaveLength(1);
    given(seq).when(advance({ a: 'completed' })).then([{ type: 'TaskEnded' }, { type: 'TaskStarted', data: { key: 'b' } }]);
  });

  it('given a run end already recorded, when told again, then nothing is decided', () => {
    given(after(launched(), { a: 'completed' })).when(advance({ a: 'completed' })).thenNothing();
  });
});

describe('retry', () => {
  const failed = () => after(after(launched([task('a'), task('b', ['a']), task('c')]), { a: 'failed' }), { c: 'completed' });

  it('given a project failed by a task, when the task is retried, then it starts again as attempt 2 and its skipped dependents are pending again', () => {
    const { state } = given(failed())
      .when({ type: 'RetryTask', key: 'a', by: 'user:olga', at: AT })
      .then([
        { type: 'TaskRetried', data: { key: 'a', attempt: 2, reopened: ['b'] } },
        { type: 'TaskStarted', data: { key: 'a', attempt: 2, runId: runOf('a', 2), idempotencyKey: `project:${PROJECT}:task:a:attempt:2` } },
      ]);
    expect(state.status).toBe('running');
    expect(state.tasks.find((t) => t.key === 'a')!.runIds).toEqual([runOf('a'), runOf('a', 2)]);
    expect(state.tasks.find((t) => t.key === 'b')!.status).toBe('pending');
  });

  it('given a skipped task, when retried, then it is a conflict naming the task to retry', () => {
    given(failed())
      .when({ type: 'RetryTask', key: 'b', by: 'user:olga', at: AT })
      .thenThrows(ProjectConflictError, (e) => expect(e.message).toMatch(/retry that task/));
  });

  it('given a running task, when retried, then it is a conflict', () => {
    given(launched()).when({ type: 'RetryTask', key: 'a', by: 'user:olga', at: AT }).thenThrows(ProjectConflictError);
  });
});

describe('cancel and review', () => {
  it('given a running project, when cancelled, then it ends cancelled with its pending and running tasks', () => {
    const { state } = given(launched())
      .when({ type: 'CancelProject', by: 'user:olga', reason: 'enough', at: AT })
      .then([{ type: 'ProjectEnded', data: { status: 'cancelled', reason: 'CANCELLED', cancelledTasks: ['a', 'b', 'c'] } }]);
    expect(state.tasks.every((t) => t.status === 'cancelled')).toBe(true);
  });

  it('given a cancelled project, when a task run ends or a retry comes, then nothing is decided or it is a conflict', () => {
    const past = [...launched(), ...decideProject({ type: 'CancelProject', by: 'user:olga', at: AT }, launched().reduce((s, e) => evolveProject(s, e), initialProjectState(PROJECT)))];
    given(past).when(advance({ a: 'cancelled' })).thenNothing();
    given(past).when({ type: 'CancelProject', by: 'user:olga', at: AT }).thenThrows(ProjectConflictError);
  });

  const awaiting = () => after(after(launched(), { a: 'completed' }), { b: 'completed', c: 'completed' });

  it('given a project awaiting review, when a reviewer approves, then it completes', () => {
    given(awaiting())
      .when({ type: 'DecideProjectReview', decision: 'approve', by: 'user:rita', reason: 'fine', at: AT })
      .then([{ type: 'ProjectReviewDecided', data: { decision: 'approve', by: 'user:rita' } }, { type: 'ProjectEnded', data: { status: 'completed', reason: 'COMPLETED' } }]);
  });

  it('given a project awaiting review, when rejected, then it ends failed REJECTED', () => {
    given(awaiting())
      .when({ type: 'DecideProjectReview', decision: 'reject', by: 'user:rita', reason: 'no', at: AT })
      .then([{ type: 'ProjectReviewDecided' }, { type: 'ProjectEnded', data: { status: 'failed', reason: 'REJECTED', message: 'no' } }]);
  });

  it('given a project awaiting review, when its launcher decides, then it is forbidden (no self-review), with a message naming no one', () => {
    given(awaiting())
      .when({ type: 'DecideProjectReview', decision: 'approve', by: 'user:olga', reason: 'mine', at: AT })
      .thenThrows(ProjectSelfReviewError, (e) => expect(e.message).toBe('you may not decide this review'));
  });

  it('given a running project, when reviewed, then it is a conflict', () => {
    given(launched()).when({ type: 'DecideProjectReview', decision: 'approve', by: 'user:rita', reason: 'x', at: AT }).thenThrows(ProjectConflictError);
  });
});
