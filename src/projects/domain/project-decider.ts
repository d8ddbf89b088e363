import { decisionTrust } from '../../attestation/decision-trust';
import { hashOf } from '../../shared/canonical-json';
import type { RecordedPlace } from '../../attestation/attestation';
import type { GateRefusal } from '../../attestation/gate-refusal';
import { ConflictError, ForbiddenError, InvalidRequestError, NotFoundError } from '../../shared/errors';
import { runIdForIdempotencyKey } from '../../team/domain/run-id';
import { nextTasksToStart, type TaskStatus } from './scheduler';
import { dependentsOf, normaliseTask, taskGraphProblem, type ProjectStrategy, type TaskSpec } from './task-graph';
import type { ArchitectTurn, ProjectEndedData, ProjectEvent, ProjectLaunchedData, ProjectState, TaskState } from './project-events';

/**
 * The project decider: commands in, events out, `evolve` to fold them. Pure: time, ids and what
 * the task runs did arrive in the commands. The shell (ProjectReactor) sends `Advance` whenever a
 * task run ends or the project changes; everything that follows from a change (dependents skipped,
 * the next tasks started, the review opened, the project ended) is decided in the same command,
 * so a project is never left between two consistent states.
 *
 * One file over 400 lines on purpose: `decideProject` and `evolveProject` are the two halves of one
 * contract (each event decided here is folded here, ending in the same states), and the view is the
 * fold's face; split, a change to an event would be made in several files and checked in none.
 */

/** How a task run ended, as its RunEnded says. */
export interface RunOutcome {
  status: string;
  terminationReason?: string;
}

export type ProjectCommand =
  | { type: 'LaunchProject'; data: ProjectLaunchedData; tasks?: TaskSpec[] }
  | { type: 'RecordPlan'; tasks: unknown; architect: ArchitectTurn; at: string }
  | { type: 'RecordPlanningFailed'; reason: string; architect?: ArchitectTurn; at: string }
  /** Records the ends of the given task runs (by run id) and starts what can start now. */
  | { type: 'Advance'; runOutcomes: Readonly<Record<string, RunOutcome>>; at: string }
  /** A task run's launch was refused (its settings are not valid): the task fails without a run. */
  | { type: 'RecordTaskLaunchRefused'; key: string; attempt: number; reason: string; at: string }
  | { type: 'RetryTask'; key: string; by: string; at: string }
  | { type: 'CancelProject'; by: string; reason?: string; at: string }
  | { type: 'DecideProjectReview'; decision: 'approve' | 'reject'; by: string; reason: string; at: string };

export class InvalidTaskGraphError extends InvalidRequestError {
  override readonly name = 'InvalidTaskGraphError';
}
export class ProjectNotFoundError extends NotFoundError {
  override readonly name = 'ProjectNotFoundError';
}
export class ProjectConflictError extends ConflictError {
  override readonly name = 'ProjectConflictError';
}
export class ProjectSelfReviewError extends ForbiddenError {
  override readonly name = 'ProjectSelfReviewError';
}

/** An idempotency key reused for another project. Maps to 409. */
export class ProjectIdempotencyConflictError extends ConflictError {
  override readonly name = 'ProjectIdempotencyConflictError';
  constructor() {
    super('this idempotency key was already used for a different project');
  }
}

/**
 * The project's decider, in the shape of the run's (`runDecider`): its commands (launch, plan,
 * advance, retry, cancel, the review) decided on the folded project, pure.
 */
export const projectDecider = {
  decide: decideProject,
  evolve: (state: ProjectState, event: ProjectEvent, recorded: { revision: number; position: number }): ProjectState => evolveProject(state, event, recorded),
  initialState: (): ProjectState => initialProjectState(),
};

export const FINAL_PROJECT_STATUSES = new Set(['completed', 'cancelled']);

export function initialProjectState(projectId = ''): ProjectState {
  return { projectId, revision: -1, status: 'planning', tasks: [] };
}

/** The project id an idempotency key stands for: the same launcher and key always name the same project. */
export function projectIdForIdempotencyKey(launchedBy: string, key: string): string {
  return `prj_${hashOf({ launchedBy, key, kind: 'project' }).slice(0, 24)}`;
}

