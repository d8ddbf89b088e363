import type { FileHandle } from 'node:fs/promises';

/** The largest read: 64 KiB, as Node's own streams read. */
const MAX_CHUNK = 64 * 1024;
/** The smallest: a file's first read always covers what a binary sniff looks at (8 KiB). */
const MIN_CHUNK = 8 * 1024;

/**
 * Reads an open regular file from its start, chunk by chunk, into one reused buffer that is not
 * zeroed (a chunk is the bytes read, nothing more; it is valid until the next one, so a caller that
 * keeps bytes copies them). The buffer is sized to `size`, the file's size when it was opened (one
 * byte over it, so that a small file takes one read), and grows to 64 KiB once a read fills it (the
 * file grew meanwhile). A short read at or past `size` is the end, without a read of nothing to
 * say so. `onChunk` returns false to stop.
 *
 * Hand-written: a file handle and one buffer cost less than a read stream's machinery, which
 * dominated reading the small files of a workspace.
 */
export async function readChunks(handle: FileHandle, size: number, onChunk: (chunk: Buffer) => boolean | void): Promise<number> {
  let buffer = Buffer.allocUnsafe(Math.min(MAX_CHUNK, Math.max(MIN_CHUNK, size + 1)));
  let position = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
    if (bytesRead === 0) return position;
    position += bytesRead;
    if (onChunk(buffer.subarray(0, bytesRead)) === false) return position;
    if (bytesRead < buffer.length && position >= size) return position;
    if (bytesRead === buffer.length && buffer.length < MAX_CHUNK) buffer = Buffer.allocUnsafe(MAX_CHUNK);
  }
}
