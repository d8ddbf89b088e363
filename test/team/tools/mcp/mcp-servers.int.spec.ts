import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { decideApproval } from '../../../../src/team/domain/approval-decider';
import type { ToolApprovalRequestedData, ToolCallCompletedData } from '../../../../src/team/domain/run-events';
import { foldRun, runStatus } from '../../../../src/team/domain/run-state';
import { OfflineModelProvider } from '../../../../src/team/models/offline.model';
import { ScriptedModelProvider } from '../../../../src/team/models/scripted.model';
import { PRODUCT_LAUNCH_DEFAULTS } from '../../../../src/team/domain/resilience/policies';
import { parseMcpConfig } from '../../../../src/team/tools/mcp/mcp-config';
import { McpHub } from '../../../../src/team/tools/mcp/mcp-hub';
import { ToolRegistry } from '../../../../src/team/tools/tool-registry';
import type { ToolDefinition } from '../../../../src/team/tools/tool.port';
import { runCliInProcess } from '../../../support/in-process-cli';
import { tempDir } from '../../../support/temp-dir';
import { call, dataOf, expectReplayMatchesLive, plan, roleScript, startHarness, submitWork, verdict, type Harness } from '../../resilience/resilience-support';

// MCP tools against real servers: the filesystem server from the npm registry over stdio, a
// misbehaving server written here (slow, crashing, malformed) over stdio, and one over streamable
// HTTP. Each server is a real child process or a real HTTP listener; the hubs are closed after.