/** What makes two launches the same request: everything but time and id, and the tasks given. */
function launchFingerprint(d: ProjectLaunchedData, given: readonly TaskSpec[] | undefined): string {
  return hashOf({ ...d, projectId: undefined, launchedAt: undefined, tasks: given?.map((t) => ({ key: t.key, goal: t.goal, acceptanceCriteria: t.acceptanceCriteria, dependsOn: t.dependsOn })) ?? null });
}

/** The idempotency key a task's attempt launches its run with. */
export function taskRunIdempotencyKey(projectId: string, key: string, attempt: number): string {
  return `project:${projectId}:task:${key}:attempt:${attempt}`;
}

/** Whether the project has ended for good (a project failed by its tasks can still be retried). */
export function projectIsOver(state: ProjectState): boolean {
  return state.status === 'completed' || state.status === 'cancelled' || (state.status === 'failed' && state.terminationReason !== 'TASKS_FAILED');
}

export function decideProject(command: ProjectCommand, state: ProjectState): ProjectEvent[] {
  switch (command.type) {
    case 'LaunchProject': {
      if (state.launched) {
        if (launchFingerprint(state.launched, state.planning?.source === 'user' ? state.tasks : undefined) !== launchFingerprint(command.data, command.tasks?.map(normaliseTask))) {
          throw new ProjectIdempotencyConflictError();
        }
        return [];
      }
      const events: ProjectEvent[] = [{ type: 'ProjectLaunched', data: command.data }];
      if (command.tasks) {
        const tasks = command.tasks.map(normaliseTask);
        const problem = taskGraphProblem(tasks, command.data.strategy);
        if (problem) throw new InvalidTaskGraphError(problem);
        events.push({ type: 'ProjectPlanned', data: { tasks, source: 'user', at: command.data.launchedAt } });
        return withConsequences(state, events, command.data.launchedAt);
      }
      return events;
    }
    case 'RecordPlan': {
      if (!state.launched || state.status !== 'planning') return [];
      const tasks = architectTasks(command.tasks);
      const problem = typeof tasks === 'string' ? tasks : taskGraphProblem(tasks, state.launched.strategy);
      if (problem || typeof tasks === 'string') return planningFailed(`the architect's task graph is not valid: ${problem}`, command.architect, command.at);
      return withConsequences(state, [{ type: 'ProjectPlanned', data: { tasks, source: 'architect', architect: command.architect, at: command.at } }], command.at);
    }
    case 'RecordPlanningFailed':
      if (!state.launched || state.status !== 'planning') return [];
      return planningFailed(command.reason, command.architect, command.at);
    case 'Advance': {
      if (state.status !== 'running') return [];
      const events: ProjectEvent[] = [];
      for (const task of state.tasks) {
        if (task.status !== 'running' || !task.runId) continue;
        const outcome = command.runOutcomes[task.runId];
        if (!outcome) continue;
        events.push({
          type: 'TaskEnded',
          data: {
            key: task.key,
            attempt: task.attempt,
            runId: task.runId,
            status: outcome.status === 'completed' ? 'completed' : 'failed',
            runStatus: outcome.status,
            ...(outcome.terminationReason ? { terminationReason: outcome.terminationReason } : {}),
            at: command.at,
          },
        });
      }
      return withConsequences(state, events, command.at);
    }
    case 'RecordTaskLaunchRefused': {
      const task = state.tasks.find((t) => t.key === command.key);
      if (state.status !== 'running' || !task || task.status !== 'running' || task.attempt !== command.attempt || !task.runId) return [];
      const ended: ProjectEvent = {
        type: 'TaskEnded',
        data: { key: task.key, attempt: task.attempt, runId: task.runId, status: 'failed', runStatus: 'not_launched', terminationReason: 'LAUNCH_REFUSED', message: command.reason, at: command.at },
      };
      return withConsequences(state, [ended], command.at);
    }
    case 'RetryTask': {
      requireLaunched(state);
      const task = state.tasks.find((t) => t.key === command.key);
      if (!task) throw new ProjectNotFoundError(`project ${state.projectId} has no task '${command.key}'`);
      if (projectIsOver(state) || state.status === 'awaiting_review' || state.status === 'planning') {
        throw new ProjectConflictError(`project ${state.projectId} is ${state.status}: its tasks cannot be retried`);
      }
      if (task.status !== 'failed') {
        const hint = task.status === 'skipped' ? ` (it waits for '${task.skippedBecause}': retry that task)` : '';
        throw new ProjectConflictError(`task '${task.key}' is ${task.status}: only a failed task can be retried${hint}`);
      }
      const reopened = dependentsOf(state.tasks, task.key).filter((k) => state.tasks.find((t) => t.key === k)!.status === 'skipped');
      return withConsequences(state, [{ type: 'TaskRetried', data: { key: task.key, attempt: task.attempt + 1, by: command.by, reopened, at: command.at } }], command.at);
    }
    case 'CancelProject': {
      requireLaunched(state);
      if (projectIsOver(state)) throw new ProjectConflictError(`project ${state.projectId} has ended (${state.status})`);
      const cancelledTasks = state.tasks.filter((t) => t.status === 'pending' || t.status === 'running').map((t) => t.key);
      return [{ type: 'ProjectEnded', data: { status: 'cancelled', reason: 'CANCELLED', by: command.by, ...(command.reason ? { message: command.reason } : {}), cancelledTasks, at: command.at } }];
    }
    case 'DecideProjectReview': {
      requireLaunched(state);
      if (state.status !== 'awaiting_review') throw new ProjectConflictError(`project ${state.projectId} is ${state.status}, not awaiting_review`);
      if (command.by === state.launched!.launchedBy && !state.launched!.reviewPolicy.allowLauncherToReview) {
        throw new ProjectSelfReviewError('you may not decide this review');
      }
      const ended: ProjectEndedData =
        command.decision === 'approve'
          ? { status: 'completed', reason: 'COMPLETED', by: command.by, at: command.at }
          : { status: 'failed', reason: 'REJECTED', by: command.by, message: command.reason, at: command.at };
      return [
        { type: 'ProjectReviewDecided', data: { decision: command.decision, by: command.by, reason: command.reason, at: command.at } },
        { type: 'ProjectEnded', data: ended },
      ];
    }
    default: {
      const never: never = command;
      throw new Error(`unknown project command ${JSON.stringify(never)}`);
    }
  }
}

