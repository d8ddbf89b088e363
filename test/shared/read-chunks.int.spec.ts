import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readChunks } from '../../src/shared/read-chunks';
import { tempDir } from '../support/temp-dir';

/** Reading a file chunk by chunk into one reused buffer, sized to the file as it was when opened. */
describe('readChunks', () => {
  const dir = tempDir('triad-chunks-');
  afterAll(() => dir.remove());

  const readAll = async (file: string, size: number) => {
    const handle = await open(file, 'r');
    const sizes: number[] = [];
    const hash = createHash('sha256');
    try {
      const read = await readChunks(handle, size, (chunk) => {
        sizes.push(chunk.length);
        hash.update(chunk);
      });
      return { read, sizes, sha256: hash.digest('hex') };
    } finally {
      await handle.close();
    }
  };
  const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

  it('given a small file, then one read takes it all', async () => {
    const bytes = Buffer.from('one\ntwo\n');
    writeFileSync(join(dir.path, 'small'), bytes);
    expect(await readAll(join(dir.path, 'small'), bytes.length)).toEqual({ read: bytes.length, sizes: [bytes.length], sha256: sha256(bytes) });
  });

  it('given a file that grew after its size was taken (it was empty), then it is read whole in 64 KiB chunks after the first', async () => {
    const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 13) % 256));
    writeFileSync(join(dir.path, 'grown'), bytes);
    const { read, sizes, sha256: got } = await readAll(join(dir.path, 'grown'), 0);
    expect(read).toBe(bytes.length);
    expect(got).toBe(sha256(bytes));
    // 8 KiB first (the smallest buffer), then 64 KiB reads: not one byte at a time.
    expect(sizes[0]).toBe(8 * 1024);
    expect(sizes.length).toBeLessThanOrEqual(1 + Math.ceil((bytes.length - 8 * 1024) / (64 * 1024)) + 1);
  });

  it('given a caller that stops, then nothing more is read', async () => {
    const bytes = Buffer.alloc(200_000, 1);
    writeFileSync(join(dir.path, 'stop'), bytes);
    const handle = await open(join(dir.path, 'stop'), 'r');
    try {
      let calls = 0;
      const read = await readChunks(handle, bytes.length, () => {
        calls++;
        return false;
      });
      expect(calls).toBe(1);
      expect(read).toBe(64 * 1024);
    } finally {
      await handle.close();
    }
  });

  it('given an empty file, then nothing is handed over', async () => {
    writeFileSync(join(dir.path, 'empty'), '');
    expect(await readAll(join(dir.path, 'empty'), 0)).toEqual({ read: 0, sizes: [], sha256: sha256(Buffer.alloc(0)) });
  });
});
