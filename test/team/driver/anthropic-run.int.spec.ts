import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ModelCallFailedData, ToolCallRequestedData } from '../../../src/team/domain/run-events';
import { foldRun, runStatus } from '../../../src/team/domain/run-state';
import { AnthropicModelProvider } from '../../../src/team/models/anthropic.provider';
import type { RoleName } from '../../../src/team/models/model.port';
import { apiKeyOf, httpErrorStep, startFakeMessagesApi, toolUseStep, type FakeMessagesApi } from '../../support/fake-messages-api';
import { dataOf, startRun, type Harness } from './driver-support';

// A whole short run through the real Anthropic SDK, over real HTTP, against the loopback fake of
// the Messages API: streamed text and tool input, and the failures the driver must ride out.

const API_KEY = 'sk-ant-test-run-0123456789';
const MODEL = 'claude-sonnet-4-6';

describe('a team run on the Anthropic provider (fake Messages API)', () => {
  let api: FakeMessagesApi;
  let harness: Harness | undefined;

  beforeAll(async () => {
    api = await startFakeMessagesApi({ apiKey: API_KEY });
  });
  afterAll(() => api.stop());
  afterEach(() => {
    harness?.remove();
    harness = undefined;
    api.reset();
  });

  it('plans, writes a file, submits and is approved, retrying a 429, a 529 and a malformed stream', async () => {
    api.enqueue(
      // architect
      httpErrorStep(429, { headers: { 'retry-after': '1' } }),
      toolUseStep('submit_plan', { plan: '1. write hello.txt', steps: ['write hello.txt'] }, { text: 'I will plan the work.', chunkSize: 4 }),
      // executor
      httpErrorStep(529),
      toolUseStep('write_file', { path: 'hello.txt', content: 'Hello from Claude\n' }, { text: 'Writing the file now.', id: 'toolu_write_1', chunkSize: 5 }),
      toolUseStep('submit_work', { summary: 'wrote hello.txt', files: ['hello.txt'] }),
      // reviewer
      { kind: 'malformed', afterEvents: 3 },
      toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'hello.txt greets' }),
    );
    const deltas: Array<{ role: RoleName; turn: number; text: string }> = [];
    const sleeps: number[] = [];
    harness = await startRun({
      model: new AnthropicModelProvider({ apiKey: API_KEY, baseURL: api.url, timeoutMs: 5000 }),
      launch: { team: { architect: { model: MODEL }, executor: { model: MODEL }, reviewer: { model: MODEL } } },
      retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5000 },
      sleep: async (ms) => void sleeps.push(ms),
      observer: { onTextDelta: (_runId, role, turn, text) => deltas.push({ role, turn, text }) },
    });

    const state = await harness.driver.drive();
    const events = await harness.events();

    expect(runStatus(state)).toBe('awaiting_review');
    expect(api.pending).toBe(0);
    expect(api.requests).toHaveLength(7);
    for (const request of api.requests) {
      expect(apiKeyOf(request)).toBe(API_KEY);
      expect(request.body?.stream).toBe(true);
      expect(request.body?.model).toBe(MODEL);
    }

    // Streamed text reached the observer in pieces, per role and turn.
    const textOf = (role: RoleName, turn: number) => deltas.filter((d) => d.role === role && d.turn === turn).map((d) => d.text);
    expect(textOf('architect', 1).length).toBeGreaterThan(2);
    expect(textOf('architect', 1).join('')).toBe('I will plan the work.');
    expect(textOf('executor', 1).join('')).toBe('Writing the file now.');

    // The tool input, streamed as JSON pieces, was assembled and the real tool ran.
    expect(dataOf<ToolCallRequestedData>(events, 'ToolCallRequested')).toEqual([
      expect.objectContaining({ toolUseId: 'toolu_write_1', name: 'write_file', input: { path: 'hello.txt', content: 'Hello from Claude\n' } }),
    ]);
    expect(readFileSync(join(harness.workspace, 'hello.txt'), 'utf8')).toBe('Hello from Claude\n');
    // ...and its result opened the executor's next request.
    const nextExecutorRequest = api.requests[4].body!.messages as Array<{ role: string; content: Array<Record<string, unknown>> }>;
    expect(nextExecutorRequest[nextExecutorRequest.length - 1].content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_write_1' });

    // Each failure is recorded with its retry delay, then the same call completes.
    const failed = dataOf<ModelCallFailedData>(events, 'ModelCallFailed');
    expect(failed.map((f) => [f.role, f.kind, f.attempt])).toEqual([
      ['architect', 'rate_limited', 1],
      ['executor', 'overloaded', 1],
      ['reviewer', 'malformed_response', 1],
    ]);
    expect(failed[0].retryInMs).toBeGreaterThanOrEqual(1000); // retry-after: 1 (second)
    for (const f of failed) expect(f.retryInMs).toEqual(expect.any(Number));
    expect(sleeps).toEqual(failed.map((f) => f.retryInMs));
    for (const f of failed) {
      const completedAfter = events.find((e) => e.type === 'ModelCallCompleted' && (e.data as { callId: string }).callId === f.callId);
      expect(completedAfter).toBeDefined();
    }
    // A retry sends the very same request again.
    expect(api.requests[1].body!.messages).toEqual(api.requests[0].body!.messages);
    expect(api.requests[6].body!.messages).toEqual(api.requests[5].body!.messages);

    expect(dataOf(events, 'VerdictSubmitted')).toEqual([expect.objectContaining({ verdict: 'APPROVE', summary: 'hello.txt greets' })]);
    expect(foldRun(events).conversations).toEqual(state.conversations);
    const usage = state.usage.architect;
    expect(usage.turns).toBe(1);
    expect(usage.inputTokens).toBeGreaterThan(0);
  });

  it('hybrid: a replan after a failed step offers submit_steps alone, no tool_choice, over a history of other tool calls; the API accepts every request', async () => {
    const steps = (...names: string[]) => toolUseStep('submit_steps', { steps: names });
    api.enqueue(
      // architect
      toolUseStep('submit_plan', { plan: '1. write hello.txt', steps: ['write hello.txt'] }),
      // executor: plan, step 1 (a write), step 2 fails, a new plan, its three steps, the close
      steps('write hello.txt', 'check it', 'look around'),
      toolUseStep('write_file', { path: 'hello.txt', content: 'Hello\n' }),
      toolUseStep('complete_step', { summary: 'hello.txt written' }),
      toolUseStep('fail_step', { reason: 'nothing to check against' }),
      steps('read hello.txt', 'check it again', 'look around'),
      toolUseStep('read_file', { path: 'hello.txt' }),
      toolUseStep('complete_step', { summary: 'read it' }),
      toolUseStep('complete_step', { summary: 'checked' }),
      toolUseStep('complete_step', { summary: 'looked' }),
      toolUseStep('submit_work', { summary: 'wrote hello.txt', files: ['hello.txt'] }),
      // reviewer
      toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'fine' }),
    );
    harness = await startRun({
      model: new AnthropicModelProvider({ apiKey: API_KEY, baseURL: api.url, timeoutMs: 5000 }),
      launch: { team: { architect: { model: MODEL }, executor: { model: MODEL, loop: { strategy: 'hybrid' } }, reviewer: { model: MODEL } } },
    });
    const state = await harness.driver.drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(api.pending).toBe(0);
    expect(dataOf(await harness.events(), 'LoopReplanned')).toEqual([expect.objectContaining({ role: 'executor', replan: 1 })]);
    // The replan request: submit_steps alone, no tool_choice, and the earlier write_file call in the history.
    const replan = api.requests[5].body!;
    expect((replan.tools as Array<{ name: string }>).map((t) => t.name)).toEqual(['submit_steps']);
    expect(replan.tool_choice).toBeUndefined();
    expect(JSON.stringify(replan.messages)).toContain('"name":"write_file"');
  });
});