function requireLaunched(state: ProjectState): void {
  if (!state.launched) throw new ProjectNotFoundError(`project ${state.projectId} not found`);
}

function planningFailed(reason: string, architect: ArchitectTurn | undefined, at: string): ProjectEvent[] {
  return [
    { type: 'ProjectPlanningFailed', data: { reason, ...(architect ? { architect } : {}), at } },
    { type: 'ProjectEnded', data: { status: 'failed', reason: 'PLANNING_FAILED', message: reason, at } },
  ];
}

/** The architect's `tasks` as task specs, or why they are not a list of tasks. */
function architectTasks(raw: unknown): TaskSpec[] | string {
  if (!Array.isArray(raw)) return 'tasks must be a list';
  const out: TaskSpec[] = [];
  for (const t of raw) {
    if (typeof t !== 'object' || t === null) return 'every task must be an object';
    const o = t as Record<string, unknown>;
    out.push(normaliseTask({ key: o.key as string, goal: o.goal as string, acceptanceCriteria: (o.acceptanceCriteria ?? []) as string[], dependsOn: (o.dependsOn ?? []) as string[] }));
  }
  return out;
}

/**
 * `events`, then what follows from them: dependents of a failed task skipped, the next tasks
 * started, and once nothing is pending or running, the review opened or the project ended.
 */
