import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RoleName } from '../../../src/team/models/model.port';
import type { ToolContext, ToolDefinition } from '../../../src/team/tools/tool.port';

/** A real temporary directory (its real path), removed by `remove()`. */
export function scratchDir(prefix: string): { path: string; remove(): void } {
  const path = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export function contextFor(workspace: string, options: { role?: RoleName; signal?: AbortSignal } = {}): ToolContext {
  return {
    runId: 'run-1',
    role: options.role ?? 'executor',
    workspace,
    signal: options.signal ?? new AbortController().signal,
  };
}

export function toolNamed(tools: ToolDefinition[], name: string): ToolDefinition {
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name}`);
  return tool;
}

/** True while the process exists and is not a zombie (PID 1 in a container may never reap it). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).charAt(0) !== 'Z';
  } catch {
    return false;
  }
}

export async function waitUntilGone(pid: number, withinMs = 2000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return !isAlive(pid);
}
