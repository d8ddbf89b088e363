import { constants as fsConstants, promises as fs } from 'node:fs';
import { readChunks } from '../../../shared/read-chunks';
import { encodeMachineBytes } from '../../../shared/text';
import type { ToolDefinition, ToolOutcome } from '../tool.port';
import { resolveInWorkspace } from '../workspace';
import type { BuiltinToolLimits } from './limits';
import { fail, formatBytes, fsFailure, okText, quote } from './outcomes';

/** read_file: a text file of the workspace, by lines, at most `readFileMaxBytes` per call. */
export function readFileTool(limits: BuiltinToolLimits): ToolDefinition {
  return {
    name: 'read_file',
    description:
      `Read a text file in the workspace. Returns at most ${formatBytes(limits.readFileMaxBytes)} per call and says when ` +
      'the output is cut. offset is the 1-based line to start at (default 1); limit is the number of lines (default: to the end).',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1, description: 'Path relative to the workspace.' },
        offset: { type: 'integer', minimum: 1, description: '1-based line number to start at.' },
        limit: { type: 'integer', minimum: 1, description: 'Maximum number of lines to return.' },
      },
      required: ['path'],
      additionalProperties: false,
    },
    readOnly: true,
    idempotent: true,
    risk: 'low',
    async execute(input, context) {
      const userPath = input.path as string;
      const offset = (input.offset as number | undefined) ?? 1;
      const limit = input.limit as number | undefined;
      let handle: fs.FileHandle | undefined;
      try {
        const file = await resolveInWorkspace(context.workspace, userPath, { realRoot: context.realWorkspace });
        // O_NONBLOCK: opening a FIFO must not hang the turn; O_NOFOLLOW: the resolved path is final.
        handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
        const stat = await handle.stat();
        if (stat.isDirectory()) return fail(`${quote(userPath)} is a directory; use list_files to see its entries`);
        if (!stat.isFile()) return fail(`${quote(userPath)} is not a regular file`);
        // Checked on the open file: its other names cannot be found, and may be outside the workspace.
        if (stat.nlink > 1) return fail(`${quote(userPath)} is a hard link (the file has other names, which may be outside the workspace); it is not read. Copy it with run_command (cp) if it is yours`);
        return await readLines(handle, userPath, stat.size, offset, limit, limits.readFileMaxBytes);
      } catch (err) {
        return fsFailure(err, userPath, 'read');
      } finally {
        await handle?.close();
      }
    },
  };
}

async function readLines(
  handle: fs.FileHandle,
  userPath: string,
  size: number,
  offset: number,
  limit: number | undefined,
  maxBytes: number,
): Promise<ToolOutcome> {
  const endLine = limit === undefined ? Infinity : offset + limit; // exclusive
  const taken: Buffer[] = [];
  let takenBytes = 0;
  let line = 1;
  let takenOfLine = false; // some bytes of `line` are already in the output
  let lastByte = -1;
  let cappedAt: { line: number; cut: boolean } | undefined;
  let stoppedAtLimit = false;
  let binary = false;

  const position = await readChunks(handle, size, (data) => {
    // The first chunk holds the file's first 8 KiB (or all of it).
    if (lastByte === -1 && data.subarray(0, 8192).includes(0)) {
      binary = true;
      return false;
    }
    lastByte = data[data.length - 1]!;
    let i = 0;
    while (i < data.length) {
      if (line >= endLine) {
        stoppedAtLimit = true;
        return false;
      }
      const newline = data.indexOf(10, i);
      const segmentEnd = newline === -1 ? data.length : newline + 1;
      if (line >= offset) {
        const segment = data.subarray(i, segmentEnd);
        const room = maxBytes - takenBytes;
        if (segment.length > room) {
          const part = segment.subarray(0, utf8Boundary(segment, room));
          taken.push(Buffer.from(part));
          cappedAt = { line, cut: takenOfLine || part.length > 0 };
          return false;
        }
        // Copied: the chunk's buffer is read into again.
        taken.push(Buffer.from(segment));
        takenBytes += segment.length;
        takenOfLine = true;
      }
      if (newline !== -1) {
        line += 1;
        takenOfLine = false;
      }
      i = segmentEnd;
    }
    return true;
  });
  if (binary) return fail(`${quote(userPath)} looks like a binary file (${formatBytes(size)}); read_file shows text only`);

  // Machine text (src/shared/text.ts): bytes that are not UTF-8 are kept as escapes, not replaced.
  const text = encodeMachineBytes(Buffer.concat(taken));
  if (cappedAt) {
    const where = cappedAt.cut ? `line ${cappedAt.line} was cut` : `shown through line ${cappedAt.line - 1}`;
    return okText(`${text}\n[truncated at ${formatBytes(maxBytes)}: ${where}; continue with offset=${cappedAt.line}]`);
  }
  if (taken.length === 0) {
    if (size === 0 || position === 0) return okText('(empty file)');
    const lines = lastByte === 10 ? line - 1 : line;
    return okText(`(nothing at offset ${offset}: the file has ${lines} line${lines === 1 ? '' : 's'})`);
  }
  if (stoppedAtLimit) {
    const note = `[showing lines ${offset}-${endLine - 1}; the file continues — use offset=${endLine} to read on]`;
    return okText(`${text}${text.endsWith('\n') ? '' : '\n'}${note}`);
  }
  return okText(text);
}

/** The largest prefix length ≤ max that does not split a UTF-8 sequence. */
function utf8Boundary(buf: Buffer, max: number): number {
  if (max >= buf.length) return buf.length;
  let end = max;
  // Step back over continuation bytes (10xxxxxx) to the start of the split character.
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end -= 1;
  return end;
}
