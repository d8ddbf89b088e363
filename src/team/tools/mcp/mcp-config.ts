/**
 * The MCP servers file named by `TRIAD_MCP_CONFIG`, in the `.mcp.json` shape:
 *
 *   {"mcpServers": {"<name>": {"command": "...", "args": [...], "env": {...},            (stdio, in the OS sandbox)
 *                              "sandbox": {"network": [...], "paths": [...], "writablePaths": [...]}}
 *                   "<name>": {"type": "http", "url": "...", "headers": {...}}}}           (streamable HTTP)
 *
 * plus optional `timeoutMs` (each call) and `startupTimeoutMs` (connecting and listing the tools)
 * per server. `${VAR}` and
 * `${VAR:-default}` in commands, arguments, env values, URLs and headers are taken from triad's own
 * environment, so secrets need not be written in the file. Pure: parsing and validation only.
 */

import { isAbsolute, resolve } from 'node:path';
import { parseNetworkAllowList } from '../sandbox/sandbox-policy';
import { duplicateKeyIn, duplicateKeyMessage } from '../../../shared/strict-json';

export const DEFAULT_MCP_TIMEOUT_MS = 60_000;
/** Starting a server (a stdio process may first be installed by npx) and listing its tools. */
export const DEFAULT_MCP_STARTUP_TIMEOUT_MS = 30_000;
/** Values shorter than this are not treated as secrets: redacting them would garble ordinary text. */
export const MIN_SECRET_LENGTH = 6;

export interface McpStdioServer {
  transport: 'stdio';
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  /**
   * What the server's sandbox lets it reach besides its private folder (`<data dir>/mcp/<name>`,
   * its home and default working directory): hosts through the network proxy, host paths
   * read-only and read-write. Default: none of each.
   */
  sandbox: McpSandboxPolicy;
}

export interface McpSandboxPolicy {
  network: string[];
  paths: string[];
  writablePaths: string[];
}

export interface McpHttpServer {
  transport: 'http';
  url: string;
  headers: Record<string, string>;
}

export type McpServerConfig = (McpStdioServer | McpHttpServer) & {
  /** The name in the file. */
  name: string;
  /** The name in tool names (`mcp__<prefix>__<tool>`): the file's name with other characters made `_`. */
  prefix: string;
  /** Each call is given up after this long. */
  timeoutMs: number;
  /** Connecting and listing the tools is given up after this long. */
  startupTimeoutMs: number;
};

export interface McpConfig {
  /** The file it was read from (for messages). */
  file: string;
  /** Sorted by prefix. */
  servers: McpServerConfig[];
  /** Every env and header value (after expansion) long enough to be a secret: redacted from all text triad keeps. */
  secrets: string[];
}

export class McpConfigError extends Error {
  override readonly name = 'McpConfigError';
}

const STDIO_KEYS = new Set(['type', 'command', 'args', 'env', 'cwd', 'timeoutMs', 'startupTimeoutMs', 'sandbox']);
const SANDBOX_KEYS = new Set(['network', 'paths', 'writablePaths']);
const HTTP_KEYS = new Set(['type', 'url', 'headers', 'timeoutMs', 'startupTimeoutMs']);

/** Tool-name-safe form of a server or tool name: letters, digits, `_` and `-`. */
export function sanitiseName(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_');
}

