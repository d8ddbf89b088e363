import type { ToolOutcome } from '../tool.port';
import { errnoCode, WorkspaceEscapeError, WorkspaceGoneError } from '../workspace';

/**
 * The outcomes the built-in tools return and the wording they share. Failures the model can act on
 * (missing file, escape, non-zero exit...) are `isError` outcomes; only programming errors throw.
 */

export function ok(output: string): ToolOutcome {
  return { output, isError: false };
}

/** An output already in machine text (its parts from bytes encoded, the rest plain ASCII notes). */
export function okText(output: string): ToolOutcome {
  return { output, isError: false, machineText: true };
}

export function asMachineText(outcome: ToolOutcome): ToolOutcome {
  return { ...outcome, machineText: true };
}

export function fail(output: string): ToolOutcome {
  return { output, isError: true };
}

export function quote(userPath: string): string {
  return JSON.stringify(userPath.length > 200 ? `${userPath.slice(0, 200)}…` : userPath);
}

/**
 * Maps an expected filesystem failure to a message for the model. The message names the path the
 * model used, never the host path (Node's own messages include it). Anything else is a bug: rethrown.
 */
export function fsFailure(err: unknown, userPath: string, verb: string): ToolOutcome {
  if (err instanceof WorkspaceEscapeError || err instanceof WorkspaceGoneError) return fail(err.message);
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

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3 && bytes % 1024 ** 3 === 0) return `${bytes / 1024 ** 3} GiB`;
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

export function formatDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 1000) return `${Number((ms / 1000).toFixed(1))} s`;
  return `${ms} ms`;
}
