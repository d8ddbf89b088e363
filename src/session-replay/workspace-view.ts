import type { EventStore } from '../events/event-store/event-store.port';
import { RunNotFoundError } from '../team/domain/run-decider';
import { loadRunHistory } from '../team/runs/run-history';
import { loadBlob } from '../team/workspace/workspace-log';
import { NotFoundError } from '../shared/errors';
import { resolveBlobContents, workspaceHistory, type WorkspaceFile, type WorkspaceHistory } from './workspace-history';
import { fileEntries, workspaceChanges, type WorkspaceChanges, type WorkspaceFileEntry } from './workspace-diff';
import type { RecordedEvent } from '../events/event-store/event-store.port';

/**
 * `GET /v1/runs/:id/workspace` and `triad runs workspace`: the files at the end of an iteration and
 * of the one before, rebuilt from the run's events, with a diff against the iteration before or the
 * start when asked.
 */
export interface WorkspaceView {
  runId: string;
  iteration: number;
  /** Whether the executor had submitted this iteration's work (otherwise: the files so far). */
  submitted: boolean;
  files: Array<WorkspaceFile & WorkspaceFileEntry>;
  previous?: { iteration: number; files: WorkspaceFile[] };
  /** The iterations with files to show. */
  iterations: number[];
  /** Tool calls whose effects on the workspace the events do not record, by tool. */
  notReproduced: Record<string, number>;
  /** With `?diff=previous|start`: what changed since then. */
  diff?: WorkspaceChanges;
}

export class WorkspaceIterationNotFoundError extends NotFoundError {
  override readonly name = 'WorkspaceIterationNotFoundError';
  constructor(runId: string, iteration: number) {
    super(`run ${runId} has no files for iteration ${iteration}`);
  }
}

/** The workspace at the end of each iteration, blob contents read from the store. */
export async function resolvedWorkspaceHistory(store: EventStore, history: readonly RecordedEvent[]): Promise<WorkspaceHistory> {
  return resolveBlobContents(workspaceHistory(history), async (sha256) => {
    const blob = await loadBlob(store, sha256);
    return blob.ok ? blob.bytes : undefined;
  });
}

/** `iteration` undefined: the latest with files. */
export async function loadWorkspaceView(store: EventStore, runId: string, options: { iteration?: number; diff?: 'previous' | 'start' } = {}): Promise<WorkspaceView> {
  const history = await loadRunHistory(store, runId);
  if (history.length === 0) throw new RunNotFoundError(runId);
  const { iterations, notReproduced } = await resolvedWorkspaceHistory(store, history);
  const wanted = options.iteration;
  const index = wanted === undefined ? iterations.length - 1 : iterations.findIndex((s) => s.iteration === wanted);
  if (index < 0) throw new WorkspaceIterationNotFoundError(runId, wanted ?? 0);
  const at = iterations[index];
  const before = index > 0 ? iterations[index - 1] : undefined;
  const entries = fileEntries(at.files);
  return {
    runId,
    iteration: at.iteration,
    submitted: at.submitted,
    files: at.files.map((f, i) => ({ ...f, ...entries[i] })),
    ...(before ? { previous: { iteration: before.iteration, files: before.files } } : {}),
    iterations: iterations.map((s) => s.iteration),
    notReproduced,
    ...(options.diff ? { diff: workspaceChanges(at.files, options.diff === 'previous' ? before : undefined, options.diff) } : {}),
  };
}
