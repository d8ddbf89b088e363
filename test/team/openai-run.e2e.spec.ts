import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { appClient } from '../support/app-client';
import { chatHttpError, chatToolCall, startFakeChatCompletions, type FakeChatCompletions } from '../support/fake-chat-completions';
import { E2E_API_KEYS_ENV, E2E_KEYS, startE2eApp, type E2eApp } from '../support/e2e-app';
import { spawnHttpServer, type ServerChild } from '../support/http-server-child';
import { runCliInProcess, stopInProcessCli } from '../support/in-process-cli';
import { tempDir } from '../support/temp-dir';
import { waitFor } from '../support/wait-for';

// Team runs through the real app on the OpenAI-compatible provider: the `openai` SDK against the
// loopback Chat Completions server. First the whole team on it (TRIAD_MODEL=openai) up to the
// review gate, a 429 retried on the way; then one role on it (a keyless local server) while the
// others stay on the offline model, each pinned where its calls went; after its process dies, a
// process at another server does not take the executor's turn until an operator re-pins it.

const API_KEY = 'sk-openai-e2e-0123456789abcdef';

type Loose = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let api: FakeChatCompletions;

beforeAll(async () => {
  api = await startFakeChatCompletions();
});
afterAll(async () => {
  await stopInProcessCli();
  await api?.stop();
});

async function eventsOf(app: E2eApp, runId: string): Promise<Loose[]> {
  const res = await app.request<{ events: Loose[] }>('GET', `/v1/runs/${runId}/events`, { as: 'auditor' });
  expect(res.status).toBe(200);
  return res.body.events;
}

async function untilAwaitingReview(app: E2eApp, runId: string): Promise<Loose> {
  return waitFor(
    `run ${runId} to reach the review gate`,
    async () => {
      const run = (await app.request<Loose>('GET', `/v1/runs/${runId}`, { as: 'auditor' })).body;
      if (['failed', 'cancelled', 'completed'].includes(run.status)) throw new Error(`run ended ${run.status}: ${JSON.stringify(run)}\n${app.stderr}`);
      return run.status === 'awaiting_review' ? run : undefined;
    },
    60_000,
  );
}

