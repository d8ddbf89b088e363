import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ContextCompactedData, ModelCallFailedData, RunEndedData, StagnationWarnedData } from '../../../src/team/domain/run-events';
import { runStatus, terminationReason } from '../../../src/team/domain/run-state';
import { AnthropicModelProvider } from '../../../src/team/models/anthropic.provider';
import { SUMMARY_HEADER, SUMMARY_SYSTEM_PROMPT } from '../../../src/team/domain/resilience/context-window';
import { httpErrorStep, startFakeMessagesApi, textStep, toolUseStep, type FakeMessagesApi, type FakeStep } from '../../support/fake-messages-api';
import { dataOf, expectReplayMatchesLive, expectToolPairsIntact, startHarness, type Harness } from './resilience-support';
import { waitFor } from '../../support/wait-for';

// The failure classes through the real SDK (AnthropicModelProvider) over real HTTP, against the
// loopback fake of the Messages API injecting faults. After every run, the stored events replay to
// exactly the conversations the driver held live.

const API_KEY = 'sk-ant-test-resilience-0123456789';
const MODEL = 'claude-sonnet-4-6';
const TEAM = { architect: { model: MODEL }, executor: { model: MODEL }, reviewer: { model: MODEL } };

let api: FakeMessagesApi;
let h: Harness | undefined;
let sleeps: number[];

beforeAll(async () => {
  api = await startFakeMessagesApi({ apiKey: API_KEY });
});
afterAll(() => api.stop());
beforeEach(() => {
  sleeps = [];
});
afterEach(() => {
  h?.remove();
  h = undefined;
  api.reset();
});

function provider(options: { timeoutMs?: number; baseURL?: string } = {}) {
  return new AnthropicModelProvider({ apiKey: API_KEY, baseURL: options.baseURL ?? api.url, timeoutMs: options.timeoutMs ?? 5_000 });
}

async function harness(launch: Parameters<typeof startHarness>[0]['launch'] = {}, timeoutMs?: number, maxEventBytes?: number) {
  h = await startHarness({
    model: provider({ timeoutMs }),
    launch: { team: TEAM, retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5_000 }, ...launch },
    sleep: async (ms) => void sleeps.push(ms),
    maxEventBytes,
  });
  return h;
}

/** A store limit per event that a 300,000-character answer exceeds. */
const SMALL_EVENT_LIMIT = 256 * 1024;

const planStep = () => toolUseStep('submit_plan', { plan: '1. write hello.txt' });
const writeStep = (path = 'hello.txt') => toolUseStep('write_file', { path, content: 'Hello\n' });
const workStep = () => toolUseStep('submit_work', { summary: 'wrote hello.txt', files: ['hello.txt'] });
const approveStep = () => toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'done' });

describe('transient faults are retried and recorded (real SDK, fake API)', () => {
  // Every row has all four values: jest would pass a `done` callback for a missing last one.
  const cases: Array<[string, FakeStep, { kind: string; status?: number }, number]> = [
    ['429 with retry-after', httpErrorStep(429, { headers: { 'retry-after': '2' } }), { kind: 'rate_limited', status: 429 }, 5_000],
    ['529 overloaded', httpErrorStep(529), { kind: 'overloaded', status: 529 }, 5_000],
    ['500 server error', httpErrorStep(500), { kind: 'server', status: 500 }, 5_000],
    ['connection reset mid-stream', { kind: 'reset', afterEvents: 3 }, { kind: 'connection' }, 5_000],
    ['a stream that hangs past the timeout', { kind: 'hang', afterEvents: 2 }, { kind: 'timeout' }, 400],
    ['malformed SSE', { kind: 'malformed', afterEvents: 3 }, { kind: 'malformed_response' }, 5_000],
  ];

  it.each(cases)('%s', async (_name, fault, expected, timeoutMs) => {
    api.enqueue(fault, planStep(), writeStep(), workStep(), approveStep());
    await harness({}, timeoutMs);
    const state = await h!.driver.drive();
    const events = await h!.events();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(api.pending).toBe(0);
    const failed = dataOf<ModelCallFailedData>(events, 'ModelCallFailed');
    expect(failed).toEqual([expect.objectContaining({ role: 'architect', attempt: 1, ...expected, retryInMs: expect.any(Number) })]);
    if (expected.status === undefined) expect(failed[0].status).toBeUndefined();
    if (expected.kind === 'rate_limited') expect(failed[0].retryInMs).toBeGreaterThanOrEqual(2_000);
    expect(sleeps).toEqual([failed[0].retryInMs]);
    // The retry sent the same request again.
    expect(api.requests[1].body!.messages).toEqual(api.requests[0].body!.messages);
    await expectReplayMatchesLive(h!, state);
  });
});

