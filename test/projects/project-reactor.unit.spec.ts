import { commandPathFor } from '../../src/events/command-handling';
import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import { launchProject, loadProject, projectContext, projectStream } from '../../src/projects/project-stream';
import { decideProject } from '../../src/projects/domain/project-decider';
import { InvalidRequestError } from '../../src/shared/errors';
import { ProjectReactor, type ProjectReactorDeps } from '../../src/projects/project-reactor';
import type { ProjectLaunchedData, ProjectState, TaskState } from '../../src/projects/domain/project-events';
import { toRunStreamId } from '../../src/team/domain/run-events';
import { launchRun } from '../../src/team/commands/launch';
import { runIdForIdempotencyKey } from '../../src/team/domain/run-id';
import { OfflineModelProvider, OFFLINE_MODEL_ID } from '../../src/team/models/offline.model';

// The reactor's durability with an in-memory store and no drivers: task runs are launched through
// the real launch (idempotency keys), and a reactor that dies between recording a task's start and
// launching its run is followed by one that launches it, once.

const AT = '2025-01-02T00:00:00.000Z';
const clock = { now: () => Date.parse(AT) };

function setup() {
  const store = new InMemoryEventStore();
  const path = commandPathFor(store);
  const launches: string[] = [];
  const deps = (failLaunchOf?: string): ProjectReactorDeps => ({
    store,
    path,
    clock,
    complete: (r) => new OfflineModelProvider().complete(r),
    defaultModel: OFFLINE_MODEL_ID,
    launchTaskRun: async (project: ProjectState, task: TaskState) => {
      if (task.key === failLaunchOf) throw new Error('process died');
      launches.push(task.key);
      const idempotencyKey = `project:${project.projectId}:task:${task.key}:attempt:${task.attempt}`;
      const launchedBy = project.launched!.launchedBy;
      await launchRun(
        path,
        { goal: task.goal, acceptanceCriteria: task.acceptanceCriteria, reviewPolicy: { humanGate: false }, idempotencyKey },
        { runId: runIdForIdempotencyKey(launchedBy, idempotencyKey), launchedBy, now: new Date(AT), provider: 'offline', defaultModel: OFFLINE_MODEL_ID, project: { projectId: project.projectId, taskKey: task.key, attempt: task.attempt } },
      );
    },
    cancelRun: async () => undefined,
  });
  /** Ends a task run as its driver would. */
  const endRun = async (runId: string, status: string) => {
    const head = await store.streamRevision(toRunStreamId(runId));
    // A run completes only through its gate (here waived): the fold refuses a bare RunEnded COMPLETED.
    const phase = (p: string, role: string) => ({ type: 'PhaseStarted', data: { phase: p, role, iteration: 1, agent: `agent:${role}:${runId}`, system: '', tools: [], maxTurns: 5, at: AT } });
    const path = [
      phase('planning', 'architect'),
      { type: 'PlanSubmitted', data: { toolUseId: 'tu_plan', plan: 'p', steps: ['p'], at: AT } },
      phase('executing', 'executor'),
      { type: 'WorkSubmitted', data: { toolUseId: 'tu_work', iteration: 1, summary: 'w', files: [], at: AT } },
      phase('reviewing', 'reviewer'),
      { type: 'VerdictSubmitted', data: { toolUseId: 'tu_verdict', iteration: 1, verdict: 'APPROVE', findings: [], summary: 's', at: AT } },
      {
        type: 'ReviewDecided',
        data: { decisionId: `dec_${runId}`, reviewId: `rev_${runId}_1`, iteration: 1, outcome: 'waived', reason: 'waived', executor: `agent:executor:${runId}`, decider: 'system', deciderKind: 'system', acceptanceCriteria: [], artifactHash: 'sha256:a', charterVersion: 'sha256:c', at: AT },
      },
    ];
    await store.append(toRunStreamId(runId), [...(status === 'completed' ? path : []), { type: 'RunEnded', data: { status, reason: status === 'completed' ? 'COMPLETED' : 'ERROR', at: AT } }], { expectedRevision: head! });
  };
  return { store, path, launches, deps, endRun };
}

const data = (over: Partial<ProjectLaunchedData> = {}): ProjectLaunchedData => ({
  projectId: 'prj_r',
  goal: 'g',
  acceptanceCriteria: ['file x.txt exists', 'file y.txt exists'],
  strategy: 'dag',
  concurrency: 10,
  reviewPolicy: { humanGate: true, perTask: false, allowLauncherToReview: false },
  run: {},
  launchedBy: 'user:olga',
  launchedAt: AT,
  ...over,
});
const tasks = [
  { key: 'a', goal: 'a', acceptanceCriteria: ['file a exists'], dependsOn: [] },
  { key: 'b', goal: 'b', acceptanceCriteria: ['file b exists'], dependsOn: ['a'] },
];

