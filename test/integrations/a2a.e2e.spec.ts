import { randomUUID } from 'node:crypto';
import { Role, type Message, type SendMessageRequest, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import type { RunSummary } from '../../src/team/runs/run-summary';
import { E2E_KEYS, startE2eApp, type E2eApp } from '../support/e2e-app';
import { waitFor } from '../support/wait-for';

// triad as an A2A agent, driven by the A2A SDK's own client (1.0) and by plain JSON-RPC in A2A 0.3's
// method names, against the real app on SQLite and the offline model.

jest.setTimeout(60_000);

let e2e: E2eApp;
let operator: Client;

const authed =
  (key: string): typeof fetch =>
  (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };

const clientWith = (key: string) => new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: authed(key) })], cardResolver: new DefaultAgentCardResolver({ fetchImpl: authed(key) }) }).createFromUrl(e2e.url);

beforeAll(async () => {
  e2e = await startE2eApp();
  operator = await clientWith(E2E_KEYS.operator);
});
afterAll(async () => {
  await e2e?.close();
});

const CRITERIA = ['file hello.txt contains "Hello"'];

function message(text: string | undefined, data?: unknown): Message {
  const parts: Message['parts'] = [];
  if (text !== undefined) parts.push({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' });
  if (data !== undefined) parts.push({ content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: 'application/json' });
  return { messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts, metadata: undefined, extensions: [], referenceTaskIds: [] };
}

const send = (m: Message, returnImmediately = true): SendMessageRequest => ({
  tenant: '',
  message: m,
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
  metadata: undefined,
});

const asTask = (result: Message | Task): Task => {
  expect('status' in result).toBe(true);
  return result as Task;
};

/** A 0.3 JSON-RPC call as a 0.3 client sends it (no A2A-Version header). */
async function rpc03(method: string, params: unknown, key: string = E2E_KEYS.operator): Promise<{ status: number; body: { result?: Record<string, unknown>; error?: { code: number; message: string } } }> {
  const res = await e2e.fetch('POST', '/a2a', { as: { secret: key }, body: { jsonrpc: '2.0', id: 1, method, params } });
  return { status: res.status, body: (await res.json()) as never };
}

const run = async (id: string) => (await e2e.request<RunSummary>('GET', `/v1/runs/${id}`)).body;

describe('the agent card', () => {
  it('is public, names the endpoint, both skills, streaming and the bearer keys (0.3 shape without A2A-Version)', async () => {
    const res = await e2e.request<{ version: unknown; skills: Array<{ name: string }> }>('GET', '/.well-known/agent-card.json', { as: null });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'triad', url: `${e2e.url}/a2a`, preferredTransport: 'JSONRPC', capabilities: { streaming: true }, securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, security: [{ bearer: [] }] });
    expect(typeof res.body.version).toBe('string');
    expect(res.body.skills.map((s) => s.name)).toEqual(['team run', 'project']);
  });

  it('speaks A2A 1.0 to the SDK client: its interfaces are the JSON-RPC endpoint', async () => {
    const card = await operator.getAgentCard();
    expect(card.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion])).toEqual([
      [`${e2e.url}/a2a`, 'JSONRPC', '1.0'],
      [`${e2e.url}/a2a`, 'JSONRPC', '0.3'],
    ]);
    expect(card.capabilities?.streaming).toBe(true);
    expect(operator.protocolVersion).toBe('1.0');
  });
});

