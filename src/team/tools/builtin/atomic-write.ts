import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { errnoCode } from '../workspace';

/**
 * Writes a sibling temp file and renames it over the target (write_file, edit_file): readers see
 * the old or the new content, never a mix. Keeps an existing file's mode. Returns the bytes written.
 */
export async function writeAtomically(file: string, content: string): Promise<number> {
  const existing = await fs.stat(file).catch((err: unknown) => {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  });
  if (existing?.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
  // Not derived from the file name: a long name plus a suffix could exceed the file system's limit.
  const temp = path.join(path.dirname(file), `.triad-${randomBytes(8).toString('hex')}.tmp`);
  const data = Buffer.from(content, 'utf8');
  const handle = await fs.open(temp, 'wx', existing ? existing.mode & 0o7777 : 0o666);
  try {
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, file);
  } catch (err) {
    await fs.rm(temp, { force: true });
    throw err;
  }
  return data.length;
}
