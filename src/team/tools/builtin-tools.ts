import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants as fsConstants, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ToolContext, ToolDefinition, ToolOutcome } from './tool.port';
import { encodeMachineBytes } from '../../shared/text';
import { errnoCode, resolveInWorkspace, toWorkspacePath, WorkspaceEscapeError } from './workspace';

/**
 * The six tools a team works with. Each confines its paths to the run's workspace and reports
 * failures (missing file, escape, non-zero exit...) as `isError` outcomes the model can act on;
 * only programming errors throw.
 */

export const BUILTIN_TOOL_NAMES = ['read_file', 'list_files', 'search_files', 'write_file', 'edit_file', 'run_command'] as const;
export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

export interface BuiltinToolLimits {
  /** read_file returns at most this many bytes per call. */
  readFileMaxBytes: number;
  /** list_files lists at most this many entries. */
  listMaxEntries: number;
  /** search_files reports at most this many matching lines. */
  searchMaxMatches: number;
  /** search_files looks at most at this many files. */
  searchMaxFiles: number;
  /** search_files skips files larger than this. */
  searchMaxFileBytes: number;
  /** A search (a model-supplied regex may backtrack badly) is stopped after this long. */
  searchTimeoutMs: number;
  /** run_command keeps at most this many bytes of output (half from the start, half from the end). */
  commandOutputMaxBytes: number;
  commandDefaultTimeoutMs: number;
  commandMaxTimeoutMs: number;
}

export const DEFAULT_TOOL_LIMITS: Readonly<BuiltinToolLimits> = Object.freeze({
  readFileMaxBytes: 256 * 1024,
  listMaxEntries: 1000,
  searchMaxMatches: 200,
  searchMaxFiles: 5000,
  searchMaxFileBytes: 2 * 1024 * 1024,
  searchTimeoutMs: 10_000,
  commandOutputMaxBytes: 64 * 1024,
  commandDefaultTimeoutMs: 30_000,
  commandMaxTimeoutMs: 10 * 60_000,
});

/** Directories a recursive listing or search does not descend into (listed, not walked). */
const UNWALKED_DIRS = new Set(['.git', 'node_modules']);
const MAX_MATCH_LINE_CHARS = 300;
const MAX_WALK_VISITS = 100_000;

export function createBuiltinTools(overrides: Partial<BuiltinToolLimits> = {}): ToolDefinition[] {
  const limits: BuiltinToolLimits = { ...DEFAULT_TOOL_LIMITS, ...overrides };
  return [
    readFileTool(limits),
    listFilesTool(limits),
    searchFilesTool(limits),
    writeFileTool(),
    editFileTool(),
    runCommandTool(limits),
  ];
}

// ---------------------------------------------------------------------------------------------
// read_file

