import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { effectOfFile, hashFile } from '../../../src/team/workspace/workspace-log';
import { tempDir } from '../../support/temp-dir';

/** What a file's effect records, read from a real directory: its hash, size and executable bit. */
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('hashing the files of a workspace', () => {
  const dir = tempDir('triad-hash-');
  afterAll(() => dir.remove());

  it.each([
    ['empty', Buffer.alloc(0)],
    ['one byte', Buffer.from('x')],
    ['text under one read', Buffer.from('hello\nworld\n')],
    ['exactly one read (64 KiB)', Buffer.alloc(64 * 1024, 7)],
    ['several reads and a tail', Buffer.from(Array.from({ length: 64 * 1024 * 3 + 123 }, (_, i) => (i * 31) % 256))],
  ])('given a file (%s), then its hash and size are those of its bytes', async (_name, bytes) => {
    const file = join(dir.path, `f-${bytes.length}`);
    writeFileSync(file, bytes);
    expect(await hashFile(file)).toEqual({ sha256: sha256(bytes), size: bytes.length });
    // The named file's effect: the same hash, and the bytes it was hashed from, to be stored.
    const { effect, bytes: read } = await effectOfFile(dir.path, `f-${bytes.length}`);
    expect(effect).toEqual({ path: `f-${bytes.length}`, sha256: sha256(bytes), size: bytes.length });
    expect(read?.equals(bytes)).toBe(true);
  });

  it('given an executable file, then it is recorded as executable', async () => {
    const file = join(dir.path, 'run.sh');
    writeFileSync(file, '#!/bin/sh\n');
    chmodSync(file, 0o755);
    expect((await hashFile(file))?.executable).toBe(true);
    expect((await effectOfFile(dir.path, 'run.sh')).effect).toMatchObject({ path: 'run.sh', executable: true });
  });

  it('given a file over the cap, then its effect is unrecorded with its hash, and no bytes are kept', async () => {
    const bytes = Buffer.alloc(5000, 1);
    writeFileSync(join(dir.path, 'big.bin'), bytes);
    const { effect, bytes: read } = await effectOfFile(dir.path, 'big.bin', 4096);
    expect(effect).toMatchObject({ path: 'big.bin', sha256: sha256(bytes), size: 5000 });
    expect('unrecorded' in effect).toBe(true);
    expect(read).toBeUndefined();
  });

  it('given no file, a directory or a link at the path, then it is not a file: gone from the workspace', async () => {
    mkdirSync(join(dir.path, 'sub'));
    symlinkSync('/etc/hostname', join(dir.path, 'link'));
    for (const p of ['missing.txt', 'sub', 'link']) {
      expect(await hashFile(join(dir.path, p))).toBeUndefined();
      expect((await effectOfFile(dir.path, p)).effect).toEqual({ path: p, deleted: true });
    }
  });
});
