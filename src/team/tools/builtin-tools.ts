import type { ToolDefinition } from './tool.port';
import { editFileTool } from './builtin/edit-file';
import { DEFAULT_TOOL_LIMITS, type BuiltinToolLimits } from './builtin/limits';
import { listFilesTool } from './builtin/list-files';
import { readFileTool } from './builtin/read-file';
import { runCommandTool } from './builtin/run-command';
import { searchFilesTool } from './builtin/search-files';
import { spawnSubAgentTool } from './builtin/spawn-sub-agent';
import { writeFileTool } from './builtin/write-file';
import { Sandbox } from './sandbox/sandbox';

/**
 * The tools a team works with, one module each under builtin/ (spawn_sub_agent is run by the driver). Each confines its paths to the
 * run's workspace and reports failures (missing file, escape, non-zero exit...) as `isError`
 * outcomes the model can act on; only programming errors throw.
 */

export { DEFAULT_TOOL_LIMITS, type BuiltinToolLimits };

export const BUILTIN_TOOL_NAMES = ['read_file', 'list_files', 'search_files', 'write_file', 'edit_file', 'run_command', 'spawn_sub_agent'] as const;
export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

/**
 * The input schemas made here: triad's own, checked against JSON Schema's meta-schema by a test
 * rather than as each process starts (ToolRegistry.register).
 */
const BUILTIN_SCHEMAS = new WeakSet<object>();

export function isBuiltinSchema(schema: object): boolean {
  return BUILTIN_SCHEMAS.has(schema);
}

/**
 * The built-in tools. `sandbox` is the OS sandbox run_command runs in (the process's, opened from
 * its configuration); without one, run_command opens one with the default settings on first use.
 */
export function createBuiltinTools(overrides: Partial<BuiltinToolLimits> = {}, sandbox?: Sandbox): ToolDefinition[] {
  const limits: BuiltinToolLimits = { ...DEFAULT_TOOL_LIMITS, ...overrides };
  let opened = sandbox;
  const tools = [
    readFileTool(limits),
    listFilesTool(limits),
    searchFilesTool(limits),
    writeFileTool(),
    editFileTool(),
    runCommandTool(limits, () => (opened ??= Sandbox.open())),
    spawnSubAgentTool(),
  ];
  for (const tool of tools) BUILTIN_SCHEMAS.add(tool.inputSchema);
  return tools;
}