describe('answers that cannot be recorded as they are (real SDK, fake API)', () => {
  // Given an answer whose usage is not a count of tokens, or too large for one event,
  // when the driver takes the turn, then the call is recorded as failed and made again: the run
  // goes on, and no figure of the run's budget or cost goes down.
  const cases: Array<[string, FakeStep]> = [
    ['negative input tokens', { ...planStep(), usage: { input_tokens: -500, output_tokens: 10 } }],
    ['negative cache reads', { ...planStep(), usage: { input_tokens: 5, output_tokens: 10, cache_read_input_tokens: -3 } }],
    ['an answer over the limit on one event', toolUseStep('submit_plan', { plan: 'x'.repeat(300_000) })],
    ['two tool calls with one id', { kind: 'response', content: [{ type: 'tool_use', id: 'toolu_same', name: 'list_files', input: {} }, { type: 'tool_use', id: 'toolu_same', name: 'list_files', input: {} }] }],
  ];

  it.each(cases)('%s: ModelCallFailed malformed_response, then the same request again', async (_name, bad) => {
    api.enqueue(bad, planStep(), writeStep(), workStep(), approveStep());
    await harness({}, undefined, SMALL_EVENT_LIMIT);
    const state = await h!.driver.drive();
    const events = await h!.events();
    expect(runStatus(state)).toBe('awaiting_review');
    const failed = dataOf<ModelCallFailedData>(events, 'ModelCallFailed');
    expect(failed).toEqual([expect.objectContaining({ role: 'architect', attempt: 1, kind: 'malformed_response', retryInMs: expect.any(Number) })]);
    expect(api.requests[1].body!.messages).toEqual(api.requests[0].body!.messages);
    for (const e of events.filter((x) => x.type === 'ModelCallCompleted')) {
      const usage = (e.data as { usage: Record<string, number> }).usage;
      for (const v of Object.values(usage)) expect(v).toBeGreaterThanOrEqual(0);
    }
    await expectReplayMatchesLive(h!, state);
  });
});

describe('an answer too large for one event after results not yet committed (real SDK, fake API)', () => {
  it('given a read-only tool result held for the next append, when the next answer is over the limit, then the failure is recorded with that result and replay matches the live run', async () => {
    api.enqueue(
      planStep(),
      toolUseStep('list_files', {}),
      toolUseStep('submit_work', { summary: 'x'.repeat(300_000), files: [] }),
      writeStep(),
      workStep(),
      approveStep(),
    );
    await harness({}, undefined, SMALL_EVENT_LIMIT);
    const state = await h!.driver.drive();
    const events = await h!.events();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(dataOf<ModelCallFailedData>(events, 'ModelCallFailed')).toEqual([expect.objectContaining({ role: 'executor', kind: 'malformed_response' })]);
    // The retry sent what the failed call had sent: the list_files result included.
    const executorCalls = api.requests.filter((r) => JSON.stringify(r.body?.messages ?? []).includes('list_files'));
    expect(executorCalls.length).toBeGreaterThanOrEqual(2);
    await expectReplayMatchesLive(h!, state);
  });
});