const FS_SERVER = resolve(__dirname, '../../../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const MISBEHAVING = resolve(__dirname, 'misbehaving-server.js');
const NODE_MODULES = resolve(__dirname, '../../../../node_modules');
const SECRET = 'sk-mcp-test-7f3a9c21';

const dir = tempDir('triad-mcp-');
const files = join(dir.path, 'files');
const warnings: string[] = [];
const hubs: McpHub[] = [];

/**
 * What the stdio servers here need to see inside their sandbox, as their entry in a servers file
 * says it: the packages (read-only), this folder's scripts, and the files the filesystem server
 * serves (read-write: move_file).
 */
const SANDBOX = { paths: [NODE_MODULES, __dirname], writablePaths: [files] };

function hubOf(servers: Record<string, unknown>): McpHub {
  for (const server of Object.values(servers) as Array<Record<string, unknown>>) if (server.command !== undefined) server.sandbox ??= SANDBOX;
  const hub = new McpHub(parseMcpConfig(JSON.stringify({ mcpServers: servers }), 'test', {}), { logger: { warn: (m) => warnings.push(m) }, dataDir: join(dir.path, 'hub-data') });
  hubs.push(hub);
  return hub;
}

/** A tool context with a signal of its own, as each dispatch gives. */
const ctx = () => ({ runId: 'run_mcp', role: 'executor' as const, workspace: dir.path, signal: new AbortController().signal });
function named(defs: ToolDefinition[], name: string): ToolDefinition {
  const tool = defs.find((d) => d.name === name);
  if (!tool) throw new Error(`no tool ${name} in ${defs.map((d) => d.name).join(', ')}`);
  return tool;
}

let fsHub: McpHub;
let fsTools: ToolDefinition[];

beforeAll(async () => {
  mkdirSync(files);
  writeFileSync(join(files, 'a.txt'), 'hello from the filesystem server\n');
  fsHub = hubOf({ fs: { command: process.execPath, args: [FS_SERVER, files], env: { FS_TOKEN: SECRET } } });
  fsTools = await fsHub.discover();
});

afterAll(async () => {
  await Promise.all(hubs.map((h) => h.close()));
  dir.remove();
});

afterEach(() => {
  // No secret in anything logged.
  for (const w of warnings) expect(w).not.toContain(SECRET);
});

describe('the filesystem MCP server over stdio', () => {
  it('lists its tools as mcp__fs__<tool> in name order, classified by their annotations', () => {
    const names = fsTools.map((t) => t.name);
    expect(names).toEqual([...names].sort());
    expect(named(fsTools, 'mcp__fs__read_text_file')).toMatchObject({ readOnly: true, idempotent: true, risk: 'low' });
    expect(named(fsTools, 'mcp__fs__write_file')).toMatchObject({ readOnly: false, idempotent: true, risk: 'low' });
    expect(named(fsTools, 'mcp__fs__move_file')).toMatchObject({ readOnly: false, idempotent: false, risk: 'high' });
  });

  it('answers a read-only call through the registry; a refused path is an error result', async () => {
    const registry = new ToolRegistry(fsTools);
    const allowed = registry.resolveRoleTools('reviewer');
    const ok = await registry.invoke({ type: 'tool_use', id: 't1', name: 'mcp__fs__read_text_file', input: { path: join(files, 'a.txt') } }, 'reviewer', allowed, ctx());
    expect(ok).toEqual({ isError: false, output: 'hello from the filesystem server\n' });
    const outside = await registry.invoke({ type: 'tool_use', id: 't2', name: 'mcp__fs__read_text_file', input: { path: '/etc/hostname' } }, 'reviewer', allowed, ctx());
    expect(outside.isError).toBe(true);
    expect(outside.output).toMatch(/denied|outside|not allowed/i);
  });

  let h: Harness | undefined;
  afterEach(() => h?.remove());

  it('a risky call (move_file) waits for a human; approved, it runs once, and replay is exact', async () => {
    writeFileSync(join(files, 'from.txt'), 'move me');
    const move = call('mcp__fs__move_file', { source: join(files, 'from.txt'), destination: join(files, 'to.txt') }, 'tu_move');
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: [move, submitWork()], reviewer: [verdict('APPROVE')] }));
    h = await startHarness({ model, extraTools: fsTools, defaults: PRODUCT_LAUNCH_DEFAULTS });
    let state = await h.driver.drive();
    expect(runStatus(state)).toBe('awaiting_approval');
    const [asked] = dataOf<ToolApprovalRequestedData>(await h.events(), 'ToolApprovalRequested');
    expect(asked).toMatchObject({ name: 'mcp__fs__move_file', risk: 'high', toolUseId: 'tu_move' });
    expect(existsSync(join(files, 'from.txt'))).toBe(true);

    const folded = foldRun(await h.events());
    await h.appendAsOther(decideApproval({ type: 'ApproveToolCall', approvalId: asked.approvalId, approver: { id: 'user:bob', kind: 'human' }, reason: 'fine', at: new Date().toISOString() }, folded));
    state = await h.newDriver().drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(readFileSync(join(files, 'to.txt'), 'utf8')).toBe('move me');
    // Not safe to repeat: its start is recorded before it runs, so a crash cannot call it again.
    const moves = (await h.events()).filter((e) => (e.data as { toolUseId?: string }).toolUseId === 'tu_move').map((e) => e.type);
    expect(moves[0]).toBe('ToolApprovalRequested');
    expect(moves.slice(-2)).toEqual(['ToolCallRequested', 'ToolCallCompleted']);
    expect(dataOf<ToolCallCompletedData>(await h.events(), 'ToolCallCompleted').find((c) => c.toolUseId === 'tu_move')).toMatchObject({ isError: false });
    await expectReplayMatchesLive(h, state);
  });

  it('a team run on the offline model calls a read-only MCP tool once; recorded, replayed exactly, never called again', async () => {
    let calls = 0;
    const counted = fsTools.map((t) => ({ ...t, execute: (input: Record<string, unknown>, c: ReturnType<typeof ctx>) => (calls++, t.execute(input, c)) }));
    h = await startHarness({
      model: new OfflineModelProvider(),
      extraTools: counted,
      launch: { goal: 'Write a greeting and a farewell', acceptanceCriteria: ['file hello.txt contains "Hello"', 'file bye.txt contains "Bye"', 'file NOTES.md exists'] },
    });
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('awaiting_review');
    const mcpCalls = dataOf<ToolCallCompletedData>(await h.events(), 'ToolCallCompleted').filter((c) => c.name.startsWith('mcp__'));
    expect(mcpCalls).toEqual([expect.objectContaining({ role: 'executor', name: 'mcp__fs__list_allowed_directories', isError: false, output: `Allowed directories:\n${files}` })]);
    expect(calls).toBe(1);
    await expectReplayMatchesLive(h, state);
    // Another driver (a resumed process) finds the call recorded: nothing is called again.
    await h.newDriver().drive();
    expect(calls).toBe(1);
  });
});