describe('TRIAD_MODEL=openai', () => {
  let app: E2eApp;
  let keyed: FakeChatCompletions;

  beforeAll(async () => {
    keyed = await startFakeChatCompletions({ apiKey: API_KEY });
    app = await startE2eApp({ TRIAD_MODEL: 'openai', OPENAI_API_KEY: API_KEY, OPENAI_BASE_URL: keyed.url, TRIAD_MODEL_RETRY_DELAYS_MS: '50' }, 30_000);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await keyed?.stop();
  });

  it('drives the team to the review gate; usage and cost per call, the pin on openai, a 429 retried, and the key in no event or log line', async () => {
    keyed.enqueue(
      chatHttpError(429, { headers: { 'retry-after': '0' } }),
      chatToolCall('submit_plan', { plan: '1. write hello.txt' }, { text: 'Planning.' }),
      // An answer that carries the key (a model can echo what it saw) is recorded without it.
      chatToolCall('write_file', { path: 'hello.txt', content: `Hello ${API_KEY}\n` }, { text: `Writing with ${API_KEY}.`, usage: { prompt_tokens: 1000, completion_tokens: 100, cached_tokens: 800 } }),
      chatToolCall('submit_work', { summary: 'wrote hello.txt', files: ['hello.txt'] }),
      chatToolCall('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'hello.txt greets' }),
    );
    const launched = await app.request<Loose>('POST', '/v1/runs', { body: { goal: 'Write hello.txt', acceptanceCriteria: ['file hello.txt contains "Hello"'] } });
    expect(launched.status).toBe(202);
    const runId: string = launched.body.runId;
    await untilAwaitingReview(app, runId);

    const events = await eventsOf(app, runId);
    const pinned = { provider: 'openai', model: 'gpt-4.1-mini', endpoint: keyed.endpoint };
    const start = events.find((e) => e.type === 'RunLaunched')!.data;
    expect(start.provider).toBe('openai');
    expect(start.pin).toEqual({ architect: pinned, executor: pinned, reviewer: pinned });
    expect(events.filter((e) => e.type === 'ModelCallFailed').map((e) => [e.data.kind, e.data.status])).toEqual([['rate_limited', 429]]);
    const calls = events.filter((e) => e.type === 'ModelCallCompleted').map((e) => e.data);
    expect(calls.map((c) => c.role)).toEqual(['architect', 'executor', 'executor', 'reviewer']);
    for (const call of calls) expect(call).toMatchObject({ provider: 'openai', endpoint: keyed.endpoint, requestedModel: 'gpt-4.1-mini', requestId: expect.stringMatching(/^req_chat_/) });
    // 200 full-rate input at $0.40, 800 cached at $0.10, 100 output at $1.60, per million.
    expect(calls[1].usage).toEqual({ inputTokens: 200, outputTokens: 100, cacheReadTokens: 800 });
    expect(calls[1].costUsd).toBe(0.00032);
    expect(calls[0].usage).toEqual({ inputTokens: 10, outputTokens: 5 });
    // Every request carried the key, and tools in Chat Completions form.
    expect(keyed.requests.every((r) => r.headers.authorization === `Bearer ${API_KEY}`)).toBe(true);
    expect((keyed.requests[1].body!.tools as Loose[]).map((t) => t.function.name)).toContain('submit_plan');

    expect(JSON.stringify(events)).not.toContain(API_KEY);
    expect(JSON.stringify(events)).toContain('[redacted]');
    expect(app.stderr + app.stdout).not.toContain(API_KEY);
  }, 90_000);

  it('shows team.<role>.provider in the OpenAPI document, and refuses a provider not set up here (400, nothing written)', async () => {
    const doc = (await app.request<Loose>('GET', '/openapi.json', { as: null })).body;
    expect(doc.components.schemas.RoleConfigDto.properties.provider).toMatchObject({ enum: ['anthropic', 'openai', 'offline'] });
    const before = (await app.request<Loose>('GET', '/v1/runs', { as: 'auditor' })).body.runs.length;
    for (const [provider, message] of [
      ['anthropic', "team.executor.provider: 'anthropic' is not set up here; this server's providers are openai"],
      ['mistral', 'team.executor.provider must be one of the following values: anthropic, openai, offline'],
    ]) {
      const res = await app.request<Loose>('POST', '/v1/runs', { body: { goal: 'g', acceptanceCriteria: ['c'], team: { executor: { provider } } } });
      expect({ status: res.status, message: [res.body.message].flat().join('; ') }).toEqual({ status: 400, message });
    }
    expect((await app.request<Loose>('GET', '/v1/runs', { as: 'auditor' })).body.runs).toHaveLength(before);
  });
});

describe('the executor on openai, the others on the offline model', () => {
  let app: E2eApp;

  beforeAll(async () => {
    // A keyless local server (Ollama, llama.cpp) beside the offline default.
    app = await startE2eApp({ TRIAD_MODEL: 'offline', OPENAI_BASE_URL: api.url }, 30_000);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
  });

  it('pins each role where its calls go: only the executor reaches the server, with no key', async () => {
    api.reset().enqueue(
      chatToolCall('write_file', { path: 'hello.txt', content: 'Hello\n' }, { model: 'qwen2.5-coder:7b' }),
      chatToolCall('submit_work', { summary: 'wrote hello.txt', files: ['hello.txt'] }, { model: 'qwen2.5-coder:7b' }),
    );
    const team = { executor: { provider: 'openai', model: 'qwen2.5-coder:7b' } };
    const launched = await app.request<Loose>('POST', '/v1/runs', { body: { goal: 'Write hello.txt', acceptanceCriteria: ['file hello.txt contains "Hello"'], team } });
    expect(launched.status).toBe(202);
    const runId: string = launched.body.runId;
    const run = await untilAwaitingReview(app, runId);

    const offline = { provider: 'offline', model: 'triad-offline-1', endpoint: 'offline:' };
    const local = { provider: 'openai', model: 'qwen2.5-coder:7b', endpoint: api.endpoint };
    const events = await eventsOf(app, runId);
    const start = events.find((e) => e.type === 'RunLaunched')!.data;
    expect(start.pin).toEqual({ architect: offline, executor: local, reviewer: offline });
    expect(start.team.executor).toMatchObject({ provider: 'openai', model: 'qwen2.5-coder:7b' });
    expect(run.pin).toEqual(start.pin);
    // Every call went where its role is pinned (the offline roles take a few turns each).
    const calls = events.filter((e) => e.type === 'ModelCallCompleted').map((e) => e.data);
    expect(new Set(calls.map((c) => c.role))).toEqual(new Set(['architect', 'executor', 'reviewer']));
    for (const call of calls) expect({ role: call.role, provider: call.provider, endpoint: call.endpoint }).toEqual({ role: call.role, provider: start.pin[call.role].provider, endpoint: start.pin[call.role].endpoint });
    expect(calls.filter((c) => c.role === 'executor')).toHaveLength(2);
    // A model outside the price table costs 0, and the log says so once.
    expect(events.filter((e) => e.type === 'ModelCallCompleted' && e.data.role === 'executor').map((e) => e.data.costUsd)).toEqual([0, 0]);
    expect(app.stdout.split('\n').filter((l) => l.includes("model 'qwen2.5-coder:7b'") && l.includes('no row in the price table'))).toHaveLength(1);
    expect(api.requests).toHaveLength(2);
    expect(api.requests.every((r) => r.headers.authorization === undefined && r.body!.model === 'qwen2.5-coder:7b')).toBe(true);
  }, 90_000);
});

describe('a run with its executor on one server, its process killed', () => {
  let other: FakeChatCompletions;
  let dir: { path: string; remove(): void };
  const servers: ServerChild[] = [];

  beforeAll(async () => {
    other = await startFakeChatCompletions();
    dir = tempDir('triad-openai-pin-');
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.kill()));
    await other?.stop();
    dir?.remove();
  });

  /** A process on the offline model with the OpenAI-compatible server at `url` beside it, on the shared store. */
  async function serve(url: string, extra: NodeJS.ProcessEnv = {}): Promise<ServerChild> {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('TRIAD_') || k.startsWith('ANTHROPIC_') || k.startsWith('OPENAI_')) delete env[k];
    Object.assign(env, {
      TRIAD_DATA_DIR: join(dir.path, 'data'),
      TRIAD_STORE: 'sqlite',
      TRIAD_API_KEYS: E2E_API_KEYS_ENV,
      TRIAD_MODEL: 'offline',
      OPENAI_BASE_URL: url,
      TRIAD_LEASE_TTL_MS: '1000',
      TRIAD_RECOVERY_INTERVAL_MS: '100',
      ...extra,
    });
    const server = await spawnHttpServer(env, { logLevels: ['error', 'warn', 'log'] });
    servers.push(server);
    return server;
  }

  it('is left to a process at its endpoint, then driven where an operator re-pins it: only the executor moves', async () => {
    api.reset().enqueue({ kind: 'hang', beforeHeaders: true });
    const first = await serve(api.url);
    const client = (server: ServerChild) => appClient<keyof typeof E2E_KEYS, Loose>(server.url, E2E_KEYS, 'operator');
    const team = { executor: { provider: 'openai', model: 'qwen2.5-coder:7b' } };
    const launched = await client(first).request('POST', '/v1/runs', { body: { goal: 'Write hello.txt', acceptanceCriteria: ['file hello.txt contains "Hello"'], team } });
    expect(launched.status).toBe(202);
    const runId: string = launched.body.runId;
    await waitFor('the executor call to reach the first server', async () => api.requests.length >= 1, 30_000);
    await first.kill();

    // The second process prices the local model from the operator's own rows (TRIAD_MODEL_PRICES).
    const prices = join(dir.path, 'prices.json');
    writeFileSync(prices, JSON.stringify({ 'qwen2.5-coder': { input: 0.5, output: 2, cacheRead: 0.05 } }));
    const second = await serve(other.url, { TRIAD_MODEL_PRICES: prices });
    const offline = { provider: 'offline', model: 'triad-offline-1', endpoint: 'offline:' };
    const pinned = { provider: 'openai', model: 'qwen2.5-coder:7b', endpoint: api.endpoint };
    const waiting = `a process with provider offline at offline: and provider openai at ${api.endpoint}`;
    await waitFor('the second process to leave the run', async () => second.stdout.includes(`run ${runId}: left to ${waiting}`), 30_000);
    const run = (await client(second).request('GET', `/v1/runs/${runId}`, { as: 'auditor' })).body;
    expect(run).toMatchObject({ waitingFor: waiting, pin: { architect: offline, executor: pinned } });
    expect(other.requests).toHaveLength(0);

    other.enqueue(
      chatToolCall('write_file', { path: 'hello.txt', content: 'Hello\n' }),
      chatToolCall('submit_work', { summary: 'wrote hello.txt', files: ['hello.txt'] }),
    );
    const repin = await client(second).request('POST', `/v1/runs/${runId}/resume`, { body: { endpoint: other.url } });
    expect(repin.status).toBe(202);
    const moved = { ...pinned, endpoint: other.endpoint };
    expect(repin.body).toMatchObject({ status: 'running', repinned: { to: { architect: offline, executor: moved, reviewer: offline } } });
    await waitFor('the run at its review gate', async () => (await client(second).request('GET', `/v1/runs/${runId}`, { as: 'auditor' })).body.status === 'awaiting_review', 30_000);

    const events = (await client(second).request('GET', `/v1/runs/${runId}/events`, { as: 'auditor' })).body.events as Loose[];
    const executorCalls = events.filter((e) => e.type === 'ModelCallCompleted' && e.data.role === 'executor').map((e) => e.data.endpoint);
    expect(executorCalls).toEqual([other.endpoint, other.endpoint]);
    expect(api.requests).toHaveLength(1);
    // Priced by the operator's row: USD per million tokens, the cache reads at their own price.
    const priced = events.filter((e) => e.type === 'ModelCallCompleted' && e.data.role === 'executor');
    for (const call of priced) {
      const u = call.data.usage;
      expect(call.data.costUsd).toBeCloseTo((u.inputTokens * 0.5 + u.outputTokens * 2 + (u.cacheReadTokens ?? 0) * 0.05) / 1e6, 9);
      expect(call.data.costUsd).toBeGreaterThan(0);
    }
    expect(second.stdout).not.toContain('no row in the price table');
  }, 120_000);
});

