import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * A hash of the work a reviewer sees: every regular file of the workspace (sorted relative path
 * and content) and the executor's summary. Symlinks are not followed.
 */
export async function workspaceDigest(workspace: string, summary: string): Promise<string> {
  const hash = createHash('sha256');
  hash.update(`summary\0${summary}\0`);
  const files = await listFiles(workspace, '');
  for (const rel of files.sort()) {
    const content = await readFile(join(workspace, rel));
    hash.update(`file\0${rel}\0${createHash('sha256').update(content).digest('hex')}\0`);
  }
  return `sha256:${hash.digest('hex')}`;
}

async function listFiles(root: string, rel: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(join(root, rel), { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: string[] = [];
  for (const e of entries) {
    const path = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(root, path)));
    else if (e.isFile()) out.push(path);
  }
  return out;
}
