import { hashOf } from '../shared/canonical-json';
import type { CommandContext, CommandPath, StreamModel } from '../events/command-handling';
import type { EventStore } from '../events/event-store.port';
import { decideProject, evolveProject, initialProjectState, ProjectNotFoundError } from './domain/project-decider';
import { PROJECT_EVENT_TYPES, toProjectStreamId, type ProjectEvent, type ProjectLaunchedData, type ProjectState } from './domain/project-events';
import { ConflictError } from '../shared/errors';
import { normaliseTask, type TaskSpec } from './domain/task-graph';

/** A project's stream for the command path: read whole and folded (projects are short streams). */
export function projectStream(store: EventStore, projectId: string): StreamModel<ProjectState, ProjectEvent> {
  return {
    streamId: toProjectStreamId(projectId),
    load: () => loadProject(store, projectId),
    initial: () => initialProjectState(projectId),
    evolve: (state, event) => evolveProject(state, event, event),
  };
}

/** Everything written to a project is correlated by its id. */
export function projectContext(projectId: string, actor: string): CommandContext {
  return { correlationId: projectId, actor };
}

export async function loadProject(store: EventStore, projectId: string): Promise<ProjectState> {
  let state = initialProjectState(projectId);
  for await (const page of store.readStreamPages(toProjectStreamId(projectId))) {
    for (const e of page) {
      // An event of an unknown type (a later version) is skipped, never guessed at.
      if ((PROJECT_EVENT_TYPES as readonly string[]).includes(e.type)) state = evolveProject(state, e as unknown as ProjectEvent, e);
      else state = { ...state, revision: e.revision };
    }
  }
  return state;
}

/** A project that must exist (404 otherwise). */
export async function existingProject(store: EventStore, projectId: string): Promise<ProjectState> {
  const state = await loadProject(store, projectId);
  if (!state.launched) throw new ProjectNotFoundError(`project ${projectId} not found`);
  return state;
}

/** The project id an idempotency key stands for: the same launcher and key always name the same project. */
export function projectIdForIdempotencyKey(launchedBy: string, key: string): string {
  return `prj_${hashOf({ launchedBy, key, kind: 'project' }).slice(0, 24)}`;
}

export class ProjectIdempotencyConflictError extends ConflictError {
  override readonly name = 'ProjectIdempotencyConflictError';
  constructor() {
    super('this idempotency key was already used for a different project');
  }
}

/**
 * Records a project's launch (and, with tasks, its plan and first task starts) in one append.
 * An invalid graph is refused before anything is written. An idempotent retry finds the project.
 */
export async function launchProject(path: CommandPath, data: ProjectLaunchedData, tasks: TaskSpec[] | undefined): Promise<{ projectId: string; acceptedAt: string; created: boolean }> {
  // Checked before the stream is read, so a bad graph writes nothing whatever the store holds.
  decideProject({ type: 'LaunchProject', data, ...(tasks ? { tasks } : {}) }, initialProjectState(data.projectId));
  // What makes two launches the same request: everything but time and id, and the tasks given.
  const fingerprint = (d: ProjectLaunchedData, given: TaskSpec[] | undefined) =>
    hashOf({ ...d, projectId: undefined, launchedAt: undefined, tasks: given?.map((t) => ({ key: t.key, goal: t.goal, acceptanceCriteria: t.acceptanceCriteria, dependsOn: t.dependsOn })) ?? null });
  const givenTasks = tasks?.map(normaliseTask);
  const { state, events } = await path.handle(
    projectStream(path.store, data.projectId),
    (state) => {
      const recordedTasks = state.planning?.source === 'user' ? state.tasks : undefined;
      if (state.launched && fingerprint(state.launched, recordedTasks) !== fingerprint(data, givenTasks)) throw new ProjectIdempotencyConflictError();
      return decideProject({ type: 'LaunchProject', data, ...(tasks ? { tasks } : {}) }, state);
    },
    projectContext(data.projectId, data.launchedBy),
    { assumeNew: true, maxAttempts: 2 },
  );
  return { projectId: data.projectId, acceptedAt: state.launched!.launchedAt, created: events.length > 0 };
}
