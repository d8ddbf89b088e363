import type { CommandContext, CommandPath, StreamModel } from '../events/command-handling';
import type { EventStore } from '../events/event-store/event-store.port';
import { evolveProject, initialProjectState, projectDecider, ProjectNotFoundError, type ProjectCommand } from './domain/project-decider';
import { PROJECT_EVENT_TYPES, toProjectStreamId, type ProjectEvent, type ProjectLaunchedData, type ProjectState } from './domain/project-events';
import type { TaskSpec } from './domain/task-graph';

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

/**
 * Records a project's launch (and, with tasks, its plan and first task starts) in one append.
 * An invalid graph is refused before anything is written. An idempotent retry finds the project; the same key for another project is a conflict.
 */
export async function launchProject(path: CommandPath, data: ProjectLaunchedData, tasks: TaskSpec[] | undefined): Promise<{ projectId: string; acceptedAt: string; created: boolean }> {
  // Checked before the stream is read, so a bad graph writes nothing whatever the store holds.
  const command: ProjectCommand = { type: 'LaunchProject', data, ...(tasks ? { tasks } : {}) };
  projectDecider.decide(command, initialProjectState(data.projectId));
  const { state, events } = await path.handle(
    projectStream(path.store, data.projectId),
    (state) => projectDecider.decide(command, state),
    projectContext(data.projectId, data.launchedBy),
    { assumeNew: true, maxAttempts: 2 },
  );
  return { projectId: data.projectId, acceptedAt: state.launched!.launchedAt, created: events.length > 0 };
}