/** Line and column of a JSON.parse error, from the position its message gives (Node's wording), without the text. */
function jsonErrorPlace(text: string, err: Error): string {
  const at = /position (\d+)/.exec(err.message);
  if (!at) return /end of JSON input/.test(err.message) ? 'it ends too early' : 'a syntax error';
  const before = text.slice(0, Number(at[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `a syntax error at line ${line}, column ${column}`;
}

/** Parses and checks the file's text; throws McpConfigError naming the first problem. */
export function parseMcpConfig(text: string, file: string, env: NodeJS.ProcessEnv = {}): McpConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // Where, not what: the parser's message quotes the text around the error, which may be a secret.
    throw new McpConfigError(`is not JSON (${jsonErrorPlace(text, err as Error)})`);
  }
  // Keys only (a server's name, a variable's): never a value.
  const duplicate = duplicateKeyIn(text, 'the file');
  if (duplicate !== undefined) throw new McpConfigError(duplicateKeyMessage(duplicate));
  if (!isObject(raw)) throw new McpConfigError('must be a JSON object with "mcpServers"');
  const extra = Object.keys(raw).filter((k) => k !== 'mcpServers');
  if (extra.length > 0) throw new McpConfigError(`has unknown top-level field ${JSON.stringify(extra[0])} (only "mcpServers")`);
  const servers = raw.mcpServers;
  if (!isObject(servers)) throw new McpConfigError('"mcpServers" must be an object of servers by name');
  const out: McpServerConfig[] = [];
  const secrets = new Set<string>();
  const byPrefix = new Map<string, string>();
  for (const [name, entry] of Object.entries(servers)) {
    const where = `server ${JSON.stringify(name)}`;
    if (!/^[A-Za-z0-9_.-]{1,40}$/.test(name)) throw new McpConfigError(`${where}: names are 1 to 40 letters, digits, "_", "-" or "."`);
    const prefix = sanitiseName(name);
    if (prefix.includes('__')) throw new McpConfigError(`${where}: a name must not contain "__" (it separates the parts of tool names)`);
    const same = byPrefix.get(prefix);
    if (same !== undefined) throw new McpConfigError(`${where} and server ${JSON.stringify(same)} give the same tool prefix mcp__${prefix}__`);
    byPrefix.set(prefix, name);
    if (!isObject(entry)) throw new McpConfigError(`${where} must be an object`);
    const type = entry.type ?? (entry.command === undefined && entry.url !== undefined ? 'http' : 'stdio');
    if (type !== 'stdio' && type !== 'http') throw new McpConfigError(`${where}: "type" must be "stdio" or "http", got ${JSON.stringify(type)}`);
    const allowed = type === 'stdio' ? STDIO_KEYS : HTTP_KEYS;
    const unknown = Object.keys(entry).filter((k) => !allowed.has(k));
    if (unknown.length > 0) throw new McpConfigError(`${where}: unknown field ${JSON.stringify(unknown[0])} for a ${type} server`);
    const timeoutMs = duration(entry.timeoutMs, DEFAULT_MCP_TIMEOUT_MS, `${where}: "timeoutMs"`);
    const startupTimeoutMs = duration(entry.startupTimeoutMs, DEFAULT_MCP_STARTUP_TIMEOUT_MS, `${where}: "startupTimeoutMs"`);
    const expand = (value: string, field: string) => expandVars(value, env, `${where}: ${field}`);
    if (type === 'stdio') {
      if (typeof entry.command !== 'string' || entry.command.trim() === '') throw new McpConfigError(`${where}: "command" must be a non-empty string`);
      const args = entry.args ?? [];
      if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) throw new McpConfigError(`${where}: "args" must be an array of strings`);
      const serverEnv = stringMap(entry.env, `${where}: "env"`, expand);
      if (entry.cwd !== undefined && (typeof entry.cwd !== 'string' || entry.cwd === '')) throw new McpConfigError(`${where}: "cwd" must be a non-empty string`);
      for (const value of Object.values(serverEnv)) addSecret(secrets, value);
      out.push({
        name,
        prefix,
        timeoutMs,
        startupTimeoutMs,
        transport: 'stdio',
        command: expand(entry.command, '"command"'),
        args: (args as string[]).map((a, i) => expand(a, `"args"[${i}]`)),
        env: serverEnv,
        ...(entry.cwd !== undefined ? { cwd: expand(entry.cwd as string, '"cwd"') } : {}),
        sandbox: sandboxPolicy(entry.sandbox, where, expand),
      });
    } else {
      if (typeof entry.url !== 'string') throw new McpConfigError(`${where}: "url" must be a string`);
      const url = expand(entry.url, '"url"');
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        throw new McpConfigError(`${where}: "url" is not a URL`);
      }
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new McpConfigError(`${where}: "url" must be http or https`);
      const headers = stringMap(entry.headers, `${where}: "headers"`, expand);
      for (const value of Object.values(headers)) addSecret(secrets, value);
      if (parsed.password) addSecret(secrets, decodeURIComponent(parsed.password));
      out.push({ name, prefix, timeoutMs, startupTimeoutMs, transport: 'http', url, headers });
    }
  }
  out.sort((a, b) => (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0));
  // Longest first, so a secret that contains another is redacted whole.
  return { file, servers: out, secrets: [...secrets].sort((a, b) => b.length - a.length) };
}

