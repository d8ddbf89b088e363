import type { RecordedEvent } from '../events/event-store/event-store.port';
import { applyEdit, hasNoOwnEffects } from '../team/workspace/workspace-effects';
import type { FileEffect } from '../team/domain/run-events';

/**
 * The workspace's files as the executor left them at the end of each iteration, rebuilt from a
 * run's events alone: every successful `write_file` and `edit_file` call re-applied in memory, in
 * order, and the recorded file effects of other tools (`run_command`, MCP tools: see
 * src/team/workspace/) applied as references to their content-addressed blobs (`sha256`), which the
 * caller reads (`resolveBlobContents`). Changes the events do not record (calls from before effects
 * were recorded, contents over the cap) are named, not guessed at.
 */

export interface WorkspaceFile {
  path: string;
  content: string;
  /** Set until `resolveBlobContents` replaces it with the blob's text: a file a tool other than write_file/edit_file wrote. */
  sha256?: string;
}

export interface WorkspaceSnapshot {
  iteration: number;
  /** Whether the executor submitted its work for this iteration (otherwise: the files so far). */
  submitted: boolean;
  files: WorkspaceFile[];
}

export interface WorkspaceHistory {
  iterations: WorkspaceSnapshot[];
  /** Tool calls that changed the workspace in ways the events do not record (`run_command: 2`). */
  notReproduced: Record<string, number>;
}

type Content = string | { sha256: string };

export function workspaceHistory(history: readonly RecordedEvent[]): WorkspaceHistory {
  const files = new Map<string, Content>();
  const requested = new Map<string, { name: string; input: Record<string, unknown> }>();
  const notReproduced: Record<string, number> = {};
  const snapshots = new Map<number, WorkspaceSnapshot>();
  let iteration = 1;
  const snapshot = (submitted: boolean): WorkspaceSnapshot => ({
    iteration,
    submitted,
    files: [...files.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([path, content]) => (typeof content === 'string' ? { path, content } : { path, content: '', sha256: content.sha256 })),
  });
  // Recorded effects: the contents are blobs (an edit of a blob-backed file lands here too).
  const applyRecorded = (tool: string, effects: FileEffect[]): void => {
    let unknown = false;
    for (const effect of effects) {
      if ('deleted' in effect) files.delete(effect.path);
      else if ('unrecorded' in effect) unknown = true;
      else files.set(effect.path, { sha256: effect.sha256 });
    }
    if (unknown) notReproduced[tool] = (notReproduced[tool] ?? 0) + 1;
  };
  for (const e of history) {
    const d = e.data as Record<string, unknown>;
    if (e.type === 'IterationStarted') iteration = d.iteration as number;
    else if (e.type === 'ToolCallRequested') requested.set(d.toolUseId as string, { name: d.name as string, input: d.input as Record<string, unknown> });
    else if (e.type === 'ToolCallCompleted' && !d.isError) {
      const call = requested.get(d.toolUseId as string);
      if (!call) continue;
      const path = typeof call.input.path === 'string' ? call.input.path.replace(/^\.\//, '') : undefined;
      const current = path === undefined ? undefined : files.get(path);
      if (call.name === 'write_file' && path !== undefined && typeof call.input.content === 'string') files.set(path, call.input.content);
      else if (call.name === 'edit_file' && path !== undefined && typeof current !== 'object' && applyEdit(current ?? '', call.input) !== undefined) {
        files.set(path, applyEdit(current ?? '', call.input)!);
      } else if (Array.isArray(d.files)) applyRecorded(call.name, d.files as FileEffect[]);
      else if (!hasNoOwnEffects(call.name)) notReproduced[call.name] = (notReproduced[call.name] ?? 0) + 1;
    } else if (e.type === 'SubAgentToolCompleted' && !d.isError) {
      // A sub-agent works in the run's workspace: its calls record their effects too.
      if (Array.isArray(d.files)) applyRecorded(d.name as string, d.files as FileEffect[]);
      else if (!hasNoOwnEffects(d.name as string)) notReproduced[d.name as string] = (notReproduced[d.name as string] ?? 0) + 1;
    } else if (e.type === 'WorkSubmitted') snapshots.set(d.iteration as number, { ...snapshot(true), iteration: d.iteration as number });
  }
  if (!snapshots.has(iteration) && (files.size > 0 || snapshots.size === 0)) snapshots.set(iteration, snapshot(false));
  return { iterations: [...snapshots.values()].sort((a, b) => a.iteration - b.iteration), notReproduced };
}

/** Replaces the blob references of `history`'s files with their text (a blob that cannot be read: a note). */
export async function resolveBlobContents(history: WorkspaceHistory, load: (sha256: string) => Promise<Buffer | undefined>): Promise<WorkspaceHistory> {
  const cache = new Map<string, string>();
  for (const snapshot of history.iterations) {
    for (const file of snapshot.files) {
      if (file.sha256 === undefined) continue;
      let text = cache.get(file.sha256);
      if (text === undefined) {
        const bytes = await load(file.sha256);
        text = bytes === undefined ? `(content ${file.sha256} is not in the event store)` : bytes.toString('utf8');
        cache.set(file.sha256, text);
      }
      file.content = text;
      delete file.sha256;
    }
  }
  return history;
}
