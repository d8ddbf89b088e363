import type { EventStore } from '../events/event-store/event-store.port';
import { loadRunHistory } from '../team/runs/run-history';
import { RunNotFoundError } from '../team/domain/run-decider';
import { loadBlob } from '../team/workspace/workspace-log';
import { NotFoundError } from '../shared/errors';
import { resolveBlobContents, workspaceHistory, type WorkspaceFile } from './workspace-history';

/**
 * A run's workspace as its events left it at the end of an iteration, with the iteration before:
 * what `GET /v1/runs/:id/workspace` serves, the A2A task's artifacts and the MCP diff tool read.
 */

/** `GET /v1/runs/:id/workspace`: the files at the end of an iteration and of the one before, for a review's diff. */
export interface WorkspaceView {
  runId: string;
  iteration: number;
  /** Whether the executor had submitted this iteration's work (otherwise: the files so far). */
  submitted: boolean;
  files: WorkspaceFile[];
  previous?: { iteration: number; files: WorkspaceFile[] };
  /** The iterations with files to show. */
  iterations: number[];
  /** Tool calls whose effects on the workspace the events do not record, by tool. */
  notReproduced: Record<string, number>;
}

export class IterationNotFoundError extends NotFoundError {
  override name = 'IterationNotFoundError';
}

/** The workspace's text files at the end of `iteration` (default: the latest), rebuilt from the run's events. */
export async function readWorkspaceView(store: EventStore, runId: string, iteration?: number): Promise<WorkspaceView> {
  const history = await loadRunHistory(store, runId);
  if (history.length === 0) throw new RunNotFoundError(runId);
  const { iterations, notReproduced } = await resolveBlobContents(workspaceHistory(history), async (sha256) => {
    const blob = await loadBlob(store, sha256);
    return blob.ok ? blob.bytes : undefined;
  });
  const index = iteration === undefined ? iterations.length - 1 : iterations.findIndex((s) => s.iteration === iteration);
  if (index < 0) throw new IterationNotFoundError(`run ${runId} has no files for iteration ${iteration}`);
  const at = iterations[index];
  const before = index > 0 ? iterations[index - 1] : undefined;
  return {
    runId,
    iteration: at.iteration,
    submitted: at.submitted,
    files: at.files,
    ...(before ? { previous: { iteration: before.iteration, files: before.files } } : {}),
    iterations: iterations.map((s) => s.iteration),
    notReproduced,
  };
}
