import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ToolDefinition, ToolOutcome } from '../tool.port';
import { redactSecrets, type McpConfig, type McpServerConfig } from './mcp-config';
import { classifyMcpTool, mcpToolNames } from './mcp-names';
import { existsSync, mkdirSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { Sandbox, type PreparedSandbox } from '../sandbox/sandbox';

/**
 * The MCP servers of one process: connected on first need (`discover`), each server's tools turned
 * into tool definitions once (the list the first connection gives is the process's list), calls
 * made with the server's timeout. A server that cannot start, dies or does not answer in time is a
 * tool error for the model, never an exception; a dead connection is reopened on the next call.
 * Every text that leaves here (results, errors, log lines) has the configured secrets redacted.
 */

export interface McpHubLogger {
  warn(message: string): void;
}

/** Output longer than this is cut (the model gets the start and a note). */
export const MCP_OUTPUT_MAX_CHARS = 100_000;
/** A server whose tools could not be listed is tried again at most this often (a launch or a run start waits for the attempt). */
const DISCOVERY_RETRY_MS = 60_000;
const STDERR_TAIL_CHARS = 2_000;
/** An error message shown to the model or logged is cut to this. */
const MAX_ERROR_CHARS = 1_000;

class McpServerConnection {
  private client?: Client;
  private connecting?: Promise<Client>;
  private stderrTail = '';
  private closed = false;
  /** The server's tools, once listed. */
  tools?: Tool[];
  private listing?: Promise<void>;
  private lastListFailureAt = -Infinity;

  /** The sandbox of the server process now running (disposed when its connection closes). */
  private prepared?: PreparedSandbox;

  constructor(
    readonly server: McpServerConfig,
    private readonly secrets: readonly string[],
    private readonly logger: McpHubLogger | undefined,
    private readonly now: () => number,
    private readonly sandboxOf: () => Sandbox,
    private readonly privateDir: string,
  ) {}

  /**
   * The server's process line inside its sandbox: its private folder writable (home and default
   * working directory), what its `sandbox` entry lists, its own program (an absolute command) and
   * its `cwd` read-only, its network allow-list through the proxy; nothing else of the host.
   */
  private async sandboxed(s: Extract<McpServerConfig, { transport: 'stdio' }>): Promise<{ command: string; args: string[]; env: Record<string, string>; cwd?: string }> {
    const sandbox = this.sandboxOf();
    if (!sandbox.usable) throw new Error(sandbox.refusal(`the MCP server ${s.name}`));
    if (sandbox.status.mode === 'off') return { command: s.command, args: s.args, env: s.env, ...(s.cwd ? { cwd: s.cwd } : {}) };
    // As the unsandboxed spawn said it: a program that is not there fails to start, ENOENT.
    if (isAbsolute(s.command) && !existsSync(s.command)) throw new Error(`spawn ${s.command} ENOENT`);
    mkdirSync(this.privateDir, { recursive: true, mode: 0o700 });
    const readOnly = [...s.sandbox.paths, ...(isAbsolute(s.command) ? [s.command] : []), ...(s.cwd ? [s.cwd] : [])];
    const prepared = await sandbox.prepare({ writable: [this.privateDir, ...s.sandbox.writablePaths], readOnly, cwd: s.cwd ?? this.privateDir, network: s.sandbox.network, env: s.env, home: this.privateDir });
    this.prepared = prepared;
    const [command, ...args] = [...prepared.prefix, s.command, ...s.args];
    return { command: command!, args, env: prepared.env, cwd: prepared.hostCwd };
  }

  private disposeSandbox(): void {
    const prepared = this.prepared;
    this.prepared = undefined;
    prepared?.dispose().catch((err: unknown) => this.logger?.warn(`MCP server ${this.server.name}: its sandbox was not cleaned up: ${(err as Error).message}`));
  }

  /** Lists the tools unless known; failures are logged and tried again later. */
  discover(): Promise<void> {
    if (this.tools || this.closed) return Promise.resolve();
    if (this.listing) return this.listing;
    if (this.now() - this.lastListFailureAt < DISCOVERY_RETRY_MS) return Promise.resolve();
    this.listing = (async () => {
      try {
        const client = await this.connected();
        const tools: Tool[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor ? { cursor } : {}, { timeout: this.server.startupTimeoutMs });
          tools.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor);
        this.tools = tools;
      } catch (err) {
        this.lastListFailureAt = this.now();
        this.logger?.warn(`MCP server ${this.server.name}: its tools could not be listed: ${this.describe(err)}`);
      } finally {
        this.listing = undefined;
      }
    })();
    return this.listing;
  }

  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolOutcome> {
    const name = this.server.name;
    let client: Client;
    try {
      client = await this.connected(signal);
    } catch (err) {
      return { isError: true, output: `MCP server ${name} is not available: ${this.describe(err)}` };
    }
    try {
      const result = (await client.callTool({ name: tool, arguments: args }, undefined, { timeout: this.server.timeoutMs, signal })) as CallToolResult;
      return { isError: result.isError === true, output: this.redact(resultText(result)) };
    } catch (err) {
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
        return { isError: true, output: `MCP server ${name} did not answer ${tool} within ${this.server.timeoutMs} ms` };
      }
      if (signal.aborted) return { isError: true, output: `${tool} on MCP server ${name} was cancelled` };
      if (this.client !== client) return { isError: true, output: `MCP server ${name} stopped during the call: ${this.describe(err)}` };
      // The answer did not parse as a tool result (the SDK's schema check).
      if (Array.isArray((err as { issues?: unknown }).issues)) return { isError: true, output: `MCP server ${name} answered ${tool} with a malformed result: ${this.describe(err)}` };
      return { isError: true, output: `MCP server ${name} failed the call: ${this.describe(err)}` };
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    // A connection that failed was reported to whoever asked for it: there is nothing to close.
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    // Closing: a server that does not close cleanly is stopped with its sandbox.
    await client?.close().catch(() => undefined);
  }

  /** The open connection, or a new one (one attempt shared by concurrent callers). */
  private connected(signal?: AbortSignal): Promise<Client> {
    if (this.closed) return Promise.reject(new Error('triad is shutting down'));
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.open(signal).finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async open(signal?: AbortSignal): Promise<Client> {
    const s = this.server;
    this.stderrTail = '';
    let transport: Transport;
    if (s.transport === 'stdio') {
      const line = await this.sandboxed(s);
      const stdio = new StdioClientTransport({ ...line, stderr: 'pipe' });
      // Kept (redacted when shown) to explain a server that dies; never passed through to triad's logs.
      stdio.stderr?.on('data', (chunk: Buffer) => (this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS)));
      transport = stdio;
    } else {
      transport = new StreamableHTTPClientTransport(new URL(s.url), { requestInit: { headers: s.headers } });
    }
    const client = new Client({ name: 'triad', version: '1' }, { capabilities: {} });
    client.onclose = () => {
      if (this.client === client) this.client = undefined;
      this.disposeSandbox();
    };
    // Errors the transport reports outside a request (a broken pipe) also show in the request they fail.
    client.onerror = () => undefined;
    try {
      await client.connect(transport, { timeout: s.startupTimeoutMs, ...(signal ? { signal } : {}) });
    } catch (err) {
      // The connect error is the one to report (thrown below); closing the half-open client is best effort.
      await client.close().catch(() => undefined);
      this.disposeSandbox();
      throw err;
    }
    if (this.closed) {
      // Closed while connecting: the client is not used; a close that fails leaves nothing this process needs.
      await client.close().catch(() => undefined);
      throw new Error('triad is shutting down');
    }
    this.client = client;
    return client;
  }

  /** An error as one redacted line, with the end of the server's stderr when it has any. */
  private describe(err: unknown): string {
    let message = err instanceof McpError && err.code === ErrorCode.RequestTimeout ? 'no answer in time' : String((err as Error)?.message ?? err);
    const stderr = this.stderrTail.trim().split('\n').slice(-3).join(' | ');
    if (stderr) message += ` (stderr: ${stderr})`;
    const line = this.redact(message).replace(/\s*\n\s*/g, ' ');
    return line.length <= MAX_ERROR_CHARS ? line : `${line.slice(0, MAX_ERROR_CHARS)}…`;
  }

  private redact(text: string): string {
    return redactSecrets(text, this.secrets);
  }
}

