import { sha256Hex } from '../shared/canonical-json';
import { unifiedDiff, type DiffBudget } from './unified-diff';
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
  /** `omitted`: why the patch leaves this file out (too large to show, or the answer's limit reached); compare its sha256. */
  changes: Array<{ path: string; change: FileChangeKind; omitted?: string }>;
  /** A unified diff of every changed file not omitted, in path order (empty when nothing changed). */
  patch: string;
}

/**
 * What one answer's diffs may cost, whatever a run wrote (a workspace may hold 64 MiB): a file
 * larger than `fileBytes` (its two versions together) is listed but not diffed; the patch stops
 * growing at `patchBytes`; matching lines spends at most `cells` table cells over all the files.
 * Past them a change is still listed, with why its patch is left out.
 */
export const DIFF_LIMITS = { fileBytes: 512 * 1024, patchBytes: 1024 * 1024, cells: 8_000_000 } as const;

/** One answer's budget: the diffs of one workspace view or one review view share it. */
export function diffBudget(): DiffBudget & { patchBytes: number } {
  return { cells: DIFF_LIMITS.cells, patchBytes: DIFF_LIMITS.patchBytes };
}

export function fileEntries(files: readonly WorkspaceFile[]): WorkspaceFileEntry[] {
  return files.map((f) => ({ path: f.path, size: Buffer.byteLength(f.content, 'utf8'), sha256: sha256Hex(f.content) }));
}

/** `before` undefined: the start, an empty workspace. */
export function workspaceChanges(
  after: readonly WorkspaceFile[],
  before: { iteration: number; files: readonly WorkspaceFile[] } | undefined,
  against: 'previous' | 'start',
  budget: DiffBudget & { patchBytes: number } = diffBudget(),
): WorkspaceChanges {
  const old = new Map((before?.files ?? []).map((f) => [f.path, f.content]));
  const now = new Map(after.map((f) => [f.path, f.content]));
  const paths = [...new Set([...old.keys(), ...now.keys()])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const changes: WorkspaceChanges['changes'] = [];
  let patch = '';
  for (const path of paths) {
    const a = old.get(path);
    const b = now.get(path);
    if (a === b) continue;
    const change = { path, change: a === undefined ? ('added' as const) : b === undefined ? ('removed' as const) : ('changed' as const) };
    if (Buffer.byteLength(a ?? '', 'utf8') + Buffer.byteLength(b ?? '', 'utf8') > DIFF_LIMITS.fileBytes) {
      changes.push({ ...change, omitted: `larger than ${DIFF_LIMITS.fileBytes / 1024} KiB to diff` });
      continue;
    }
    const filePatch = budget.patchBytes > 0 ? unifiedDiff(path, a, b, budget) : undefined;
    if (filePatch === undefined || filePatch.length > budget.patchBytes) {
      changes.push({ ...change, omitted: `the diff reached its ${DIFF_LIMITS.patchBytes / 1024 / 1024} MiB limit` });
      budget.patchBytes = 0;
      continue;
    }
    budget.patchBytes -= filePatch.length;
    changes.push(change);
    patch += filePatch;
  }
  return { against, ...(before ? { fromIteration: before.iteration } : {}), changes, patch };
}
