import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { errnoCode, toWorkspacePath } from '../workspace';

/** The directory walk list_files and search_files share. */

export interface WalkEntry {
  rel: string;
  kind: 'dir' | 'file' | 'link' | 'other';
  abs: string;
}

export interface WalkResult {
  entries: WalkEntry[];
  truncated: boolean;
}

/** Directories a recursive listing or search does not descend into (listed, not walked). */
const UNWALKED_DIRS = new Set(['.git', 'node_modules']);
const MAX_WALK_VISITS = 100_000;

/** Depth-first, siblings sorted; never follows symbolic links; stops after `max` entries. */
export async function walk(
  realWorkspace: string,
  start: string,
  options: { recursive: boolean; max: number; include?: (entry: WalkEntry) => boolean; signal?: AbortSignal },
): Promise<WalkResult> {
  const entries: WalkEntry[] = [];
  const include = options.include ?? (() => true);
  let truncated = false;
  // Bounds the walk itself too: a tree of empty directories yields no entries to count for a search.
  let visited = 0;

  const visit = async (dir: string): Promise<boolean> => {
    const dirents = await fs.readdir(dir, { withFileTypes: true });
    dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const dirent of dirents) {
      if (options.signal?.aborted) return false;
      visited += 1;
      if (visited > MAX_WALK_VISITS) {
        truncated = true;
        return false;
      }
      const abs = path.join(dir, dirent.name);
      const kind: WalkEntry['kind'] = dirent.isSymbolicLink()
        ? 'link'
        : dirent.isDirectory()
          ? 'dir'
          : dirent.isFile()
            ? 'file'
            : 'other';
      const entry: WalkEntry = { rel: toWorkspacePath(realWorkspace, abs), kind, abs };
      if (include(entry)) {
        if (entries.length >= options.max) {
          truncated = true;
          return false;
        }
        entries.push(entry);
      }
      if (options.recursive && kind === 'dir' && !UNWALKED_DIRS.has(dirent.name)) {
        try {
          if (!(await visit(abs))) return false;
        } catch (err) {
          // An unreadable subdirectory is skipped, not fatal to the listing.
          if (!errnoCode(err)) throw err;
        }
      }
    }
    return true;
  };

  await visit(start);
  return { entries, truncated };
}
