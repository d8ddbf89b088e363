import { sha256Hex } from '../shared/canonical-json';
import { unifiedDiff } from './unified-diff';
import type { WorkspaceFile } from './workspace-history';

/**
 * What a reviewer reads of a workspace: its files with their size and hash, and what changed
 * between two of its states (the iteration before, or the start: no files) as a list and as one
 * unified diff. Pure.
 */

export interface WorkspaceFileEntry {
  path: string;
  /** Bytes of its content (UTF-8). */
  size: number;
  /** sha256 of its content, hex. */
  sha256: string;
}

export type FileChangeKind = 'added' | 'removed' | 'changed';

export interface WorkspaceChanges {
  /** What the files are compared with: the iteration before, or the start (an empty workspace). */
  against: 'previous' | 'start';
  /** The iteration compared with (`against: previous`; absent for the first iteration: the start). */
  fromIteration?: number;
  changes: Array<{ path: string; change: FileChangeKind }>;
  /** A unified diff of every changed file, in path order (empty when nothing changed). */
  patch: string;
}

export function fileEntries(files: readonly WorkspaceFile[]): WorkspaceFileEntry[] {
  return files.map((f) => ({ path: f.path, size: Buffer.byteLength(f.content, 'utf8'), sha256: sha256Hex(f.content) }));
}

/** `before` undefined: the start, an empty workspace. */
export function workspaceChanges(after: readonly WorkspaceFile[], before: { iteration: number; files: readonly WorkspaceFile[] } | undefined, against: 'previous' | 'start'): WorkspaceChanges {
  const old = new Map((before?.files ?? []).map((f) => [f.path, f.content]));
  const now = new Map(after.map((f) => [f.path, f.content]));
  const paths = [...new Set([...old.keys(), ...now.keys()])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const changes: WorkspaceChanges['changes'] = [];
  let patch = '';
  for (const path of paths) {
    const a = old.get(path);
    const b = now.get(path);
    if (a === b) continue;
    changes.push({ path, change: a === undefined ? 'added' : b === undefined ? 'removed' : 'changed' });
    patch += unifiedDiff(path, a, b);
  }
  return { against, ...(before ? { fromIteration: before.iteration } : {}), changes, patch };
}