/** `text` with every secret replaced by `***`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join('***');
  return out;
}

/** A stdio server's `"sandbox": {"network": [...], "paths": [...], "writablePaths": [...]}`. */
function sandboxPolicy(value: unknown, where: string, expand: (v: string, field: string) => string): McpSandboxPolicy {
  if (value === undefined) return { network: [], paths: [], writablePaths: [] };
  if (!isObject(value)) throw new McpConfigError(`${where}: "sandbox" must be an object with "network", "paths" or "writablePaths"`);
  const unknown = Object.keys(value).filter((k) => !SANDBOX_KEYS.has(k));
  if (unknown.length > 0) throw new McpConfigError(`${where}: unknown field ${JSON.stringify(unknown[0])} in "sandbox" (network, paths, writablePaths)`);
  const strings = (field: string): string[] => {
    const list = value[field] ?? [];
    if (!Array.isArray(list) || list.some((v) => typeof v !== 'string')) throw new McpConfigError(`${where}: "sandbox.${field}" must be an array of strings`);
    return (list as string[]).map((v, i) => expand(v, `"sandbox.${field}"[${i}]`));
  };
  const network = parseNetworkAllowList(strings('network'), `${where}: "sandbox.network"`);
  if ('problem' in network) throw new McpConfigError(network.problem);
  const paths = strings('paths');
  const writablePaths = strings('writablePaths');
  for (const path of [...paths, ...writablePaths]) {
    if (!isAbsolute(path)) throw new McpConfigError(`${where}: sandbox paths must be absolute, got ${JSON.stringify(path)}`);
  }
  return { network: network.normalised, paths: paths.map((p) => resolve(p)), writablePaths: writablePaths.map((p) => resolve(p)) };
}

function duration(value: unknown, fallback: number, where: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 3_600_000) {
    throw new McpConfigError(`${where} must be a whole number of ms from 1 to 3600000`);
  }
  return value;
}

function addSecret(secrets: Set<string>, value: string): void {
  for (const secret of secretsIn(value)) secrets.add(secret);
}

/** A credential value as secrets to redact: the value, and for `Bearer <token>` the token alone too. */
export function secretsIn(value: string): string[] {
  const out = value.length >= MIN_SECRET_LENGTH ? [value] : [];
  const last = value.trim().split(/\s+/).pop() ?? '';
  if (last !== value && last.length >= MIN_SECRET_LENGTH) out.push(last);
  return out;
}

function stringMap(value: unknown, where: string, expand: (v: string, field: string) => string): Record<string, string> {
  if (value === undefined) return {};
  if (!isObject(value)) throw new McpConfigError(`${where} must be an object of strings`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new McpConfigError(`${where}: ${JSON.stringify(k)} must be a string`);
    out[k] = expand(v, `${where.split(': ').pop()}.${k}`);
  }
  return out;
}

/** `${NAME}` and `${NAME:-default}` from the environment; a missing variable without a default is an error. */
function expandVars(value: string, env: NodeJS.ProcessEnv, where: string): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, fallback: string | undefined) => {
    const v = env[name];
    if (v !== undefined && v !== '') return v;
    if (fallback !== undefined) return fallback;
    throw new McpConfigError(`${where} uses \${${name}}, which is not set`);
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
