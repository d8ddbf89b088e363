import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { TRIAD_MCP_TOOLS } from '../../src/integrations/mcp/triad-mcp-server';
import { E2E_KEYS, startE2eApp, type E2eApp } from '../support/e2e-app';
import { tempDir } from '../support/temp-dir';

// triad as an MCP server, through the MCP SDK's own client: streamable HTTP at /mcp under the real
// app (SQLite, the offline model), and `triad mcp` on stdio, both started from the README's
// example MCP servers file.

jest.setTimeout(60_000);

const ROOT = join(__dirname, '..', '..');

interface ServersFile {
  mcpServers: {
    triad: { command: string; args: string[]; env: Record<string, string> };
    'triad-http': { type: 'http'; url: string; headers: Record<string, string> };
  };
}

/** The README's example MCP servers file, as written. */
function readmeServers(): ServersFile {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## MCP server'));
  const block = /```json\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('README.md has no MCP servers file under "## MCP server"');
  return JSON.parse(block[1]) as ServersFile;
}

const CRITERIA = ['file hello.txt contains "Hello"'];

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ isError: boolean; text: string; value: Json }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  return { isError: result.isError === true, text, value: (result.structuredContent ?? {}) as Json };
}

let e2e: E2eApp;
const clients: Client[] = [];

/** A client of the app's /mcp as the README's file says, with `key` instead of its example key. */
async function httpClient(key: string): Promise<Client> {
  const entry = readmeServers().mcpServers['triad-http'];
  const headers = Object.fromEntries(Object.entries(entry.headers).map(([k, v]) => [k, v.replace('ann-secret-1', key)]));
  const client = new Client({ name: 'triad-tests', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(entry.url.replace('http://127.0.0.1:3000', e2e.url)), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

beforeAll(async () => {
  e2e = await startE2eApp();
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await e2e?.close();
});

function expectToolList(tools: Tool[]): void {
  expect(tools.map((t) => t.name).sort()).toEqual([...TRIAD_MCP_TOOLS].sort());
  // Nothing that decides: the gates stay with people.
  expect(tools.filter((t) => /approve|reject|decide/i.test(`${t.name} ${t.title ?? ''}`))).toEqual([]);
  for (const t of tools) {
    expect(t.inputSchema.type).toBe('object');
    expect({ tool: t.name, readOnly: t.annotations?.readOnlyHint }).toEqual({ tool: t.name, readOnly: !t.name.startsWith('launch_') });
  }
}

describe('streamable HTTP at /mcp', () => {
  it('lists the read and launch tools, none that decides a review or a tool approval', async () => {
    const client = await httpClient(E2E_KEYS.operator);
    expectToolList((await client.listTools()).tools);
  });

  it('launch, wait, show, events, workspace diff; a reviewer lists and shows the review; an auditor verifies', async () => {
    const operator = await httpClient(E2E_KEYS.operator);
    const launched = await call(operator, 'launch_run', { goal: 'Write a greeting', acceptanceCriteria: CRITERIA });
    expect(launched.isError).toBe(false);
    const runId = launched.value.runId as string;
    expect(runId).toMatch(/^run_/);
    const waited = await call(operator, 'wait_for_run', { runId, timeoutMs: 45_000 });
    expect(waited.value).toMatchObject({ status: 'waiting', runStatus: 'awaiting_review' });
    const shown = await call(operator, 'show_run', { runId });
    expect(shown.value).toMatchObject({ runId, status: 'awaiting_review', launchedBy: 'user:ops' });
    const events = await call(operator, 'run_events', { runId, limit: 2 });
    expect(events.value.events.map((e: Json) => e.type)[0]).toBe('RunLaunched');
    expect(events.value.nextRevision).toBe(2);
    const diff = await call(operator, 'workspace_diff', { runId });
    expect(diff.value.changes).toContainEqual({ path: 'hello.txt', change: 'added' });
    expect(diff.value.patch).toContain('+++ b/hello.txt');

    const reviewer = await httpClient(E2E_KEYS.reviewer);
    const reviews = await call(reviewer, 'list_reviews');
    const review = (reviews.value.reviews as Json[]).find((r) => r.runId === runId)!;
    expect(review.reviewId).toBe(shown.value.pendingReview.reviewId);
    const one = await call(reviewer, 'show_review', { reviewId: review.reviewId });
    expect(one.value).toMatchObject({ reviewId: review.reviewId, runId, state: 'open', run: { goal: 'Write a greeting' }, caller: { mayDecide: true } });

    const auditor = await httpClient(E2E_KEYS.auditor);
    const verified = await call(auditor, 'verify_decisions');
    expect(verified.value).toMatchObject({ ok: true });
  });

  it('each tool needs the role its route needs: refused as a tool error, nothing launched', async () => {
    const before = (await e2e.request<{ runs: unknown[] }>('GET', '/v1/runs')).body.runs.length;
    const reviewer = await httpClient(E2E_KEYS.reviewer);
    const launch = await call(reviewer, 'launch_run', { goal: 'Write a greeting', acceptanceCriteria: CRITERIA });
    expect(launch).toMatchObject({ isError: true, text: expect.stringMatching(/needs the role operator/) });
    const auditor = await httpClient(E2E_KEYS.auditor);
    expect(await call(auditor, 'list_reviews')).toMatchObject({ isError: true, text: expect.stringMatching(/needs the role reviewer/) });
    const operator = await httpClient(E2E_KEYS.operator);
    expect(await call(operator, 'verify_decisions')).toMatchObject({ isError: true, text: expect.stringMatching(/needs the role auditor/) });
    expect((await e2e.request<{ runs: unknown[] }>('GET', '/v1/runs')).body.runs.length).toBe(before);
  });

  it('a launch is validated as POST /v1/runs validates it; an unknown run is a tool error', async () => {
    const operator = await httpClient(E2E_KEYS.operator);
    expect(await call(operator, 'launch_run', { goal: 'Write a greeting', acceptanceCriteria: CRITERIA, maxIterations: 0 })).toMatchObject({ isError: true, text: expect.stringMatching(/maxIterations must not be less than 1/) });
    expect(await call(operator, 'launch_run', { goal: ' ', acceptanceCriteria: CRITERIA })).toMatchObject({ isError: true, text: expect.stringMatching(/goal must not be blank/) });
    // One message per real problem, as the HTTP route answers: a missing field named once.
    expect(await call(operator, 'launch_run', { goal: 'Write a greeting' })).toMatchObject({ isError: true, text: expect.stringMatching(/acceptanceCriteria/) });
    // A misspelt field is refused, not dropped (POST /v1/runs refuses it too).
    expect(await call(operator, 'launch_run', { goal: 'Write a greeting', acceptanceCriteria: CRITERIA, maxIteration: 2 })).toMatchObject({ isError: true, text: expect.stringMatching(/maxIteration/) });
    expect(await call(operator, 'show_run', { runId: 'run_nothere' })).toMatchObject({ isError: true, text: 'run run_nothere not found' });
  });

  it('a wrong key is 401 before any MCP message is read; GET /mcp is 405', async () => {
    await expect(httpClient('not-a-key-of-anyone')).rejects.toThrow(/401/);
    const none = await e2e.fetch('POST', '/mcp', { as: null, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } });
    expect(none.status).toBe(401);
    expect((await e2e.request('GET', '/mcp')).status).toBe(405);
    const notMcp = await e2e.request<{ message: string }>('POST', '/mcp', { body: { hello: 'world' }, headers: { accept: 'application/json, text/event-stream' } });
    expect(notMcp.status).toBe(400);
  });
});

describe('triad mcp on stdio', () => {
  it('the README file starts it: tools listed, a run launched, driven here to the gate, shown, the log verified', async () => {
    const dir = tempDir('triad-mcp-stdio-');
    const entry = readmeServers().mcpServers.triad;
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(ANTHROPIC_|OPENAI_|TRIAD_)/.test(k)) env[k] = v;
    Object.assign(env, entry.env, { TRIAD_DATA_DIR: join(dir.path, 'data'), TRIAD_MODEL: 'offline', TRIAD_STORE: 'sqlite', TRIAD_USER: 'mcp-user' });
    const client = new Client({ name: 'triad-tests', version: '1.0.0' });
    const transport = new StdioClientTransport({ command: entry.command === 'node' ? process.execPath : entry.command, args: entry.args, cwd: ROOT, env, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      await client.connect(transport);
      expectToolList((await client.listTools()).tools);
      const launched = await call(client, 'launch_run', { goal: 'Write a greeting', acceptanceCriteria: CRITERIA });
      expect({ launched, stderr }).toMatchObject({ launched: { isError: false } });
      const runId = launched.value.runId as string;
      expect((await call(client, 'wait_for_run', { runId, timeoutMs: 45_000 })).value).toMatchObject({ status: 'waiting' });
      expect((await call(client, 'show_run', { runId })).value).toMatchObject({ status: 'awaiting_review', launchedBy: 'user:mcp-user' });
      expect((await call(client, 'verify_decisions')).value).toMatchObject({ ok: true });
    } finally {
      await client.close();
      dir.remove();
    }
  });
});
