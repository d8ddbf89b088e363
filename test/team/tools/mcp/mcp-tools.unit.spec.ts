import { parseMcpConfig, redactSecrets, sanitiseName, DEFAULT_MCP_TIMEOUT_MS } from '../../../../src/team/tools/mcp/mcp-config';
import { classifyMcpTool, mcpToolNames } from '../../../../src/team/tools/mcp/mcp-names';
import { createBuiltinTools } from '../../../../src/team/tools/builtin-tools';
import { ToolPolicyError, ToolRegistry, type ToolSource } from '../../../../src/team/tools/tool-registry';
import type { ToolDefinition } from '../../../../src/team/tools/tool.port';
import { mcpProbe } from '../../../../src/team/models/offline.model';

const config = (servers: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) => parseMcpConfig(JSON.stringify({ mcpServers: servers }), '/x/mcp.json', env);
const problem = (text: string, env: NodeJS.ProcessEnv = {}) => {
  try {
    parseMcpConfig(text, '/x/mcp.json', env);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a configuration error');
};

describe('the MCP servers file', () => {
  it('reads stdio and streamable HTTP servers, sorted, with the default timeouts', () => {
    const c = config({
      zeta: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { authorization: 'Bearer tok-123456789' } },
      'my.fs': { command: 'node', args: ['server.js', '.'], env: { API_TOKEN: 'sk-abcdefgh' }, timeoutMs: 500 },
    });
    expect(c.servers.map((s) => [s.name, s.prefix, s.transport, s.timeoutMs])).toEqual([
      ['my.fs', 'my_fs', 'stdio', 500],
      ['zeta', 'zeta', 'http', DEFAULT_MCP_TIMEOUT_MS],
    ]);
    expect(c.servers[0]).toMatchObject({ command: 'node', args: ['server.js', '.'], env: { API_TOKEN: 'sk-abcdefgh' } });
    // Every env and header value is a secret, and a bearer token alone too.
    expect(c.secrets).toEqual(['Bearer tok-123456789', 'tok-123456789', 'sk-abcdefgh']);
  });

  it('takes ${VAR} and ${VAR:-default} from the environment, so secrets stay out of the file', () => {
    const c = config({ gh: { command: '${NODE_BIN:-node}', env: { TOKEN: '${GH_TOKEN}' } } }, { GH_TOKEN: 'ghp-secret-value' });
    expect(c.servers[0]).toMatchObject({ command: 'node', env: { TOKEN: 'ghp-secret-value' } });
    expect(c.secrets).toEqual(['ghp-secret-value']);
  });

  it.each([
    ['{', /^is not JSON/],
    ['[]', /must be a JSON object with "mcpServers"/],
    ['{"servers": {}}', /unknown top-level field "servers"/],
    ['{"mcpServers": []}', /"mcpServers" must be an object/],
    ['{"mcpServers": {"a b": {"command": "x"}}}', /server "a b": names are/],
    ['{"mcpServers": {"a__b": {"command": "x"}}}', /must not contain "__"/],
    ['{"mcpServers": {"a.b": {"command": "x"}, "a_b": {"command": "y"}}}', /give the same tool prefix mcp__a_b__/],
    ['{"mcpServers": {"fs": {"command": ""}}}', /server "fs": "command" must be a non-empty string/],
    ['{"mcpServers": {"fs": {"command": "x", "args": "y"}}}', /"args" must be an array of strings/],
    ['{"mcpServers": {"fs": {"command": "x", "env": {"A": 1}}}}', /"A" must be a string/],
    ['{"mcpServers": {"fs": {"command": "x", "url": "http://h"}}}', /unknown field "url" for a stdio server/],
    ['{"mcpServers": {"fs": {"type": "sse", "url": "http://h"}}}', /"type" must be "stdio" or "http"/],
    ['{"mcpServers": {"fs": {"type": "http", "url": "ftp://h"}}}', /"url" must be http or https/],
    ['{"mcpServers": {"fs": {"type": "http", "url": "not a url"}}}', /"url" is not a URL/],
    ['{"mcpServers": {"fs": {"command": "x", "timeoutMs": 0}}}', /"timeoutMs" must be a whole number/],
    ['{"mcpServers": {"fs": {"command": "x", "env": {"T": "${MISSING}"}}}}', /uses \$\{MISSING\}, which is not set/],
  ])('refuses %s', (text, message) => {
    expect(problem(text)).toMatch(message);
  });

  it('redacts every secret, longest first', () => {
    expect(redactSecrets('a Bearer tok-123456789 b tok-123456789', ['Bearer tok-123456789', 'tok-123456789'])).toBe('a *** b ***');
  });
});

describe('MCP tool names and classes', () => {
  it('names tools mcp__<server>__<tool>, sanitised, cut to 64 characters, collisions numbered', () => {
    expect(sanitiseName('my.server/x')).toBe('my_server_x');
    const long = 'x'.repeat(80);
    const names = mcpToolNames('fs', ['read.file', 'read_file', long]);
    expect(names[0]).toBe('mcp__fs__read_file');
    expect(names[1]).toBe('mcp__fs__read_file_2');
    expect(names[2]).toHaveLength(64);
    expect(names[2]).toMatch(/^mcp__fs__x+_[0-9a-f]{8}$/);
  });

  it('readOnlyHint: read-only; idempotentHint: repeatable; otherwise risky (waits for approval)', () => {
    expect(classifyMcpTool({ readOnlyHint: true })).toEqual({ readOnly: true, idempotent: true, risk: 'low' });
    expect(classifyMcpTool({ readOnlyHint: false, idempotentHint: true })).toEqual({ readOnly: false, idempotent: true, risk: 'low' });
    expect(classifyMcpTool({ idempotentHint: false })).toEqual({ readOnly: false, idempotent: false, risk: 'high' });
    expect(classifyMcpTool(undefined)).toEqual({ readOnly: false, idempotent: false, risk: 'high' });
  });
});

