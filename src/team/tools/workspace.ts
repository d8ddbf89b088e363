import { lstatSync, mkdirSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import type { ToolContext } from './tool.port';

/**
 * A run's workspace: the one directory its tools may touch. Every user-supplied path goes through
 * `resolveInWorkspace`, which refuses anything that would reach outside it — lexically (`..`,
 * absolute paths) or through symbolic links.
 */

export class WorkspaceEscapeError extends Error {
  override readonly name = 'WorkspaceEscapeError';

  constructor(
    readonly userPath: string,
    reason: string,
  ) {
    // Names the path the model asked for, never the host layout around the workspace.
    super(`path ${quotePath(userPath)} ${reason}`);
  }
}

/**
 * The run's workspace directory does not exist: removed under a live run (an operator's `rm -rf`).
 * Said as such, where the missing path the model named would mislead it; nothing was read or
 * written. A driver that starts (a resume, a restart, a takeover) rebuilds the directory from the
 * run's events.
 */
export class WorkspaceGoneError extends Error {
  override readonly name = 'WorkspaceGoneError';

  constructor() {
    super("the run's workspace directory no longer exists (it was removed while the run was live); nothing was read or written");
  }
}

export class InvalidRunIdError extends Error {
  override readonly name = 'InvalidRunIdError';

  constructor(readonly runId: string) {
    super(`invalid run id ${JSON.stringify(runId.slice(0, 200))}: use 1-128 characters from A-Z, a-z, 0-9, '_' and '-'`);
  }
}

export interface ResolveOptions {
  /** The path will be created or replaced; the workspace directory itself is refused as a target. */
  forWrite?: boolean;
  /**
   * The workspace's real path, when the caller resolved it once for many calls (see
   * `ToolContext.realWorkspace`). Confinement is then to that directory: a workspace path re-pointed
   * later (a link planted in its place) cannot widen it, where a fresh resolution would follow it.
   */
  realRoot?: string;
}

const RUN_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Resolves `userPath` (relative to the workspace, or absolute inside it) to an absolute host path
 * inside the workspace's real path, or throws `WorkspaceEscapeError`.
 *
 * The real path of the deepest existing entry on the way — the file itself when it exists — must lie
 * inside the real path of the workspace, so a symbolic link inside the workspace that points outside
 * is refused for reads and writes alike. An existing path comes back fully resolved (writing to a
 * link inside the workspace writes its target). Checking and then using a path is not atomic: this
 * confines the model's requests, it does not defend against a concurrent attacker on the host.
 *
 * Its file-system calls (real paths and lstat, on the process's own data directory) are made
 * synchronously: each costs a few microseconds of CPU that way, where the promise API's hand-off to
 * the thread pool and back costs 25-45 µs (measured on a 2-core VM), and every tool call with a path
 * makes one to three of them.
 */
export async function resolveInWorkspace(workspace: string, userPath: string, options: ResolveOptions = {}): Promise<string> {
  if (typeof userPath !== 'string') throw new TypeError('userPath must be a string');
  if (userPath.includes('\0')) throw new WorkspaceEscapeError(userPath, 'contains a NUL byte');

  const root = path.resolve(workspace);
  const realRoot = options.realRoot ?? workspaceRealPath(root);
  const candidate = path.resolve(root, userPath);
  // An absolute path may name the workspace by either of its spellings (e.g. /tmp vs /private/tmp).
  const rel = relativeInside(root, candidate) ?? relativeInside(realRoot, candidate);
  if (rel === undefined) throw new WorkspaceEscapeError(userPath, 'is outside the workspace');

  const segments = rel === '' ? [] : rel.split(path.sep);
  if (!options.forWrite && segments.length > 0) {
    // A path read usually exists: its real path alone decides (one call rather than two). Anything
    // else (a missing entry, a broken or looping link) is found out step by step below.
    const real = realPathOrUndefined(path.join(realRoot, ...segments));
    if (real !== undefined) {
      if (relativeInside(realRoot, real) === undefined) throw new WorkspaceEscapeError(userPath, 'leads outside the workspace through a symbolic link');
      return real;
    }
  }
  let existing = segments.length;
  // lstat follows every component but the last, so a link anywhere on the way is still caught below.
  while (existing > 0) {
    try {
      lstatSync(path.join(realRoot, ...segments.slice(0, existing)));
      break;
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') existing -= 1;
      else if (code === 'ELOOP') throw new WorkspaceEscapeError(userPath, 'passes through a looping symbolic link');
      else throw err;
    }
  }

  let real: string;
  try {
    real = realpathSync.native(path.join(realRoot, ...segments.slice(0, existing)));
  } catch (err) {
    const code = errnoCode(err);
    // The workspace itself is gone (a real root resolved before it was removed).
    if (code === 'ENOENT' && existing === 0 && options.realRoot !== undefined) throw new WorkspaceGoneError();
    if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR') {
      throw new WorkspaceEscapeError(userPath, 'passes through a broken or looping symbolic link');
    }
    throw err;
  }
  if (relativeInside(realRoot, real) === undefined) {
    throw new WorkspaceEscapeError(userPath, 'leads outside the workspace through a symbolic link');
  }

  const resolved = path.join(real, ...segments.slice(existing));
  if (options.forWrite && resolved === realRoot) {
    throw new WorkspaceEscapeError(userPath, 'is the workspace directory itself, not a file in it');
  }
  return resolved;
}

/**
 * Whether the directory resolved to `realWorkspace` has since been replaced by a link (its path now
 * resolves elsewhere): what was confined to it must not follow the link.
 */
export async function workspaceReplaced(realWorkspace: string): Promise<boolean> {
  return workspaceRealPath(realWorkspace) !== realWorkspace;
}

/** The workspace directory's real path; WorkspaceGoneError when it does not exist. */
function workspaceRealPath(dir: string): string {
  try {
    return realpathSync.native(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') throw new WorkspaceGoneError();
    throw err;
  }
}

function realPathOrUndefined(file: string): string | undefined {
  try {
    return realpathSync.native(file);
  } catch {
    return undefined;
  }
}

/** The workspace's real path: the run's, resolved once, or resolved now. */
export function realWorkspaceOf(context: Pick<ToolContext, 'workspace' | 'realWorkspace'>): Promise<string> {
  return context.realWorkspace !== undefined ? Promise.resolve(context.realWorkspace) : Promise.resolve().then(() => workspaceRealPath(context.workspace));
}

/** The workspace-relative spelling of a resolved path, with '/' separators ('.' for the root). */
export function toWorkspacePath(realWorkspace: string, absolute: string): string {
  const rel = path.relative(realWorkspace, absolute);
  return rel === '' ? '.' : rel.split(path.sep).join('/');
}

/** Creates (or reuses, on recovery) `<root>/<runId>` and returns its real path. */
export async function createWorkspace(root: string, runId: string): Promise<string> {
  if (typeof runId !== 'string' || !RUN_ID.test(runId)) throw new InvalidRunIdError(String(runId));
  const dir = path.join(path.resolve(root), runId);
  // A directory made here is a plain one. One that was there already (a recovery, a fork's
  // rebuild) is checked: a pre-planted link at the run's path would move the whole workspace elsewhere.
  if (!makeDirectory(dir) && !lstatSync(dir).isDirectory()) {
    throw new Error(`workspace for run ${runId} exists and is not a plain directory`);
  }
  return realpathSync.native(dir);
}

/** Makes `dir` (its parents too, when missing): true when it made it, false when something is there already. */
function makeDirectory(dir: string): boolean {
  for (let parentsMade = false; ; parentsMade = true) {
    try {
      mkdirSync(dir);
      return true;
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'EEXIST') return false;
      if (code !== 'ENOENT' || parentsMade) throw err;
    }
    mkdirSync(path.dirname(dir), { recursive: true });
  }
}

function relativeInside(base: string, target: string): string | undefined {
  const rel = path.relative(base, target);
  if (rel === '') return '';
  if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return undefined;
  return rel;
}

function quotePath(userPath: string): string {
  const clipped = userPath.length > 200 ? `${userPath.slice(0, 200)}…` : userPath;
  // JSON quoting makes NUL and other control characters visible instead of corrupting the message.
  return JSON.stringify(clipped);
}

export function errnoCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof (err as { code: unknown }).code === 'string') {
    return (err as { code: string }).code;
  }
  return undefined;
}
