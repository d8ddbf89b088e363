import { join } from 'node:path';
import { startFakeMessagesApi, toolUseStep, type FakeMessagesApi } from '../support/fake-messages-api';
import { spawnHttpServer, type ServerChild } from '../support/http-server-child';
import { runCliInProcess, stopInProcessCli } from '../support/in-process-cli';
import { tempDir } from '../support/temp-dir';
import { waitFor } from '../support/wait-for';
import { appEnv, KEYS, type KeyHolder, type Loose } from './resilience/approvals-app';

// A run is pinned to the provider and endpoint it was launched on. Launched on one fake Messages
// API, its process killed (kill -9), it is not driven by a process at another endpoint nor by the
// offline model on the same store — nothing reaches the other endpoint — until an operator
// re-pins it; then the process that matches drives it.

const API_KEY = 'sk-ant-test-pin-0123456789';
const MODEL = 'claude-sonnet-4-6';
const TEAM = { architect: { model: MODEL }, executor: { model: MODEL }, reviewer: { model: MODEL } };
const LEASE = { TRIAD_LEASE_TTL_MS: '1000', TRIAD_RECOVERY_INTERVAL_MS: '100' };

let apiA: FakeMessagesApi;
let apiB: FakeMessagesApi;
let dir: { path: string; remove(): void };
const servers: ServerChild[] = [];
const dataDir = () => join(dir.path, 'data');

beforeAll(async () => {
  apiA = await startFakeMessagesApi({ apiKey: API_KEY });
  apiB = await startFakeMessagesApi({ apiKey: API_KEY });
  dir = tempDir('triad-pin-');
}, 60_000);
afterAll(async () => {
  await Promise.all(servers.map((s) => s.kill()));
  await stopInProcessCli();
  await apiA?.stop();
  await apiB?.stop();
  dir?.remove();
});

const endpointOf = (api: FakeMessagesApi) => api.url; // http://127.0.0.1:<port>: scheme, host and port already

async function serve(env: NodeJS.ProcessEnv): Promise<ServerChild> {
  const server = await spawnHttpServer(env, { logLevels: ['error', 'warn', 'log'] });
  servers.push(server);
  return server;
}