describe('the breaker, permanent errors and context too long (real SDK, fake API)', () => {
  it('three identical 500s end the run ERROR naming the signature, with attempts left', async () => {
    api.enqueue(httpErrorStep(500), httpErrorStep(500), httpErrorStep(500), planStep());
    await harness({ retry: { maxAttempts: 6, baseDelayMs: 1, maxDelayMs: 1 } });
    const state = await h!.driver.drive();
    expect(api.requests).toHaveLength(3);
    expect(terminationReason(state)).toBe('ERROR');
    expect(dataOf<RunEndedData>(await h!.events(), 'RunEnded')[0].message).toBe(
      'circuit breaker: the same model error 3 times in a row (server/500/anthropic api http # api_error: internal server error)',
    );
    await expectReplayMatchesLive(h!, state);
  });

  it('a 400 invalid_request is permanent: no retry', async () => {
    api.enqueue(httpErrorStep(400, { message: 'messages.0.content: Input should be a valid list' }));
    await harness();
    const state = await h!.driver.drive();
    expect(api.requests).toHaveLength(1);
    expect(dataOf<ModelCallFailedData>(await h!.events(), 'ModelCallFailed')).toEqual([expect.objectContaining({ kind: 'invalid_request', status: 400 })]);
    expect(terminationReason(state)).toBe('ERROR');
    await expectReplayMatchesLive(h!, state);
  });

  it('"prompt is too long": a small model summarises the older messages, then the same call is made again', async () => {
    api.enqueue(
      planStep(),
      writeStep('a.txt'),
      writeStep('b.txt'),
      writeStep('c.txt'),
      httpErrorStep(400, { message: 'prompt is too long: 213456 tokens > 200000 maximum' }),
      textStep('Wrote a.txt and b.txt with "Hello".'), // the summary
      workStep(),
      approveStep(),
    );
    await harness();
    const state = await h!.driver.drive();
    const events = await h!.events();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(api.pending).toBe(0);

    expect(dataOf<ModelCallFailedData>(events, 'ModelCallFailed')).toEqual([expect.objectContaining({ kind: 'context_too_long', status: 400, compactBeforeRetry: true })]);
    const [compacted] = dataOf<ContextCompactedData>(events, 'ContextCompacted');
    expect(compacted).toMatchObject({ role: 'executor', method: 'model', reason: 'context_too_long', model: 'claude-haiku-4-5', summary: 'Wrote a.txt and b.txt with "Hello".' });
    expect(compacted.usage!.inputTokens).toBeGreaterThan(0);

    const [, , , , refused, summary, retried] = api.requests;
    expect(summary.body).toMatchObject({ model: 'claude-haiku-4-5', system: SUMMARY_SYSTEM_PROMPT, stream: true });
    expect(summary.body!.tools).toBeUndefined();
    const sent = retried.body!.messages as Array<{ role: string; content: Array<{ type: string; text?: string }> }>;
    expect(sent[0].content[0].text).toBe(`${SUMMARY_HEADER}\n${compacted.summary}`);
    expect(sent.slice(1)).toEqual((refused.body!.messages as unknown[]).slice(compacted.toIndex));
    expectToolPairsIntact(sent as never);
    // The summary's tokens count in the executor's usage.
    expect(state.usage.executor.inputTokens).toBeGreaterThan(0);
    await expectReplayMatchesLive(h!, state);
  });

  it('over the budget before a call: compacted up front; when the summary request fails (529), messages are cut to 150 characters', async () => {
    const big = (p: string) => toolUseStep('write_file', { path: p, content: 'x'.repeat(2_000) });
    api.enqueue(planStep(), big('a.txt'), big('b.txt'), big('c.txt'), httpErrorStep(529), workStep(), approveStep());
    // Token counting is down: the estimate decides (test/team/models/anthropic-context.int.spec.ts counts).
    api.countTokensFault = { kind: 'http_error', status: 500 };
    await harness({ contextWindow: { limitTokens: 1_500, marginTokens: 0 } });
    const state = await h!.driver.drive();
    const events = await h!.events();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(api.pending).toBe(0);
    const [compacted] = dataOf<ContextCompactedData>(events, 'ContextCompacted');
    expect(compacted).toMatchObject({ role: 'executor', method: 'truncate', reason: 'over_budget', error: expect.stringMatching(/529 overloaded_error/) });
    expect(api.requests[4].body).toMatchObject({ model: 'claude-haiku-4-5' });
    const sent = api.requests[5].body!.messages as Array<{ role: string; content: Array<{ type: string; text?: string }> }>;
    expect(sent[0].content[0].text).toBe(`${SUMMARY_HEADER}\n${compacted.summary}`);
    expectToolPairsIntact(sent as never);
    expect(dataOf(events, 'ModelCallFailed')).toEqual([]);
    await expectReplayMatchesLive(h!, state);
  });

  it('stagnation through the SDK: the corrective message reaches the model, then the run ends STAGNATION', async () => {
    api.enqueue(planStep(), ...Array.from({ length: 12 }, () => toolUseStep('list_files', { path: '.' })));
    await harness({ stagnation: {} });
    const state = await h!.driver.drive();
    const [warned] = dataOf<StagnationWarnedData>(await h!.events(), 'StagnationWarned');
    const seventh = api.requests[7].body!.messages as Array<{ content: Array<{ type: string; text?: string }> }>;
    expect(seventh.at(-1)!.content.at(-1)).toEqual({ type: 'text', text: warned.message, cache_control: { type: 'ephemeral' } });
    expect(terminationReason(state)).toBe('STAGNATION');
    await expectReplayMatchesLive(h!, state);
  });

  it('three read-only calls in one response run in one dispatch; results go back in the model order', async () => {
    api.enqueue(planStep(), {
      kind: 'response',
      content: [
        { type: 'tool_use', id: 'toolu_r1', name: 'list_files', input: { path: '.' } },
        { type: 'tool_use', id: 'toolu_r2', name: 'read_file', input: { path: 'missing.txt' } },
        { type: 'tool_use', id: 'toolu_r3', name: 'search_files', input: { pattern: 'Hello' } },
      ],
    }, workStep(), approveStep());
    await harness();
    const state = await h!.driver.drive();
    const next = api.requests[2].body!.messages as Array<{ content: Array<{ tool_use_id?: string }> }>;
    expect(next.at(-1)!.content.map((b) => b.tool_use_id)).toEqual(['toolu_r1', 'toolu_r2', 'toolu_r3']);
    await expectReplayMatchesLive(h!, state);
  });
});