export class McpHub {
  private readonly connections: McpServerConnection[];
  private readonly definitions = new Map<string, ToolDefinition[]>();

  constructor(
    readonly config: McpConfig,
    options: { logger?: McpHubLogger; now?: () => number; sandbox?: Sandbox; dataDir?: string } = {},
  ) {
    const now = options.now ?? Date.now;
    let sandbox = options.sandbox;
    const sandboxOf = () => (sandbox ??= Sandbox.open());
    const root = join(options.dataDir ?? join(process.cwd(), '.triad'), 'mcp');
    this.connections = config.servers.map((s) => new McpServerConnection(s, config.secrets, options.logger, now, sandboxOf, join(root, s.prefix)));
  }

  /** The tool-name prefixes of the configured servers (`fs` for `mcp__fs__*`). */
  get prefixes(): string[] {
    return this.connections.map((c) => c.server.prefix);
  }

  /**
   * Connects the servers whose tools are not known yet and returns the definitions of every server
   * known so far, in sorted name order. Never throws: a server that fails is logged and left out.
   */
  async discover(): Promise<ToolDefinition[]> {
    await Promise.all(this.connections.map((c) => c.discover()));
    const out: ToolDefinition[] = [];
    for (const connection of this.connections) {
      if (!connection.tools) continue;
      let defs = this.definitions.get(connection.server.prefix);
      if (!defs) {
        defs = this.toDefinitions(connection, connection.tools);
        this.definitions.set(connection.server.prefix, defs);
      }
      out.push(...defs);
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }

  private toDefinitions(connection: McpServerConnection, tools: Tool[]): ToolDefinition[] {
    const server = connection.server;
    const secrets = this.config.secrets;
    const names = mcpToolNames(server.prefix, tools.map((t) => t.name));
    return tools.map((tool, i) => {
      const kind = classifyMcpTool(tool.annotations);
      const description = redactSecrets(tool.description ?? tool.title ?? `${tool.name} from the MCP server ${server.name}`, secrets);
      return {
        name: names[i],
        description,
        inputSchema: structuredClone(tool.inputSchema) as Record<string, unknown>,
        lenientSchema: true,
        ...kind,
        annotations: { ...(tool.annotations?.readOnlyHint !== undefined ? { readOnlyHint: tool.annotations.readOnlyHint } : {}), ...(tool.annotations?.idempotentHint !== undefined ? { idempotentHint: tool.annotations.idempotentHint } : {}) },
        execute: (input, context) => connection.call(tool.name, input, context.signal),
      } satisfies ToolDefinition;
    });
  }
}

/** A tool result as text: text blocks as they are, other content described, structured content as JSON. */
export function resultText(result: CallToolResult): string {
  const parts: string[] = [];
  for (const block of result.content ?? []) {
    switch (block.type) {
      case 'text':
        parts.push(block.text);
        break;
      case 'image':
      case 'audio':
        parts.push(`[${block.type} ${block.mimeType}, ${Math.floor((block.data.length * 3) / 4)} bytes]`);
        break;
      case 'resource': {
        const r = block.resource as { uri: string; text?: string; mimeType?: string };
        parts.push(typeof r.text === 'string' ? `[resource ${r.uri}]\n${r.text}` : `[resource ${r.uri}${r.mimeType ? `, ${r.mimeType}` : ''}, binary]`);
        break;
      }
      case 'resource_link':
        parts.push(`[resource link ${block.uri}${block.name ? ` (${block.name})` : ''}]`);
        break;
      default:
        parts.push(`[${(block as { type: string }).type} content]`);
    }
  }
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  const text = parts.length === 0 ? '(no content)' : parts.join('\n');
  if (text.length <= MCP_OUTPUT_MAX_CHARS) return text;
  return `${text.slice(0, MCP_OUTPUT_MAX_CHARS)}\n[truncated: the result has ${text.length} characters; the first ${MCP_OUTPUT_MAX_CHARS} are shown]`;
}