async function request(server: ServerChild, method: string, path: string, options: { as?: KeyHolder; body?: unknown } = {}): Promise<{ status: number; body: Loose }> {
  const headers: Record<string, string> = { authorization: `Bearer ${KEYS[options.as ?? 'ann']}` };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${server.url}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const eventsOf = async (server: ServerChild, runId: string): Promise<Loose[]> => (await request(server, 'GET', `/v1/runs/${runId}/events`, { as: 'aud' })).body.events;

/** The environment of a process on the offline model (no key), same store. */
function offlineEnv(): NodeJS.ProcessEnv {
  const env = appEnv(dataDir(), apiA.url, API_KEY, LEASE);
  delete env.ANTHROPIC_API_KEY;
  delete env.ANTHROPIC_BASE_URL;
  env.TRIAD_MODEL = 'offline';
  return env;
}

describe('a run pinned to its model', () => {
  it('refuses a launch naming a model no provider here serves (400, CLI exit 2), writing nothing', async () => {
    const server = await serve(appEnv(dataDir(), apiA.url, API_KEY, LEASE));
    try {
      const before = (await request(server, 'GET', '/v1/runs', { as: 'aud' })).body.runs.length;
      const refused = await request(server, 'POST', '/v1/runs', { body: { goal: 'g', acceptanceCriteria: ['c'], team: { executor: { model: 'gpt-4o' } } } });
      expect(refused.status).toBe(400);
      expect(refused.body.message).toBe(`team.executor.model: 'gpt-4o' is not served here; this server's provider anthropic at ${endpointOf(apiA)} serves Claude models (claude-...)`);
      const cli = await runCliInProcess(['run', 'g', '--criteria', 'c', '--model', 'gpt-4o'], offlineEnv());
      expect(cli.code).toBe(2);
      expect(cli.stderr.trim().split('\n')).toEqual([expect.stringMatching(/'gpt-4o' is not served here; .*provider offline at offline: serves the offline model triad-offline-1/)]);
      expect((await request(server, 'GET', '/v1/runs', { as: 'aud' })).body.runs).toHaveLength(before);
      expect(apiA.requests).toHaveLength(0);
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('after kill -9, neither another endpoint nor the offline model drives it; a re-pin is recorded, then it is driven', async () => {
    // Launched on A, whose first answer never comes: the run is in flight when its process dies.
    apiA.enqueue({ kind: 'hang' });
    const first = await serve(appEnv(dataDir(), apiA.url, API_KEY, LEASE));
    const launched = await request(first, 'POST', '/v1/runs', { body: { goal: 'Write hello.txt', acceptanceCriteria: ['hello.txt exists'], team: TEAM } });
    expect(launched.status).toBe(202);
    const runId: string = launched.body.runId;
    const pinA = { provider: 'anthropic', model: MODEL, endpoint: endpointOf(apiA) };
    expect((await eventsOf(first, runId))[0].data.pin).toEqual({ architect: pinA, executor: pinA, reviewer: pinA });
    await waitFor('the call to reach A', async () => apiA.requests.length >= 1, 20_000);
    await first.kill();

    const other = await serve(appEnv(dataDir(), apiB.url, API_KEY, LEASE));
    const offline = await serve(offlineEnv());
    const waiting = `a process with provider anthropic at ${endpointOf(apiA)}`;
    // Once the dead process's lease lapses, each process's recovery finds the run and leaves it.
    for (const server of [other, offline]) {
      await waitFor(`${server.url} to leave the run to A`, async () => server.stdout.includes(`run ${runId}: left to ${waiting}`), 20_000);
      const run = (await request(server, 'GET', `/v1/runs/${runId}`, { as: 'aud' })).body;
      expect(run).toMatchObject({ status: 'planning', waitingFor: waiting, pin: { executor: pinA } });
    }
    const shown = await runCliInProcess(['runs', 'show', runId], offlineEnv());
    expect(shown.stdout).toContain(`waiting   for ${waiting}`);
    const before = await eventsOf(other, runId);
    expect(before.filter((e) => e.type === 'DriverClaimed')).toHaveLength(1);
    expect(before.some((e) => e.type === 'ModelCallCompleted')).toBe(false);
    expect(apiB.requests).toHaveLength(0);

    // Bad re-pins are 400s and write nothing; so is a model the new provider does not serve.
    for (const body of [{ endpoint: 'ftp://elsewhere' }, { models: { janitor: MODEL } }, { endpoint: `http://key:${API_KEY}@127.0.0.1:1` }, { endpoint: 'offline:' }]) {
      const res = await request(other, 'POST', `/v1/runs/${runId}/resume`, { as: 'olga', body });
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
    }
    expect(await eventsOf(other, runId)).toHaveLength(before.length);

    // The operator re-pins it to B: recorded with who and both pins, and the process at B drives it.
    apiB.enqueue(
      toolUseStep('submit_plan', { plan: '1. write hello.txt' }),
      toolUseStep('write_file', { path: 'hello.txt', content: 'Hello' }),
      toolUseStep('submit_work', { summary: 'wrote it', files: ['hello.txt'] }),
      toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'fine' }),
    );
    const repin = await request(other, 'POST', `/v1/runs/${runId}/resume`, { as: 'olga', body: { endpoint: `${apiB.url}/v1?ignored=1` } });
    expect(repin.status).toBe(202);
    const pinB = { ...pinA, endpoint: endpointOf(apiB) };
    expect(repin.body).toMatchObject({ runId, status: 'running', repinned: { from: { executor: pinA }, to: { executor: pinB } } });
    await waitFor('the run at its review gate', async () => (await request(other, 'GET', `/v1/runs/${runId}`, { as: 'aud' })).body.status === 'awaiting_review', 30_000);

    const events = await eventsOf(other, runId);
    const repinned = events.find((e) => e.type === 'RunRepinned');
    expect(repinned.data).toEqual({ by: 'user:olga', from: { architect: pinA, executor: pinA, reviewer: pinA }, to: { architect: pinB, executor: pinB, reviewer: pinB }, at: expect.any(String) });
    const calls = events.filter((e) => e.type === 'ModelCallCompleted');
    expect(calls.length).toBeGreaterThanOrEqual(3);
    for (const call of calls) expect(call.data).toMatchObject({ provider: 'anthropic', endpoint: endpointOf(apiB), requestedModel: MODEL, model: MODEL, requestId: expect.stringMatching(/^req_fake_\d+$/) });
    // Claimed twice: at launch, and after the re-pin by the process at B. A got only the call in flight when its process died.
    expect(events.filter((e) => e.type === 'DriverClaimed')).toHaveLength(2);
    expect(apiA.requests).toHaveLength(1);
  }, 120_000);

  it('a run suspended on Claude and resumed by `triad resume` without a key is not finished by the offline model; a process at its endpoint finishes it', async () => {
    apiA.reset();
    apiA.enqueue({ kind: 'hang' });
    const first = await serve(appEnv(dataDir(), apiA.url, API_KEY, LEASE));
    const launched = await request(first, 'POST', '/v1/runs', { body: { goal: 'Write hello.txt', acceptanceCriteria: ['hello.txt exists'], team: TEAM } });
    const runId: string = launched.body.runId;
    await waitFor('the call to reach A', async () => apiA.requests.length >= 1, 20_000);
    await first.stop();

    const resumed = await runCliInProcess(['resume', runId], offlineEnv());
    expect(resumed.code).toBe(1);
    expect(resumed.stdout).toContain(`waiting   for a process with provider anthropic at ${endpointOf(apiA)}`);

    apiA.enqueue(
      toolUseStep('submit_plan', { plan: '1. write hello.txt' }),
      toolUseStep('write_file', { path: 'hello.txt', content: 'Hello' }),
      toolUseStep('submit_work', { summary: 'wrote it', files: ['hello.txt'] }),
      toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'fine' }),
    );
    const again = await serve(appEnv(dataDir(), apiA.url, API_KEY, LEASE));
    await waitFor('the run at its review gate', async () => (await request(again, 'GET', `/v1/runs/${runId}`, { as: 'aud' })).body.status === 'awaiting_review', 30_000);
    const events = await eventsOf(again, runId);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['RunSuspended', 'RunResumed']));
    // Claimed at launch and by the process at A afterwards: never by the CLI on the offline model.
    expect(events.filter((e) => e.type === 'DriverClaimed')).toHaveLength(2);
    const calls = events.filter((e) => e.type === 'ModelCallCompleted');
    expect(calls.length).toBeGreaterThanOrEqual(3);
    for (const call of calls) expect(call.data).toMatchObject({ provider: 'anthropic', endpoint: endpointOf(apiA), model: MODEL });
  }, 120_000);
});
