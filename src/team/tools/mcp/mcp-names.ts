import { sha256Hex } from '../../../shared/canonical-json';
import type { ToolDefinition } from '../tool.port';
import { sanitiseName } from './mcp-config';

/**
 * How MCP tools appear to the model: `mcp__<server>__<tool>`, with every character a tool name
 * may not hold made `_`, cut to the 64 characters tool names may have (with a hash of the whole
 * name, so two long names stay apart), and `_2`, `_3`... on names that collide once sanitised.
 * And how their MCP annotations classify them.
 */

export const MCP_TOOL_PREFIX = 'mcp__';
const MAX_TOOL_NAME = 64;

export function isMcpToolName(name: string): boolean {
  return name.startsWith(MCP_TOOL_PREFIX);
}

/** The server prefix of `mcp__<prefix>__<tool>`, or undefined. */
export function mcpServerPrefixOf(name: string): string | undefined {
  if (!isMcpToolName(name)) return undefined;
  const end = name.indexOf('__', MCP_TOOL_PREFIX.length);
  return end > MCP_TOOL_PREFIX.length ? name.slice(MCP_TOOL_PREFIX.length, end) : undefined;
}

/** The model-facing names of one server's tools, in the order given. */
export function mcpToolNames(prefix: string, toolNames: readonly string[]): string[] {
  const taken = new Set<string>();
  return toolNames.map((tool) => {
    let name = `${MCP_TOOL_PREFIX}${prefix}__${sanitiseName(tool)}`;
    if (name.length > MAX_TOOL_NAME) name = `${name.slice(0, MAX_TOOL_NAME - 9)}_${sha256Hex(tool).slice(0, 8)}`;
    let unique = name;
    for (let n = 2; taken.has(unique); n++) unique = `${name.slice(0, MAX_TOOL_NAME - String(n).length - 1)}_${n}`;
    taken.add(unique);
    return unique;
  });
}

export interface McpAnnotations {
  readOnlyHint?: boolean;
  idempotentHint?: boolean;
}

/**
 * `readOnlyHint` → read-only (and repeatable: reading twice is reading once), low risk;
 * `idempotentHint` → repeatable (crash recovery may call it again), low risk; anything else →
 * high risk: it waits for a human under the run's tool-approval policy, and a crash during it
 * leaves its outcome unknown rather than calling it again.
 */
export function classifyMcpTool(annotations: McpAnnotations | undefined): Pick<ToolDefinition, 'readOnly' | 'idempotent' | 'risk'> {
  if (annotations?.readOnlyHint === true) return { readOnly: true, idempotent: true, risk: 'low' };
  if (annotations?.idempotentHint === true) return { readOnly: false, idempotent: true, risk: 'low' };
  return { readOnly: false, idempotent: false, risk: 'high' };
}
