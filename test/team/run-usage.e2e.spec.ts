import { join } from 'node:path';
import { costOf } from '../../src/team/domain/pricing';
import { startFakeMessagesApi, toolUseStep, type FakeMessagesApi } from '../support/fake-messages-api';
import { runCliInProcess } from '../support/in-process-cli';
import { tempDir } from '../support/temp-dir';
import { appEnv, startApp, waitForRun, type AppServer, type Loose } from './resilience/approvals-app';

// A run's usage counts the prompt cache beside input and output tokens, per run and per role, as
// the provider billed them and as its cost priced them: the real app over HTTP, driven by the real
// SDK against the fake Messages API, then `triad runs show` on the same store.

const API_KEY = 'sk-ant-test-run-usage-0123456789';
const MODEL = 'claude-sonnet-4-6';
const TEAM = { architect: { model: MODEL }, executor: { model: MODEL }, reviewer: { model: MODEL } };

const CALLS = {
  architect: { input_tokens: 100, output_tokens: 20, cache_creation_input_tokens: 1000 },
  executor: { input_tokens: 50, output_tokens: 30, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200 },
  reviewer: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 800 },
};

let api: FakeMessagesApi;
let server: AppServer;
let dir: { path: string; remove(): void };
let runId: string;
let run: Loose;

beforeAll(async () => {
  api = await startFakeMessagesApi({ apiKey: API_KEY });
  dir = tempDir('triad-run-usage-');
  server = await startApp(appEnv(join(dir.path, 'data'), api.url, API_KEY));
  api.enqueue(
    toolUseStep('submit_plan', { plan: '1. write it' }, { usage: CALLS.architect }),
    toolUseStep('submit_work', { summary: 'wrote it', files: [] }, { usage: CALLS.executor }),
    toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'fine' }, { usage: CALLS.reviewer }),
  );
  const res = await server.request('POST', '/v1/runs', { body: { goal: 'Write a greeting', acceptanceCriteria: ['a greeting exists'], team: TEAM } });
  expect(res.status).toBe(202);
  runId = res.body.runId as string;
  run = await waitForRun(server, runId, (r) => r.status === 'awaiting_review');
}, 60_000);
afterAll(async () => {
  await server?.close();
  await api?.stop();
  dir?.remove();
});

const tokens = (u: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number }) => ({
  inputTokens: u.input_tokens,
  outputTokens: u.output_tokens,
  cacheReadTokens: u.cache_read_input_tokens ?? 0,
  cacheWriteTokens: u.cache_creation_input_tokens ?? 0,
});
const cost = Object.values(CALLS).reduce((sum, u) => sum + costOf(MODEL, tokens(u)), 0);

it('GET /v1/runs/:id sums cache reads and writes per run and per role, and prices them', () => {
  expect(run.usage).toEqual({
    inputTokens: 160,
    outputTokens: 55,
    cacheReadTokens: 1800,
    cacheWriteTokens: 1200,
    costUsd: Math.round(cost * 1e6) / 1e6,
    turns: 3,
    byRole: {
      architect: { ...tokens(CALLS.architect), turns: 1 },
      executor: { ...tokens(CALLS.executor), turns: 1 },
      reviewer: { ...tokens(CALLS.reviewer), turns: 1 },
    },
  });
  // The cache costs: the same tokens uncached would be priced otherwise.
  expect(run.usage.costUsd).not.toBe(costOf(MODEL, { inputTokens: 160, outputTokens: 55 }));
});

it('the OpenAPI document describes the run usage, cache fields included', async () => {
  const doc = (await server.request('GET', '/openapi.json', { as: null })).body;
  expect(doc.paths['/v1/runs/{id}'].get.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/RunSummary' });
  const usage = doc.components.schemas.RunSummary.properties.usage;
  expect(usage.required).toEqual(expect.arrayContaining(['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens', 'costUsd', 'byRole']));
  expect(usage.properties.byRole.properties.executor.required).toEqual(expect.arrayContaining(['cacheReadTokens', 'cacheWriteTokens', 'turns']));
});

it('`triad runs show` prints the cache next to input and output, per run and per role; --json is the API view', async () => {
  const env = { ...appEnv(join(dir.path, 'data'), api.url, API_KEY), TRIAD_USER: 'ann' };
  const text = await runCliInProcess(['runs', 'show', runId], env);
  expect(text.code).toBe(0);
  expect(text.stdout).toContain(`usage     3 turns, 160 input + 55 output tokens, cache 1800 read + 1200 written, $${run.usage.costUsd.toFixed(4)}`);
  expect(text.stdout).toContain('  architect 1 turn(s), 100 input + 20 output tokens, cache 0 read + 1000 written');
  expect(text.stdout).toContain('  executor  1 turn(s), 50 input + 30 output tokens, cache 1000 read + 200 written');
  expect(text.stdout).toContain('  reviewer  1 turn(s), 10 input + 5 output tokens, cache 800 read + 0 written');
  const json = await runCliInProcess(['runs', 'show', runId, '--json'], env);
  expect(JSON.parse(json.stdout).usage).toEqual(run.usage);
});