describe('a task is a run', () => {
  it('send: working, input-required at the review gate, completed with the workspace files once a reviewer approves', async () => {
    const task = asTask(await operator.sendMessage(send(message('Write a greeting', { acceptanceCriteria: CRITERIA }))));
    expect(task.id).toMatch(/^run_/);
    expect(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']).toContain(stateName(task));
    const waiting = await waitFor('the task to wait for a human', async () => {
      const t = await operator.getTask({ tenant: '', id: task.id });
      return stateName(t) === 'TASK_STATE_INPUT_REQUIRED' && t;
    }, 45_000, 50, () => e2e.stderr);
    expect(textOf(waiting)).toContain('waiting for a human review');
    const reviewId = (await run(task.id)).pendingReview!.reviewId;
    expect(waiting.metadata?.reviewId).toBe(reviewId);
    const approved = await e2e.request('POST', `/v1/reviews/${reviewId}/approve`, { as: 'reviewer', body: { reason: 'looks right' } });
    expect(approved.status).toBe(200);
    const done = await operator.getTask({ tenant: '', id: task.id });
    expect(stateName(done)).toBe('TASK_STATE_COMPLETED');
    const hello = done.artifacts.find((a) => a.name === 'hello.txt');
    expect(hello?.parts[0].content).toEqual({ $case: 'text', value: expect.stringContaining('Hello') });
  });

  it('message/send in 0.3 words waits until the gate, answers the 0.3 state names, and the same message names the same task', async () => {
    const params = { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'Write a greeting' }, { kind: 'data', data: { acceptanceCriteria: CRITERIA } }] } };
    const first = await rpc03('message/send', params);
    expect(first.status).toBe(200);
    expect(first.body.result).toMatchObject({ kind: 'task', status: { state: 'input-required' } });
    const again = await rpc03('message/send', params);
    expect(again.body.result?.id).toBe(first.body.result?.id);
    const got = await rpc03('tasks/get', { id: first.body.result?.id });
    expect(got.body.result).toMatchObject({ id: first.body.result?.id, status: { state: 'input-required' } });
    // A reviewer rejects for good: the task is rejected.
    const reviewId = (await run(first.body.result!.id as string)).pendingReview!.reviewId;
    const rejected = await e2e.request('POST', `/v1/reviews/${reviewId}/reject`, { as: 'reviewer', body: { reason: 'not this', rework: false } });
    expect(rejected.status).toBe(200);
    expect((await rpc03('tasks/get', { id: first.body.result?.id })).body.result).toMatchObject({ status: { state: 'rejected' } });
  });

  it('stream: the task, its state updates as the run records them, its files, until the gate', async () => {
    const updates: StreamResponse[] = [];
    for await (const u of operator.sendMessageStream(send(message('Write a greeting', { acceptanceCriteria: CRITERIA }), false))) updates.push(u);
    expect(updates[0].payload?.$case).toBe('task');
    const states = updates.flatMap((u) => (u.payload?.$case === 'statusUpdate' ? [TaskStateName(u.payload.value.status!.state)] : []));
    expect(states.length).toBeGreaterThan(1);
    expect(states).toContain('TASK_STATE_WORKING');
    expect(states[states.length - 1]).toBe('TASK_STATE_INPUT_REQUIRED');
    const files = updates.flatMap((u) => (u.payload?.$case === 'artifactUpdate' ? [u.payload.value.artifact!.name] : []));
    expect(files).toContain('hello.txt');
  });

  it('resubscribe to a task waiting at the gate: the task as it stands, and the stream ends (nothing moves until a human decides)', async () => {
    const task = asTask(await operator.sendMessage(send(message('Write a greeting', { acceptanceCriteria: CRITERIA }), false)));
    expect(stateName(task)).toBe('TASK_STATE_INPUT_REQUIRED');
    const updates: StreamResponse[] = [];
    for await (const u of operator.resubscribeTask({ tenant: '', id: task.id })) updates.push(u);
    expect(updates.map((u) => u.payload?.$case)).toEqual(['task']);
    expect(updates[0].payload?.$case === 'task' && stateName(updates[0].payload.value)).toBe('TASK_STATE_INPUT_REQUIRED');
  });

  it('cancel: the run is cancelled with the caller as the canceller; a reviewer key may not cancel', async () => {
    const task = asTask(await operator.sendMessage(send(message('Write a greeting', { acceptanceCriteria: CRITERIA }))));
    const reviewer = await clientWith(E2E_KEYS.reviewer);
    await expect(reviewer.cancelTask({ tenant: '', id: task.id, metadata: undefined })).rejects.toThrow(/403|operator/);
    const cancelled = await operator.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    expect(stateName(cancelled)).toBe('TASK_STATE_CANCELED');
    expect((await run(task.id)).status).toBe('cancelled');
    const events = await e2e.request<{ events: Array<{ type: string; metadata: { actor: string } }> }>('GET', `/v1/runs/${task.id}/events`);
    expect(events.body.events.find((e) => e.type === 'RunEnded')?.metadata.actor).toBe('user:ops');
    // An ended task cannot be cancelled again.
    await expect(operator.cancelTask({ tenant: '', id: task.id, metadata: undefined })).rejects.toThrow();
  });
});