describe('a misbehaving MCP server', () => {
  let bad: McpHub;
  let tools: ToolDefinition[];
  const refuse = join(dir.path, 'refuse-to-start');
  const pidOf = (output: string) => /instance (\w+)/.exec(output)?.[1];

  beforeAll(async () => {
    bad = hubOf({
      // It reads FIXTURE_REFUSE from the test's folder: visible to it, read-only.
      bad: { command: process.execPath, args: [MISBEHAVING], env: { FIXTURE_SECRET: SECRET, FIXTURE_REFUSE: refuse }, timeoutMs: 400, sandbox: { ...SANDBOX, paths: [...SANDBOX.paths, dir.path] } },
      gone: { command: join(dir.path, 'no-such-server'), env: { TOKEN: SECRET } },
    });
    tools = await bad.discover();
  });

  it('one that cannot start is logged (no secret) and contributes no tools', () => {
    expect(tools.every((t) => t.name.startsWith('mcp__bad__'))).toBe(true);
    expect(warnings.some((w) => /MCP server gone: its tools could not be listed: .*ENOENT/.test(w))).toBe(true);
  });

  it('a call past the timeout is an error result; the server goes on answering', async () => {
    const first = await named(tools, 'mcp__bad__echo').execute({ message: 'one' }, ctx());
    const slow = await named(tools, 'mcp__bad__slow').execute({ ms: 30_000 }, ctx());
    expect(slow).toEqual({ isError: true, output: 'MCP server bad did not answer slow within 400 ms' });
    const after = await named(tools, 'mcp__bad__echo').execute({ message: 'two' }, ctx());
    expect(after.isError).toBe(false);
    expect(pidOf(after.output)).toBe(pidOf(first.output));
  });

  it('a server that dies mid-call is an error result (its stderr redacted); the next call starts it again', async () => {
    const before = await named(tools, 'mcp__bad__echo').execute({ message: 'before' }, ctx());
    const crash = await named(tools, 'mcp__bad__crash').execute({}, ctx());
    expect(crash.isError).toBe(true);
    expect(crash.output).toMatch(/^MCP server bad stopped during the call: .*Connection closed.*crashing now, token \*\*\*/);
    expect(crash.output).not.toContain(SECRET);
    const again = await named(tools, 'mcp__bad__echo').execute({ message: 'again' }, ctx());
    expect(again).toMatchObject({ isError: false, output: expect.stringMatching(/: again$/) });
    expect(pidOf(again.output)).not.toBe(pidOf(before.output));
  });

  it('a malformed result is an error result', async () => {
    const out = await named(tools, 'mcp__bad__malformed').execute({}, ctx());
    expect(out.isError).toBe(true);
    expect(out.output).toMatch(/^MCP server bad answered malformed with a malformed result: .*content/);
  });

  it('a server printing its secret has it redacted from the result', async () => {
    const out = await named(tools, 'mcp__bad__env').execute({}, ctx());
    expect(out).toEqual({ isError: false, output: 'my token is *** (Bearer ***)' });
  });

  it('a server that cannot start again after dying is an error result for each call, until it can', async () => {
    await named(tools, 'mcp__bad__crash').execute({}, ctx());
    writeFileSync(refuse, '');
    const down = await named(tools, 'mcp__bad__echo').execute({ message: 'anyone?' }, ctx());
    expect(down.isError).toBe(true);
    expect(down.output).toMatch(/^MCP server bad is not available: .*refusing to start/);
    rmSync(refuse);
    expect(await named(tools, 'mcp__bad__echo').execute({ message: 'back' }, ctx())).toMatchObject({ isError: false, output: expect.stringMatching(/: back$/) });
  });
});