it('given a task started but its run never launched (the process died), when another reactor reconciles, then the run is launched once', async () => {
  const { store, path, launches, deps, endRun } = setup();
  await launchProject(path, data(), tasks);
  await new ProjectReactor(deps()).reconcile('prj_r');
  let state = await loadProject(store, 'prj_r');
  await endRun(state.tasks[0].runId!, 'completed');
  // The first reactor records b's start, then dies before launching its run.
  await expect(new ProjectReactor(deps('b')).reconcile('prj_r')).rejects.toThrow('process died');
  state = await loadProject(store, 'prj_r');
  expect(state.tasks[1].status).toBe('running');
  expect(await store.streamRevision(toRunStreamId(state.tasks[1].runId!))).toBeNull();
  // The next one launches it; a third finds nothing to do.
  await new ProjectReactor(deps()).reconcile('prj_r');
  await new ProjectReactor(deps()).reconcile('prj_r');
  expect(launches).toEqual(['a', 'b']);
  expect((await store.readStream(toRunStreamId(state.tasks[1].runId!))).filter((e) => e.type === 'RunLaunched')).toHaveLength(1);
  await endRun(state.tasks[1].runId!, 'completed');
  await new ProjectReactor(deps()).reconcile('prj_r');
  expect((await loadProject(store, 'prj_r')).status).toBe('awaiting_review');
});

it('given a launch made twice for one attempt, then the second finds the run launched (one RunLaunched)', async () => {
  const { store, path, deps } = setup();
  await launchProject(path, data(), tasks);
  const state = await loadProject(store, 'prj_r');
  await deps().launchTaskRun(state, state.tasks[0]);
  await deps().launchTaskRun(state, state.tasks[0]);
  expect((await store.readStream(toRunStreamId(state.tasks[0].runId!))).filter((e) => e.type === 'RunLaunched')).toHaveLength(1);
});

it('given a project without tasks, when reconciled, then the offline architect plans one task per criterion (recorded) and they start', async () => {
  const { store, path, launches, deps } = setup();
  await launchProject(path, data(), undefined);
  await new ProjectReactor(deps()).reconcile('prj_r');
  const events = await store.readStream('project-prj_r');
  expect(events.map((e) => e.type)).toEqual(['ProjectLaunched', 'ProjectPlanned', 'TaskStarted']);
  expect(events[1].data).toMatchObject({ source: 'architect', architect: { model: OFFLINE_MODEL_ID, toolUseId: expect.any(String) }, tasks: [{ key: 'task-1' }, { key: 'task-2', dependsOn: ['task-1'] }] });
  expect(launches).toEqual(['task-1']);
});

it('given a model that submits a cyclic graph, when reconciled, then the failure is recorded and the project ends failed', async () => {
  const { store, path, deps } = setup();
  await launchProject(path, data(), undefined);
  const cyclic = [
    { key: 'x', goal: 'x', acceptanceCriteria: ['c'], dependsOn: ['y'] },
    { key: 'y', goal: 'y', acceptanceCriteria: ['c'], dependsOn: ['x'] },
  ];
  await new ProjectReactor({
    ...deps(),
    complete: async () => ({ model: 'm', stopReason: 'tool_use', usage: { inputTokens: 1, outputTokens: 1 }, content: [{ type: 'tool_use', id: 't', name: 'submit_task_graph', input: { tasks: cyclic } }] }),
  }).reconcile('prj_r');
  const state = await loadProject(store, 'prj_r');
  expect(state).toMatchObject({ status: 'failed', terminationReason: 'PLANNING_FAILED', planning: { failure: expect.stringMatching(/cycle/) } });
});

it('given a project launched with an idempotency key, when launched again with the same request, then the same project; with other tasks, a conflict', async () => {
  const { store, path } = setup();
  const first = await launchProject(path, data({ idempotencyKey: 'k' }), tasks);
  const again = await launchProject(path, data({ idempotencyKey: 'k', launchedAt: '2025-01-03T00:00:00.000Z' }), tasks);
  expect(again).toMatchObject({ projectId: first.projectId, created: false, acceptedAt: AT });
  await expect(launchProject(path, data({ idempotencyKey: 'k' }), [tasks[0]])).rejects.toThrow(/idempotency key was already used/);
  expect((await store.readStream('project-prj_r')).map((e) => e.type)).toEqual(['ProjectLaunched', 'ProjectPlanned', 'TaskStarted']);
});

it('given a cancelled project with a task run going, when reconciled, then that run is cancelled (by whoever cancelled the project), and nothing more launched', async () => {
  const { store, path, launches, deps } = setup();
  await launchProject(path, data(), tasks);
  await new ProjectReactor(deps()).reconcile('prj_r');
  await path.handle(projectStream(store, 'prj_r'), (s) => decideProject({ type: 'CancelProject', by: 'user:olga', at: AT }, s), projectContext('prj_r', 'user:olga'));
  const cancelled: Array<[string, string]> = [];
  await new ProjectReactor({ ...deps(), cancelRun: async (runId, by) => void cancelled.push([runId, by]) }).reconcile('prj_r');
  const state = await loadProject(store, 'prj_r');
  expect(cancelled).toEqual([[state.tasks[0].runId!, 'user:olga']]);
  expect(launches).toEqual(['a']);
  expect(state.tasks.map((t) => t.status)).toEqual(['cancelled', 'cancelled']);
});