describe('a task is a project', () => {
  it('skill "project" launches one: its task waits input-required for the project review, then completes when a reviewer approves', async () => {
    const tasks = [{ key: 'a', goal: 'Write a.txt', acceptanceCriteria: ['file a.txt exists'] }];
    const task = asTask(await operator.sendMessage(send(message('One file', { skill: 'project', tasks, run: { maxIterations: 1 } }))));
    expect(task.id).toMatch(/^prj_/);
    const waiting = await waitFor('the project to wait for its review', async () => {
      const t = await operator.getTask({ tenant: '', id: task.id });
      return stateName(t) === 'TASK_STATE_INPUT_REQUIRED' && t;
    }, 45_000, 50, () => e2e.stderr);
    expect(waiting.metadata?.runIds).toHaveLength(1);
    const approved = await e2e.request('POST', `/v1/projects/${task.id}/review/approve`, { as: 'reviewer', body: { reason: 'fine' } });
    expect(approved.status).toBe(200);
    expect(stateName(await operator.getTask({ tenant: '', id: task.id }))).toBe('TASK_STATE_COMPLETED');
  });
});

describe('refusals', () => {
  it('a wrong key or none is 401 and launches nothing; a reviewer may read but not launch', async () => {
    const before = (await e2e.request<{ runs: unknown[] }>('GET', '/v1/runs')).body.runs.length;
    const wrong = await rpc03('message/send', { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'x' }, { kind: 'data', data: { acceptanceCriteria: CRITERIA } }] } }, 'not-a-key-at-all');
    expect(wrong.status).toBe(401);
    const none = await e2e.fetch('POST', '/a2a', { as: null, body: { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'run_x' } } });
    expect(none.status).toBe(401);
    const reviewer = await rpc03('message/send', { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'x' }, { kind: 'data', data: { acceptanceCriteria: CRITERIA } }] } }, E2E_KEYS.reviewer);
    expect(reviewer.status).toBe(403);
    expect((await e2e.request<{ runs: unknown[] }>('GET', '/v1/runs')).body.runs.length).toBe(before);
    expect((await rpc03('tasks/get', { id: 'run_doesnotexist' }, E2E_KEYS.reviewer)).body.error?.code).toBe(-32001);
  });

  it.each([
    ['no text part', [{ kind: 'data', data: { acceptanceCriteria: CRITERIA } }], /text part/],
    ['no acceptance criteria', [{ kind: 'text', text: 'Write a greeting' }], /acceptanceCriteria/],
    ['an unknown option', [{ kind: 'text', text: 'Write a greeting' }, { kind: 'data', data: { acceptanceCriteria: CRITERIA, colour: 'blue' } }], /colour/],
    ['a bad option value', [{ kind: 'text', text: 'Write a greeting' }, { kind: 'data', data: { acceptanceCriteria: CRITERIA, maxIterations: 0 } }], /maxIterations/],
    ['two data parts', [{ kind: 'text', text: 'x' }, { kind: 'data', data: {} }, { kind: 'data', data: {} }], /one data part/],
  ])('a message with %s is a JSON-RPC invalid-params error, nothing launched', async (_name, parts, words) => {
    const before = (await e2e.request<{ runs: unknown[] }>('GET', '/v1/runs')).body.runs.length;
    const res = await rpc03('message/send', { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts } });
    expect(res.status).toBe(200);
    expect(res.body.error?.code).toBe(-32602);
    expect(res.body.error?.message).toMatch(words);
    expect((await e2e.request<{ runs: unknown[] }>('GET', '/v1/runs')).body.runs.length).toBe(before);
  });

  it('the SDK client sees a bad message as an error, not a task', async () => {
    await expect(operator.sendMessage(send(message(undefined, { acceptanceCriteria: CRITERIA })))).rejects.toThrow(/text part/);
  });
});

const NAMES = ['TASK_STATE_UNSPECIFIED', 'TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_REJECTED', 'TASK_STATE_AUTH_REQUIRED'];
function TaskStateName(state: number): string {
  return NAMES[state] ?? String(state);
}
const stateName = (task: Task) => TaskStateName(task.status!.state);
function textOf(task: Task): string {
  const c = task.status?.message?.parts[0]?.content;
  return c?.$case === 'text' ? c.value : '';
}