describe('an MCP server over streamable HTTP', () => {
  let server: Server;
  let url: string;

  beforeAll(async () => {
    // Stateless streamable HTTP: one McpServer and transport per request, behind a bearer token.
    server = createServer(async (req, res) => {
      if (req.headers.authorization !== `Bearer ${SECRET}`) {
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'unauthorized' }));
        return;
      }
      const mcp = new McpServer({ name: 'http-test', version: '1.0.0' });
      mcp.registerTool('whoami', { description: 'The authorization header it was sent.', inputSchema: {}, annotations: { readOnlyHint: true } }, async () => ({
        content: [{ type: 'text', text: `you sent ${req.headers.authorization}` }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => void transport.close().then(() => mcp.close()));
      await mcp.connect(transport);
      await transport.handleRequest(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  });

  afterAll(async () => {
    await Promise.all(hubs.splice(0).map((h) => h.close()));
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('lists and calls its tools with the configured headers; the header never shows', async () => {
    const hub = hubOf({ remote: { type: 'http', url, headers: { Authorization: `Bearer ${SECRET}` } } });
    const tools = await hub.discover();
    expect(tools.map((t) => [t.name, t.readOnly])).toEqual([['mcp__remote__whoami', true]]);
    expect(await tools[0].execute({}, ctx())).toEqual({ isError: false, output: 'you sent ***' });
  });

  it('a refused connection is logged without the header', async () => {
    const hub = hubOf({ wrong: { type: 'http', url, headers: { Authorization: 'Bearer wrong-token-123' } } });
    expect(await hub.discover()).toEqual([]);
    const line = warnings.find((w) => w.startsWith('MCP server wrong:'));
    expect(line).toBeDefined();
    expect(line).not.toContain('wrong-token-123');
  });
});

describe('TRIAD_MCP_CONFIG in the CLI', () => {
  const env = (extra: NodeJS.ProcessEnv) => ({ PATH: process.env.PATH, HOME: process.env.HOME, TRIAD_MODEL: 'offline', ...extra });

  it('a bad file is one line and exit 2, naming the file and the problem', async () => {
    const file = join(dir.path, 'bad.json');
    writeFileSync(file, '{"mcpServers": {"fs": {"command": 42}}}');
    const r = await runCliInProcess(['runs', 'list'], env({ TRIAD_DATA_DIR: join(dir.path, 'cli-bad'), TRIAD_MCP_CONFIG: file }));
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`triad: TRIAD_MCP_CONFIG ${file}: server "fs": "command" must be a non-empty string\n`);
  });

  it('`triad run` drives a run that calls an MCP tool, records it without the secret, and closes the server', async () => {
    const file = join(dir.path, 'mcp.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { bad: { command: process.execPath, args: [MISBEHAVING], env: { FIXTURE_SECRET: '${MCP_SECRET}' }, sandbox: SANDBOX } } }));
    const data = join(dir.path, 'cli-run');
    const r = await runCliInProcess(['run', 'Write a greeting', '--criteria', 'file hello.txt contains "Hello"', '--follow', '--json'], env({ TRIAD_DATA_DIR: data, TRIAD_MCP_CONFIG: file, MCP_SECRET: SECRET }));
    expect(r.code).toBe(0);
    const events = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; data: Record<string, unknown> });
    const completed = events.filter((e) => e.type === 'ToolCallCompleted').map((e) => e.data as unknown as ToolCallCompletedData);
    expect(completed.find((c) => c.name === 'mcp__bad__env')).toMatchObject({ isError: false, output: 'my token is *** (Bearer ***)' });
    expect(r.stdout + r.stderr).not.toContain(SECRET);
    for (const f of readdirSync(data).filter((n) => n.startsWith('triad.db'))) expect(readFileSync(join(data, f)).includes(SECRET)).toBe(false);
    // The app closed its MCP server when the command ended (the other describes' hubs are closed too).
    const children = execFileSync('ps', ['-o', 'args=', '--ppid', String(process.pid)], { encoding: 'utf8' }).split('\n');
    expect(children.filter((args) => args.includes(MISBEHAVING))).toEqual([]);
  });
});