describe('triad run --provider', () => {
  it('given a provider the process is not set up for, or no role, then exit 2 and one line, nothing launched', async () => {
    const dir = tempDir('triad-openai-cli-');
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, TRIAD_DATA_DIR: join(dir.path, 'data'), TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline' };
      for (const k of ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'OPENAI_BASE_URL', 'TRIAD_PG_URL', 'TRIAD_ESDB_URL']) delete env[k];
      const notSetUp = await runCliInProcess(['run', 'g', '--criteria', 'c', '--provider', 'executor=openai'], env);
      expect({ code: notSetUp.code, stderr: notSetUp.stderr.trim().split('\n') }).toEqual({
        code: 2,
        stderr: [expect.stringContaining("team.executor.provider: 'openai' is not set up here; this server's providers are offline")],
      });
      const noRole = await runCliInProcess(['run', 'g', '--criteria', 'c', '--provider', 'openai'], env);
      expect({ code: noRole.code, stderr: noRole.stderr.trim() }).toEqual({ code: 2, stderr: expect.stringContaining("--provider takes role=provider (architect, executor or reviewer), got 'openai'") });
      const listed = await runCliInProcess(['runs', 'list', '--json'], env);
      expect(listed.stdout).not.toContain('"runId"');
    } finally {
      dir.remove();
    }
  }, 60_000);
});
