import { foldProject as fold, taskRunIdempotencyKey } from '../../src/projects/domain/project-decider';
import type { ProjectEvent, ProjectState } from '../../src/projects/domain/project-events';
import { runIdForIdempotencyKey } from '../../src/team/domain/run-id';

/** A project's state from its recorded events. */
export function foldProject(events: Array<ProjectEvent & { revision: number }>, projectId: string): ProjectState {
  return fold(events, projectId);
}

/** The run id of a task's attempt, for a project launched by the crash child (user:crash-test). */
export function runIdForIdempotencyKeyOf(projectId: string, key: string, attempt: number, launchedBy = 'user:crash-test'): string {
  return runIdForIdempotencyKey(launchedBy, taskRunIdempotencyKey(projectId, key, attempt));
}