function withConsequences(state: ProjectState, events: ProjectEvent[], at: string): ProjectEvent[] {
  let s = events.reduce((acc, e) => evolveProject(acc, e), state);
  const out = [...events];
  const push = (e: ProjectEvent) => {
    out.push(e);
    s = evolveProject(s, e);
  };
  for (const e of events) {
    if (e.type !== 'TaskEnded' || e.data.status !== 'failed') continue;
    const keys = dependentsOf(s.tasks, e.data.key).filter((k) => s.tasks.find((t) => t.key === k)!.status === 'pending');
    if (keys.length > 0) push({ type: 'TasksSkipped', data: { keys, because: e.data.key, at } });
  }
  if (s.status !== 'running') return out;
  const launched = s.launched!;
  const states: Record<string, TaskStatus> = Object.fromEntries(s.tasks.map((t) => [t.key, t.status]));
  for (const key of nextTasksToStart(s.tasks, states, launched.strategy, launched.concurrency)) {
    const attempt = s.tasks.find((t) => t.key === key)!.attempt + 1;
    const idempotencyKey = taskRunIdempotencyKey(s.projectId, key, attempt);
    push({ type: 'TaskStarted', data: { key, attempt, runId: runIdForIdempotencyKey(launched.launchedBy, idempotencyKey), idempotencyKey, at } });
  }
  if (s.tasks.some((t) => t.status === 'pending' || t.status === 'running')) return out;
  if (s.tasks.every((t) => t.status === 'completed')) {
    if (launched.reviewPolicy.humanGate && !launched.reviewPolicy.perTask) push({ type: 'ProjectReviewOpened', data: { at } });
    else push({ type: 'ProjectEnded', data: { status: 'completed', reason: 'COMPLETED', at } });
  } else {
    const failed = s.tasks.filter((t) => t.status === 'failed').map((t) => t.key);
    push({ type: 'ProjectEnded', data: { status: 'failed', reason: 'TASKS_FAILED', message: `task(s) failed: ${failed.join(', ')}`, at } });
  }
  return out;
}

function updateTask(state: ProjectState, key: string, change: (t: TaskState) => TaskState): TaskState[] {
  return state.tasks.map((t) => (t.key === key ? change(t) : t));
}

/**
 * As a run's gate guard (attestation/decision-gate.ts): a project review decision without a valid
 * attestation is not acted on, nor is a project end at the review that no attested decision caused.
 */
function projectRefusal(s: ProjectState, event: ProjectEvent, at: RecordedPlace): GateRefusal | undefined {
  const position = at.position;
  if (event.type === 'ProjectReviewDecided') {
    const problem = decisionTrust().refusal(event.type, event.data, at);
    return problem ? { type: event.type, position, problem, decider: event.data.by, outcome: event.data.decision } : undefined;
  }
  if (event.type === 'ProjectEnded' && s.status === 'awaiting_review' && (event.data.reason === 'COMPLETED' || event.data.reason === 'REJECTED')) {
    const wanted = event.data.reason === 'COMPLETED' ? 'approve' : 'reject';
    if (s.review?.decision?.decision !== wanted) return { type: event.type, position, problem: 'no_decision' };
  }
  return undefined;
}