function readFileTool(limits: BuiltinToolLimits): ToolDefinition {
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
        const file = await resolveInWorkspace(context.workspace, userPath);
        // O_NONBLOCK: opening a FIFO must not hang the turn; O_NOFOLLOW: the resolved path is final.
        handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
        const stat = await handle.stat();
        if (stat.isDirectory()) return fail(`${quote(userPath)} is a directory; use list_files to see its entries`);
        if (!stat.isFile()) return fail(`${quote(userPath)} is not a regular file`);
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
  const chunk = Buffer.alloc(64 * 1024);
  const taken: Buffer[] = [];
  let takenBytes = 0;
  let line = 1;
  let takenOfLine = false; // some bytes of `line` are already in the output
  let lastByte = -1;
  let position = 0;
  let cappedAt: { line: number; cut: boolean } | undefined;
  let stoppedAtLimit = false;

  reading: for (;;) {
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
    if (bytesRead === 0) break;
    const data = chunk.subarray(0, bytesRead);
    if (position === 0 && data.subarray(0, 8192).includes(0)) {
      return fail(`${quote(userPath)} looks like a binary file (${formatBytes(size)}); read_file shows text only`);
    }
    position += bytesRead;
    lastByte = data[data.length - 1]!;
    let i = 0;
    while (i < data.length) {
      if (line >= endLine) {
        stoppedAtLimit = true;
        break reading;
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
          break reading;
        }
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
  }

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

// ---------------------------------------------------------------------------------------------
// list_files

interface WalkEntry {
  rel: string;
  kind: 'dir' | 'file' | 'link' | 'other';
  abs: string;
}

interface WalkResult {
  entries: WalkEntry[];
  truncated: boolean;
}

/** Depth-first, siblings sorted; never follows symbolic links; stops after `max` entries. */
async function walk(
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

function listFilesTool(limits: BuiltinToolLimits): ToolDefinition {
  return {
    name: 'list_files',
    description:
      'List a directory of the workspace (default: its root), sorted, with directories marked by a trailing "/" and ' +
      `symbolic links by "@". recursive walks subdirectories (not .git or node_modules). At most ${limits.listMaxEntries} entries.`,
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Directory relative to the workspace (default ".").' },
        recursive: { type: 'boolean', description: 'Also list subdirectories (default false).' },
      },
      additionalProperties: false,
    },
    readOnly: true,
    idempotent: true,
    risk: 'low',
    async execute(input, context) {
      const userPath = (input.path as string | undefined) || '.';
      try {
        const dir = await resolveInWorkspace(context.workspace, userPath);
        const stat = await fs.stat(dir);
        if (!stat.isDirectory()) return fail(`${quote(userPath)} is not a directory; use read_file to read it`);
        const realWorkspace = await fs.realpath(context.workspace);
        const { entries, truncated } = await walk(realWorkspace, dir, {
          recursive: input.recursive === true,
          max: limits.listMaxEntries,
          signal: context.signal,
        });
        if (context.signal.aborted) return fail('listing cancelled');
        if (entries.length === 0) return ok(`(${quote(userPath)} is empty)`);
        const lines = entries.map((e) => (e.kind === 'dir' ? `${e.rel}/` : e.kind === 'link' ? `${e.rel}@` : e.rel));
        if (truncated) lines.push(`[listing stopped after ${limits.listMaxEntries} entries; list a subdirectory to see more]`);
        return ok(lines.join('\n'));
      } catch (err) {
        return fsFailure(err, userPath, 'list');
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// search_files

/**
 * Runs in a worker thread so that a pathological regex can be stopped (terminate) instead of
 * blocking the orchestrator's event loop. Plain JavaScript: it is evaluated, not compiled.
 */
const SEARCH_WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { files, pattern, regex, maxMatches, maxFileBytes, maxLineChars } = workerData;
const re = regex ? new RegExp(pattern) : null;
const matches = [];
let truncated = false;
let skipped = 0;
outer: for (const file of files) {
  let text;
  try {
    const fd = fs.openSync(file.abs, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    try {
      const st = fs.fstatSync(fd);
      if (!st.isFile()) continue;
      if (st.size > maxFileBytes) { skipped++; continue; }
      const buf = fs.readFileSync(fd);
      if (buf.subarray(0, 8192).includes(0)) continue;
      text = buf.toString('utf8');
    } finally { fs.closeSync(fd); }
  } catch { continue; }
  const lines = text.split(/\\r?\\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (re ? re.test(line) : line.includes(pattern)) {
      if (matches.length >= maxMatches) { truncated = true; break outer; }
      const shown = line.length > maxLineChars ? line.slice(0, maxLineChars) + '…' : line;
      matches.push(file.rel + ':' + (i + 1) + ': ' + shown);
    }
  }
}
parentPort.postMessage({ matches, truncated, skipped });
`;

interface SearchResult {
  matches: string[];
  truncated: boolean;
  skipped: number;
}

function searchFilesTool(limits: BuiltinToolLimits): ToolDefinition {
  return {
    name: 'search_files',
    description:
      'Search the text files of the workspace (or of one directory or file in it) for a pattern; returns "file:line: text" ' +
      `lines, at most ${limits.searchMaxMatches}. The pattern is a literal string unless regex is true (JavaScript regular ` +
      'expression syntax, matched per line). Skips binary files, .git and node_modules.',
    inputSchema: {
      type: 'object',
      properties: {
        pattern: { type: 'string', minLength: 1, maxLength: 1000, description: 'Text (or regex) to find.' },
        path: { type: 'string', description: 'Directory or file relative to the workspace (default ".").' },
        regex: { type: 'boolean', description: 'Treat pattern as a regular expression (default false).' },
      },
      required: ['pattern'],
      additionalProperties: false,
    },
    readOnly: true,
    idempotent: true,
    risk: 'low',
    async execute(input, context) {
      const pattern = input.pattern as string;
      const regex = input.regex === true;
      const userPath = (input.path as string | undefined) || '.';
      if (regex) {
        try {
          new RegExp(pattern);
        } catch (err) {
          return fail(`invalid regular expression ${quote(pattern)}: ${(err as Error).message}`);
        }
      }
      try {
        const target = await resolveInWorkspace(context.workspace, userPath);
        const realWorkspace = await fs.realpath(context.workspace);
        const stat = await fs.stat(target);
        let files: WalkEntry[];
        let tooManyFiles = false;
        if (stat.isFile()) {
          files = [{ rel: toWorkspacePath(realWorkspace, target), kind: 'file', abs: target }];
        } else if (stat.isDirectory()) {
          const walked = await walk(realWorkspace, target, {
            recursive: true,
            max: limits.searchMaxFiles,
            include: (e) => e.kind === 'file',
            signal: context.signal,
          });
          files = walked.entries;
          tooManyFiles = walked.truncated;
        } else {
          return fail(`${quote(userPath)} is neither a file nor a directory`);
        }
        if (context.signal.aborted) return fail('search cancelled');
        const result = await runSearchWorker(
          {
            files: files.map(({ rel, abs }) => ({ rel, abs })),
            pattern,
            regex,
            maxMatches: limits.searchMaxMatches,
            maxFileBytes: limits.searchMaxFileBytes,
            maxLineChars: MAX_MATCH_LINE_CHARS,
          },
          limits.searchTimeoutMs,
          context.signal,
        );
        if (result === 'timeout') {
          return fail(`search stopped after ${formatDuration(limits.searchTimeoutMs)}; try a simpler pattern or a narrower path`);
        }
        if (result === 'aborted') return fail('search cancelled');
        const lines = result.matches.length > 0 ? [...result.matches] : [`no matches for ${quote(pattern)} in ${quote(userPath)}`];
        if (result.truncated) lines.push(`[stopped after ${limits.searchMaxMatches} matches; narrow the pattern or path]`);
        if (tooManyFiles) lines.push(`[only the first ${limits.searchMaxFiles} files were searched; narrow the path]`);
        if (result.skipped > 0) lines.push(`[${result.skipped} file(s) over ${formatBytes(limits.searchMaxFileBytes)} skipped]`);
        return ok(lines.join('\n'));
      } catch (err) {
        return fsFailure(err, userPath, 'search');
      }
    },
  };
}

function runSearchWorker(
  workerData: Record<string, unknown>,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<SearchResult | 'timeout' | 'aborted'> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(SEARCH_WORKER_SOURCE, {
      eval: true,
      workerData,
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      outcome();
      void worker.terminate();
    };
    const timer = setTimeout(() => settle(() => resolve('timeout')), timeoutMs);
    const onAbort = (): void => settle(() => resolve('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (message: SearchResult) => settle(() => resolve(message)));
    worker.once('error', (err) => settle(() => reject(err)));
    worker.once('exit', (code) => settle(() => reject(new Error(`search worker exited early with code ${code}`))));
  });
}

// ---------------------------------------------------------------------------------------------
// write_file and edit_file

function writeFileTool(): ToolDefinition {
  return {
    name: 'write_file',
    description:
      'Create or replace a file in the workspace with the given content, creating parent directories. The write is atomic: ' +
      'readers see the old or the new content, never a mix.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1, description: 'Path relative to the workspace.' },
        content: { type: 'string', description: 'The complete new content of the file.' },
      },
      required: ['path', 'content'],
      additionalProperties: false,
    },
    readOnly: false,
    // Writing the same content twice leaves the same file: safe to re-run after a crash.
    idempotent: true,
    risk: 'low',
    async execute(input, context) {
      const userPath = input.path as string;
      const content = input.content as string;
      try {
        const file = await resolveInWorkspace(context.workspace, userPath, { forWrite: true });
        await fs.mkdir(path.dirname(file), { recursive: true });
        // mkdir may have raced with a link being planted: check again before writing.
        const confirmed = await resolveInWorkspace(context.workspace, userPath, { forWrite: true });
        const bytes = await writeAtomically(confirmed, content);
        return ok(`wrote ${bytes} bytes to ${quote(userPath)}`);
      } catch (err) {
        return fsFailure(err, userPath, 'write');
      }
    },
  };
}

function editFileTool(): ToolDefinition {
  return {
    name: 'edit_file',
    description:
      'Replace exact text in a workspace file. `old` must occur exactly once unless replaceAll is true; include enough ' +
      'surrounding lines to make it unique. Fails without changing the file when `old` is missing or ambiguous.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1, description: 'Path relative to the workspace.' },
        old: { type: 'string', minLength: 1, description: 'The exact text to replace.' },
        new: { type: 'string', description: 'The replacement text.' },
        replaceAll: { type: 'boolean', description: 'Replace every occurrence (default false).' },
      },
      required: ['path', 'old', 'new'],
      additionalProperties: false,
    },
    readOnly: false,
    // Re-running a successful edit finds `old` gone (or replaces again): not safe to repeat blindly.
    idempotent: false,
    risk: 'low',
    async execute(input, context) {
      const userPath = input.path as string;
      const oldText = input.old as string;
      const newText = input.new as string;
      const replaceAll = input.replaceAll === true;
      if (oldText === newText) return fail('old and new are identical; nothing to change');
      try {
        const file = await resolveInWorkspace(context.workspace, userPath, { forWrite: true });
        const stat = await fs.stat(file);
        if (stat.isDirectory()) return fail(`${quote(userPath)} is a directory`);
        if (!stat.isFile()) return fail(`${quote(userPath)} is not a regular file`);
        const text = await fs.readFile(file, 'utf8');
        if (text.includes('\0')) return fail(`${quote(userPath)} looks like a binary file; edit_file edits text only`);
        const count = countOccurrences(text, oldText);
        if (count === 0) return fail(`old text not found in ${quote(userPath)}; read the file and copy the text exactly`);
        if (count > 1 && !replaceAll) {
          return fail(
            `old text occurs ${count} times in ${quote(userPath)}; add surrounding context to make it unique, or set replaceAll`,
          );
        }
        // split/join, not String.replace: `$&` and friends in the new text must stay literal.
        const updated = replaceAll ? text.split(oldText).join(newText) : replaceFirst(text, oldText, newText);
        await writeAtomically(file, updated);
        return ok(`replaced ${replaceAll ? count : 1} occurrence${(replaceAll ? count : 1) === 1 ? '' : 's'} in ${quote(userPath)}`);
      } catch (err) {
        return fsFailure(err, userPath, 'edit');
      }
    },
  };
}

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count += 1;
  return count;
}

function replaceFirst(text: string, needle: string, replacement: string): string {
  const at = text.indexOf(needle);
  return text.slice(0, at) + replacement + text.slice(at + needle.length);
}

/** Writes a sibling temp file and renames it over the target; keeps an existing file's mode. */
async function writeAtomically(file: string, content: string): Promise<number> {
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

// ---------------------------------------------------------------------------------------------
// run_command

const SECRET_NAME = /KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL/i;
/** A URL with a password in it (`postgres://user:pass@host`), whatever the variable is called. */
const URL_WITH_PASSWORD = /^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*:[^/@\s]*@/i;

/**
 * The environment a command runs with: the orchestrator's own, minus anything that looks like a
 * secret and minus triad's and Anthropic's configuration. The model must not be able to print keys.
 */
export function commandEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (SECRET_NAME.test(name) || /^ANTHROPIC_/i.test(name) || /^TRIAD_/i.test(name)) continue;
    if (URL_WITH_PASSWORD.test(value)) continue;
    clean[name] = value;
  }
  return clean;
}

function runCommandTool(limits: BuiltinToolLimits): ToolDefinition {
  return {
    name: 'run_command',
    description:
      'Run a shell command (/bin/sh -c) in the workspace directory and return its combined stdout and stderr (at most ' +
      `${formatBytes(limits.commandOutputMaxBytes)}; the middle is cut) and exit code. A non-zero exit is reported as an error. ` +
      `Timeout defaults to ${formatDuration(limits.commandDefaultTimeoutMs)} (max ${formatDuration(limits.commandMaxTimeoutMs)}); ` +
      'on timeout every process the command started is killed, and background processes do not outlive the command. ' +
      'Secrets are removed from the environment.',
    inputSchema: {
      type: 'object',
      properties: {
        command: { type: 'string', minLength: 1, description: 'The shell command line.' },
        timeoutMs: {
          type: 'integer',
          minimum: 1,
          maximum: limits.commandMaxTimeoutMs,
          description: `Milliseconds before the command is killed (default ${limits.commandDefaultTimeoutMs}).`,
        },
      },
      required: ['command'],
      additionalProperties: false,
    },
    readOnly: false,
    idempotent: false,
    risk: 'high',
    async execute(input, context) {
      const command = input.command as string;
      const timeoutMs = Math.min((input.timeoutMs as number | undefined) ?? limits.commandDefaultTimeoutMs, limits.commandMaxTimeoutMs);
      if (context.signal.aborted) return fail('command cancelled before it started');
      let cwd: string;
      try {
        cwd = await fs.realpath(context.workspace);
      } catch (err) {
        return fsFailure(err, '.', 'use the workspace');
      }
      return runCommand(command, cwd, timeoutMs, limits.commandOutputMaxBytes, context);
    },
  };
}

function runCommand(command: string, cwd: string, timeoutMs: number, maxOutput: number, context: ToolContext): Promise<ToolOutcome> {
  return new Promise((resolve) => {
    const output = new HeadTailBuffer(maxOutput);
    // detached: the shell leads a new process group, so one kill reaches everything it started.
    const child = spawn('/bin/sh', ['-c', command], {
      cwd,
      env: commandEnvironment(process.env),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stopped: 'timeout' | 'cancelled' | undefined;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;
    let drainTimer: NodeJS.Timeout | undefined;

    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch (err) {
        if (errnoCode(err) !== 'ESRCH') throw err;
      }
    };
    const finish = (outcome: ToolOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(drainTimer);
      context.signal.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    const report = (): void => {
      const text = output.text();
      const body = text === '' ? '(no output)' : text.endsWith('\n') ? text.slice(0, -1) : text;
      if (stopped === 'timeout') {
        finish(asMachineText(fail(`${body}\n[timed out after ${formatDuration(timeoutMs)}; the command and every process it started were killed]`)));
      } else if (stopped === 'cancelled') {
        finish(asMachineText(fail(`${body}\n[cancelled; the command and every process it started were killed]`)));
      } else if (exit?.signal) {
        finish(asMachineText(fail(`${body}\n[killed by signal ${exit.signal}]`)));
      } else {
        const code = exit?.code ?? -1;
        finish({ output: `${body}\n[exit code ${code}]`, isError: code !== 0, machineText: true });
      }
    };

    const timer = setTimeout(() => {
      stopped ??= 'timeout';
      killGroup();
    }, timeoutMs);
    const onAbort = (): void => {
      stopped ??= 'cancelled';
      killGroup();
    };
    context.signal.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    child.once('error', (err) => {
      killGroup();
      finish(fail(`could not start the command: ${errnoCode(err) ?? err.message}`));
    });
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      // Leftover background processes would hold the output pipes open and outlive the run.
      killGroup();
      // A process that left the group (setsid) may still hold the pipes: stop waiting for it.
      drainTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        report();
      }, 2000);
    });
    child.once('close', () => report());
  });
}

/** Keeps the first and last halves of a byte stream, counting what falls in between. */
class HeadTailBuffer {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private omitted = 0;
  private readonly headLimit: number;
  private readonly tailLimit: number;

  constructor(max: number) {
    this.headLimit = Math.ceil(max / 2);
    this.tailLimit = Math.floor(max / 2);
  }

  push(chunk: Buffer): void {
    let rest = chunk;
    if (this.headBytes < this.headLimit) {
      const take = Math.min(this.headLimit - this.headBytes, rest.length);
      this.head.push(Buffer.from(rest.subarray(0, take)));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    this.tail.push(Buffer.from(rest));
    this.tailBytes += rest.length;
    while (this.tailBytes > this.tailLimit) {
      const first = this.tail[0]!;
      const excess = this.tailBytes - this.tailLimit;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
        this.omitted += first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
        this.omitted += excess;
      }
    }
  }

  /** Machine text (src/shared/text.ts): NUL and bytes that are not UTF-8 are kept as escapes. */
  text(): string {
    const head = encodeMachineBytes(Buffer.concat(this.head));
    const tail = encodeMachineBytes(Buffer.concat(this.tail));
    if (this.omitted === 0) return head + tail;
    return `${head}\n[… ${this.omitted} bytes of output omitted …]\n${tail}`;
  }
}

// ---------------------------------------------------------------------------------------------
// helpers

function ok(output: string): ToolOutcome {
  return { output, isError: false };
}

/** An output already in machine text (its parts from bytes encoded, the rest plain ASCII notes). */
function okText(output: string): ToolOutcome {
  return { output, isError: false, machineText: true };
}

function asMachineText(outcome: ToolOutcome): ToolOutcome {
  return { ...outcome, machineText: true };
}

function fail(output: string): ToolOutcome {
  return { output, isError: true };
}

function quote(userPath: string): string {
  return JSON.stringify(userPath.length > 200 ? `${userPath.slice(0, 200)}…` : userPath);
}

/**
 * Maps an expected filesystem failure to a message for the model. The message names the path the
 * model used, never the host path (Node's own messages include it). Anything else is a bug: rethrown.
 */
function fsFailure(err: unknown, userPath: string, verb: string): ToolOutcome {
  if (err instanceof WorkspaceEscapeError) return fail(err.message);
  const code = errnoCode(err);
  if (code === undefined) throw err;
  const p = quote(userPath);
  switch (code) {
    case 'ENOENT':
      return fail(`${p} does not exist`);
    case 'ENOTDIR':
      return fail(`${p} is not a directory, or a part of it is a file`);
    case 'EISDIR':
      return fail(`${p} is a directory`);
    case 'EACCES':
    case 'EPERM':
      return fail(`permission denied: ${p}`);
    case 'ELOOP':
      return fail(`${p} is a symbolic link that cannot be followed here`);
    case 'ENOSPC':
      return fail(`no space left on the device while trying to ${verb} ${p}`);
    default:
      return fail(`cannot ${verb} ${p} (${code})`);
  }
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

function formatDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 1000) return `${Number((ms / 1000).toFixed(1))} s`;
  return `${ms} ms`;
}