it('given a task whose run launch is refused as invalid, when reconciled, then the task fails without a run (LAUNCH_REFUSED) and its dependents are skipped', async () => {
  const { store, path, deps } = setup();
  await launchProject(path, data(), tasks);
  await new ProjectReactor({
    ...deps(),
    launchTaskRun: async () => {
      throw new InvalidRequestError('executor may not have run_command');
    },
  }).reconcile('prj_r');
  const state = await loadProject(store, 'prj_r');
  expect(state).toMatchObject({ status: 'failed', terminationReason: 'TASKS_FAILED' });
  expect(state.tasks.map((t) => [t.key, t.status, t.runStatus ?? null])).toEqual([
    ['a', 'failed', 'not_launched'],
    ['b', 'skipped', null],
  ]);
});

it('given two reactors sharing a planning claim, when both react to a launch at once, then the architect is asked once and the graph recorded once', async () => {
  const { store, path, deps } = setup();
  await launchProject(path, data(), undefined);
  // The claim as RunSupervisor.claim gives it: one holder at a time.
  const held = new Set<string>();
  const claimPlanning = async (projectId: string) => {
    if (held.has(projectId)) return undefined;
    held.add(projectId);
    return { release: async () => void held.delete(projectId) };
  };
  let calls = 0;
  const slowArchitect: ProjectReactorDeps['complete'] = async (r) => {
    calls++;
    await new Promise((resolve) => setImmediate(resolve));
    return new OfflineModelProvider().complete(r);
  };
  const [a, b] = [new ProjectReactor({ ...deps(), complete: slowArchitect, claimPlanning }), new ProjectReactor({ ...deps(), complete: slowArchitect, claimPlanning })];
  await Promise.all([a.reconcile('prj_r'), b.reconcile('prj_r')]);
  await Promise.all([a.stop(), b.stop()]);
  expect(calls).toBe(1);
  expect((await store.readStream('project-prj_r')).filter((e) => e.type === 'ProjectPlanned')).toHaveLength(1);
});

it('given a planning claim held by a process that died, when its claim lapses, then another reactor looks again and plans', async () => {
  const { store, path, deps } = setup();
  await launchProject(path, data(), undefined);
  let lapsed = false;
  const claimPlanning = async () => (lapsed ? { release: async () => undefined } : undefined);
  const reactor = new ProjectReactor({ ...deps(), claimPlanning, planningRecheckMs: 1 });
  await reactor.reconcile('prj_r');
  expect((await store.readStream('project-prj_r')).map((e) => e.type)).toEqual(['ProjectLaunched']);
  lapsed = true;
  // The recheck pokes the project again: it is planned once the claim is free.
  for (let i = 0; i < 200 && (await store.readStream('project-prj_r')).length === 1; i++) await new Promise((resolve) => setTimeout(resolve, 5));
  await reactor.idle();
  await reactor.stop();
  expect((await store.readStream('project-prj_r')).map((e) => e.type)).toContain('ProjectPlanned');
});

describe('a reaction that fails is tried again', () => {
  /** Deps whose task-run launch fails `n` times (a store gone away for a while), with every logged error kept. */
  function flaky(n: number) {
    const world = setup();
    const errors: string[] = [];
    const base = world.deps();
    let failures = n;
    const deps: ProjectReactorDeps = {
      ...base,
      launchTaskRun: async (project, task) => {
        if (failures-- > 0) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
        await base.launchTaskRun(project, task);
      },
      logger: { log: () => undefined, error: (m) => errors.push(m) },
    };
    return { ...world, reactor: new ProjectReactor(deps), errors };
  }

  it('given a store that fails twice, when poked, then the reaction is made once it answers, each failure logged', async () => {
    const { path, launches, reactor, errors } = flaky(2);
    await launchProject(path, data(), tasks);
    reactor.poke('prj_r');
    await reactor.idle();
    expect(launches).toEqual(['a']);
    expect(errors).toEqual([expect.stringMatching(/attempt 1\): connect ECONNREFUSED/), expect.stringMatching(/attempt 2\)/)]);
  });

  it('given a reaction that fails every time, then it is given up after five attempts, each logged, until the next poke', async () => {
    const { path, launches, reactor, errors } = flaky(5);
    await launchProject(path, data(), tasks);
    reactor.poke('prj_r');
    await reactor.idle();
    expect(launches).toEqual([]);
    expect(errors).toHaveLength(5);
    reactor.poke('prj_r');
    await reactor.idle();
    expect(launches).toEqual(['a']);
  });
});