/** Folds one event into the project's state (returns a new state). */
export function evolveProject(state: ProjectState, event: ProjectEvent, recorded?: { revision: number; position?: number; streamId?: string }): ProjectState {
  const s: ProjectState = { ...state, revision: recorded?.revision ?? state.revision };
  const refusal = projectRefusal(s, event, { streamId: recorded?.streamId ?? '', revision: recorded?.revision ?? -1, position: recorded?.position ?? 0 });
  if (refusal) return { ...s, refused: [...(s.refused ?? []), refusal].slice(-20) };
  switch (event.type) {
    case 'ProjectLaunched':
      return { ...s, projectId: event.data.projectId, launched: event.data, status: 'planning', updatedAt: event.data.launchedAt };
    case 'ProjectPlanned':
      return {
        ...s,
        status: 'running',
        planning: { source: event.data.source, ...(event.data.architect ? { architect: event.data.architect } : {}) },
        tasks: event.data.tasks.map((t) => ({ ...t, status: 'pending', attempt: 0, runIds: [] })),
        updatedAt: event.data.at,
      };
    case 'ProjectPlanningFailed':
      return { ...s, planning: { source: 'architect', ...(event.data.architect ? { architect: event.data.architect } : {}), failure: event.data.reason }, updatedAt: event.data.at };
    case 'TaskStarted':
      return {
        ...s,
        tasks: updateTask(s, event.data.key, (t) => ({
          ...t,
          status: 'running',
          attempt: event.data.attempt,
          runId: event.data.runId,
          runIds: [...t.runIds, event.data.runId],
          runStatus: undefined,
          terminationReason: undefined,
          skippedBecause: undefined,
        })),
        updatedAt: event.data.at,
      };
    case 'TaskEnded':
      return {
        ...s,
        tasks: updateTask(s, event.data.key, (t) => ({ ...t, status: event.data.status, runStatus: event.data.runStatus, terminationReason: event.data.terminationReason })),
        updatedAt: event.data.at,
      };
    case 'TasksSkipped':
      return {
        ...s,
        tasks: s.tasks.map((t) => (event.data.keys.includes(t.key) ? { ...t, status: 'skipped', skippedBecause: event.data.because } : t)),
        updatedAt: event.data.at,
      };
    case 'TaskRetried': {
      const reopened = new Set([event.data.key, ...event.data.reopened]);
      return {
        ...s,
        status: 'running',
        terminationReason: undefined,
        message: undefined,
        endedAt: undefined,
        endedBy: undefined,
        tasks: s.tasks.map((t) => (reopened.has(t.key) ? { ...t, status: 'pending', skippedBecause: undefined } : t)),
        updatedAt: event.data.at,
      };
    }
    case 'ProjectReviewOpened':
      return { ...s, status: 'awaiting_review', review: { openedAt: event.data.at }, updatedAt: event.data.at };
    case 'ProjectReviewDecided':
      return { ...s, review: { openedAt: s.review?.openedAt ?? event.data.at, decision: event.data }, updatedAt: event.data.at };
    case 'ProjectEnded': {
      const cancelled = new Set(event.data.cancelledTasks ?? []);
      return {
        ...s,
        status: event.data.status,
        terminationReason: event.data.reason,
        message: event.data.message,
        endedAt: event.data.at,
        ...(event.data.by ? { endedBy: event.data.by } : {}),
        tasks: s.tasks.map((t) => (cancelled.has(t.key) ? { ...t, status: 'cancelled' } : t)),
        updatedAt: event.data.at,
      };
    }
    default: {
      // An event of a later version: skipped, never guessed at.
      void (event satisfies never);
      return s;
    }
  }
}

/** Folds a project's events. */
export function foldProject(events: readonly ({ revision: number } & ProjectEvent)[], projectId = ''): ProjectState {
  return events.reduce((s, e) => evolveProject(s, e, e), initialProjectState(projectId));
}

/** A project as the API and the CLI show it. */
export interface ProjectView {
  projectId: string;
  goal: string;
  acceptanceCriteria: string[];
  strategy: ProjectStrategy;
  concurrency: number;
  reviewPolicy: ProjectLaunchedData['reviewPolicy'];
  status: ProjectState['status'];
  terminationReason?: string;
  message?: string;
  launchedBy: string;
  launchedAt: string;
  endedAt?: string;
  endedBy?: string;
  planning?: ProjectState['planning'];
  review?: ProjectState['review'];
  tasks: TaskState[];
  /** Every task run of the project, in the order they were started. */
  runIds: string[];
  revision: number;
}

export function projectView(state: ProjectState): ProjectView {
  const l = state.launched!;
  return {
    projectId: state.projectId,
    goal: l.goal,
    acceptanceCriteria: l.acceptanceCriteria,
    strategy: l.strategy,
    concurrency: l.concurrency,
    reviewPolicy: l.reviewPolicy,
    status: state.status,
    ...(state.terminationReason ? { terminationReason: state.terminationReason } : {}),
    ...(state.message ? { message: state.message } : {}),
    launchedBy: l.launchedBy,
    launchedAt: l.launchedAt,
    ...(state.endedAt ? { endedAt: state.endedAt } : {}),
    ...(state.endedBy ? { endedBy: state.endedBy } : {}),
    ...(state.planning ? { planning: state.planning } : {}),
    ...(state.review ? { review: state.review } : {}),
    tasks: state.tasks,
    runIds: state.tasks.flatMap((t) => t.runIds).sort((a, b) => startOrder(state, a) - startOrder(state, b)),
    revision: state.revision,
  };
}

function startOrder(state: ProjectState, runId: string): number {
  for (const t of state.tasks) {
    const i = t.runIds.indexOf(runId);
    if (i >= 0) return i * 1000 + state.tasks.indexOf(t);
  }
  return 0;
}