describe('cancel and timeouts abort the model stream', () => {
  /** A Messages API that starts a stream and never finishes it; records when the client goes away. */
  async function hangingApi(): Promise<{ url: string; opened: number; closed: number; stop(): Promise<void> }> {
    const state = { opened: 0, closed: 0 };
    const server: Server = createServer((req, res) => {
      req.resume();
      state.opened++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: MODEL, content: [], stop_reason: null, usage: { input_tokens: 1, output_tokens: 0 } } })}\n\n`);
      res.on('close', () => state.closed++);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      get opened() {
        return state.opened;
      },
      get closed() {
        return state.closed;
      },
      stop: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
    };
  }

  it('cancel: the stream in flight is aborted (the server sees the client go) and nothing is appended after RunEnded', async () => {
    const hang = await hangingApi();
    try {
      h = await startHarness({ model: new AnthropicModelProvider({ apiKey: API_KEY, baseURL: hang.url, timeoutMs: 60_000 }), launch: { team: TEAM } });
      const driving = h.driver.drive();
      await waitFor('the stream to open', () => hang.opened === 1, 5_000, 10);
      await h.appendAsOther([{ type: 'RunEnded', data: { status: 'cancelled', reason: 'CANCELLED', at: new Date().toISOString() } }]);
      const stoppedAt = Date.now();
      h.driver.stop('cancelled');
      await driving;
      expect(Date.now() - stoppedAt).toBeLessThan(20_000);
      await waitFor('the server to see the client go', () => hang.closed === 1, 20_000, 10);
      const types = await h.types();
      expect(types.at(-1)).toBe('RunEnded');
      expect(types).not.toContain('ModelCallFailed');
      const reloaded = await h.newDriver().drive();
      expect(runStatus(reloaded)).toBe('cancelled');
      await expectReplayMatchesLive(h, reloaded);
    } finally {
      await hang.stop();
    }
  });

  it('the run timeout aborts a hung stream and ends the run TIMEOUT', async () => {
    const hang = await hangingApi();
    try {
      // The run's clock stands still until the hung server has the request, then is past the
      // deadline: however long a loaded machine takes to get there, the stream is in flight when
      // the run's 800 ms are up.
      const launchedAt = Date.now();
      const clock = { now: () => (hang.opened === 0 ? launchedAt : Math.max(Date.now(), launchedAt + 801)) };
      h = await startHarness({ model: new AnthropicModelProvider({ apiKey: API_KEY, baseURL: hang.url, timeoutMs: 60_000 }), clock, launch: { team: TEAM, timeoutMs: 800 } });
      const started = Date.now();
      const state = await h.driver.drive();
      expect(Date.now() - started).toBeLessThan(30_000);
      await waitFor('the server to see the client go', () => hang.closed === 1, 20_000, 10);
      expect(terminationReason(state)).toBe('TIMEOUT');
      expect((await h.types()).slice(-1)).toEqual(['RunEnded']);
      await expectReplayMatchesLive(h, state);
    } finally {
      await hang.stop();
    }
  });
});