function mcpTool(name: string, hints: { readOnlyHint?: boolean; idempotentHint?: boolean }, inputSchema: Record<string, unknown> = { type: 'object' }): ToolDefinition {
  return { name, description: name, inputSchema, ...classifyMcpTool(hints), lenientSchema: true, annotations: hints, execute: async () => ({ output: 'ok', isError: false }) };
}

/** A source whose tools are those given (discovered in a scrambled order), for server prefixes `fs` and `down`. */
function registryWith(tools: ToolDefinition[]): ToolRegistry {
  const source: ToolSource = { prefixes: ['fs', 'down'], discover: async () => [...tools].reverse(), close: async () => undefined };
  return new ToolRegistry(createBuiltinTools()).addSource(source);
}

const FS_TOOLS = [
  mcpTool('mcp__fs__read_text_file', { readOnlyHint: true }, { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { path: { type: 'string', format: 'uri-ish' } }, required: ['path'] }),
  mcpTool('mcp__fs__write_file', { idempotentHint: true }),
  mcpTool('mcp__fs__move_file', {}),
  mcpTool('mcp__fs__list_allowed_directories', { readOnlyHint: true }),
];

describe('MCP tools in the registry and the allow-lists', () => {
  it('offers the built-in tools first, then MCP tools by name; read-only roles get the read-only ones', async () => {
    const r = registryWith(FS_TOOLS);
    await r.ready();
    expect(r.resolveRoleTools('executor')).toEqual([
      'read_file', 'list_files', 'search_files', 'write_file', 'edit_file', 'run_command', 'spawn_sub_agent',
      'mcp__fs__list_allowed_directories', 'mcp__fs__move_file', 'mcp__fs__read_text_file', 'mcp__fs__write_file',
    ]);
    expect(r.resolveRoleTools('reviewer')).toEqual(['read_file', 'list_files', 'search_files', 'mcp__fs__list_allowed_directories', 'mcp__fs__read_text_file']);
  });

  it('takes patterns: mcp__fs__* is everything of fs the role may have', async () => {
    const r = registryWith(FS_TOOLS);
    await r.ready();
    expect(r.resolveRoleTools('architect', ['mcp__fs__*'])).toEqual(['mcp__fs__list_allowed_directories', 'mcp__fs__read_text_file']);
    expect(r.resolveRoleTools('executor', ['read_file', 'mcp__fs__*'])).toEqual([
      'read_file', 'mcp__fs__list_allowed_directories', 'mcp__fs__move_file', 'mcp__fs__read_text_file', 'mcp__fs__write_file',
    ]);
    expect(r.resolveRoleTools('executor', ['mcp__*__read_*'])).toEqual(['mcp__fs__read_text_file']);
  });

  it('refuses a risky MCP tool named for a read-only role, and names or patterns that match nothing', async () => {
    const r = registryWith(FS_TOOLS);
    await r.ready();
    expect(() => r.resolveRoleTools('reviewer', ['mcp__fs__move_file'])).toThrow(ToolPolicyError);
    expect(() => r.resolveRoleTools('executor', ['mcp__fs__nope'])).toThrow(/unknown tool "mcp__fs__nope"/);
    expect(() => r.resolveRoleTools('executor', ['mcp__other__*'])).toThrow(/matches no tool/);
  });

  it('accepts tools of a configured server not reached yet; they are not offered until it is', async () => {
    const r = registryWith(FS_TOOLS);
    await r.ready();
    expect(r.resolveRoleTools('executor', ['mcp__down__*'])).toEqual([]);
    expect(r.resolveRoleTools('executor', ['mcp__down__query', 'read_file'])).toEqual(['read_file', 'mcp__down__query']);
    expect(r.specsFor('executor', ['read_file', 'mcp__down__query']).map((s) => s.name)).toEqual(['read_file', 'submit_work']);
  });

  it('shows MCP hints with the tool, validates input leniently, and leaves the built-in specs as they were', async () => {
    const r = registryWith(FS_TOOLS);
    const before = JSON.stringify(new ToolRegistry(createBuiltinTools()).specsFor('executor'));
    await r.ready();
    const specs = r.specsFor('executor', r.resolveRoleTools('executor'));
    expect(JSON.stringify(specs.slice(0, 6))).toBe(JSON.stringify(JSON.parse(before).slice(0, 6)));
    expect(specs.find((s) => s.name === 'mcp__fs__read_text_file')!.annotations).toEqual({ readOnlyHint: true });
    expect(r.validate('mcp__fs__read_text_file', { path: 'a' })).toBeUndefined();
    expect(r.validate('mcp__fs__read_text_file', {})).toMatch(/path/);
  });
});

describe('the offline model and MCP tools', () => {
  const spec = (t: ToolDefinition) => ({ name: t.name, description: t.description, input_schema: t.inputSchema, ...(t.annotations ? { annotations: t.annotations } : {}) });

  it('picks the first read-only MCP tool that needs no input, else one with simple inputs, else none', () => {
    expect(mcpProbe(FS_TOOLS.map(spec))).toEqual({ name: 'mcp__fs__list_allowed_directories', input: {} });
    expect(mcpProbe([FS_TOOLS[0], FS_TOOLS[2]].map(spec))).toEqual({ name: 'mcp__fs__read_text_file', input: { path: '.' } });
    expect(mcpProbe([FS_TOOLS[1], FS_TOOLS[2]].map(spec))).toBeUndefined();
    expect(mcpProbe(createBuiltinTools().map(spec))).toBeUndefined();
  });
});
