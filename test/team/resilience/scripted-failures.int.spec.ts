import type { ContextCompactedData, ModelCallFailedData, RunEndedData, RunLaunchedData } from '../../../src/team/domain/run-events';
import { runStatus, terminationReason } from '../../../src/team/domain/run-state';
import { ModelError, type ModelRequest } from '../../../src/team/models/model.port';
import { ScriptedModelProvider } from '../../../src/team/models/scripted.model';
import { SUMMARY_HEADER } from '../../../src/team/domain/resilience/context-window';
import { PRODUCT_LAUNCH_DEFAULTS } from '../../../src/team/domain/resilience/policies';
import {
  call,
  dataOf,
  expectReplayMatchesLive,
  expectToolPairsIntact,
  plan,
  roleScript,
  startHarness,
  submitWork,
  summaryText,
  verdict,
  type Harness,
} from './resilience-support';

// Failure classes on the scripted model: transient (retried per the run's recorded policy), the
// same-error circuit breaker, context too long (compacted, then retried), permanent (no retry).
// Every run's stored events replay to exactly the state the driver held live.

let h: Harness | undefined;
afterEach(() => {
  h?.remove();
  h = undefined;
});

const rateLimited = (message = 'slow down') => new ModelError('rate_limited', message, { status: 429 });
const serverError = (message = 'Internal server error') => new ModelError('server', message, { status: 500 });
const executorCalls = (model: ScriptedModelProvider) => model.calls.filter((c) => c.role === 'executor' && c.purpose !== 'summary');

describe('transient failures: retries per the run policy', () => {
  it('the launch retry policy is recorded in RunLaunched and wins over the driver’s', async () => {
    const sleeps: number[] = [];
    const model = new ScriptedModelProvider(roleScript({ architect: [new ModelError('overloaded', 'Overloaded', { status: 529 }), rateLimited(), new ModelError('server', 'bad gateway', { status: 502 })] }));
    h = await startHarness({ model, launch: { retry: { maxAttempts: 3, baseDelayMs: 40, maxDelayMs: 50 } }, retry: { maxAttempts: 10, baseDelayMs: 1, maxDelayMs: 1 }, sleep: async (ms) => void sleeps.push(ms) });
    const state = await h.driver.drive();
    const events = await h.events();
    expect(dataOf<RunLaunchedData>(events, 'RunLaunched')[0].retry).toEqual({ maxAttempts: 3, baseDelayMs: 40, maxDelayMs: 50 });
    const failed = dataOf<ModelCallFailedData>(events, 'ModelCallFailed');
    expect(failed.map((f) => [f.attempt, f.kind, f.status, f.retryInMs !== undefined])).toEqual([
      [1, 'overloaded', 529, true],
      [2, 'rate_limited', 429, true],
      [3, 'server', 502, false],
    ]);
    // Exponential with jitter: half to all of base·2^(n-1), never above maxDelayMs.
    expect(sleeps[0]).toBeGreaterThanOrEqual(20);
    expect(sleeps[0]).toBeLessThanOrEqual(40);
    // min(maxDelayMs, 40·2) = 50: between 25 and 50.
    expect(sleeps[1]).toBeGreaterThanOrEqual(25);
    expect(sleeps[1]).toBeLessThanOrEqual(50);
    expect(dataOf<RunEndedData>(events, 'RunEnded')[0]).toMatchObject({ reason: 'ERROR', message: expect.stringMatching(/^model call failed \(server\) after 3 attempt\(s\)/) });
    await expectReplayMatchesLive(h, state);
  });

  it('the API and CLI defaults record three retries after 10 s, 30 s and 90 s, waits capped at 5 min', () => {
    expect(PRODUCT_LAUNCH_DEFAULTS.retry).toEqual({ delaysMs: [10_000, 30_000, 90_000], maxDelayMs: 300_000 });
  });

  it('retry-after is honoured: the delay is at least what the server asked for', async () => {
    const sleeps: number[] = [];
    const model = new ScriptedModelProvider(
      roleScript({ architect: [new ModelError('rate_limited', 'slow down', { status: 429, retryAfterMs: 900 }), plan()], executor: [submitWork()], reviewer: [verdict('APPROVE')] }),
    );
    h = await startHarness({ model, launch: { retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5_000 } }, sleep: async (ms) => void sleeps.push(ms) });
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(900);
    await expectReplayMatchesLive(h, state);
  });
});

describe('the same-error circuit breaker', () => {
  it('three identical errors in a row end the run ERROR naming the signature, attempts left or not', async () => {
    const model = new ScriptedModelProvider(roleScript({ architect: () => serverError('Internal server error (req_01abc)') }));
    h = await startHarness({ model, launch: { retry: { maxAttempts: 10, baseDelayMs: 1, maxDelayMs: 1 } } });
    const state = await h.driver.drive();
    const events = await h.events();
    expect(model.calls).toHaveLength(3);
    expect(dataOf<ModelCallFailedData>(events, 'ModelCallFailed').map((f) => f.retryInMs !== undefined)).toEqual([true, true, false]);
    const ended = dataOf<RunEndedData>(events, 'RunEnded')[0];
    expect(ended).toMatchObject({ status: 'failed', reason: 'ERROR' });
    expect(ended.message).toBe(
      'circuit breaker: the same model error 3 times in a row (server/500/internal server error (req_*))',
    );
    await expectReplayMatchesLive(h, state);
  });

  it('a different error resets the count; a success in between too', async () => {
    const a = () => serverError();
    const b = () => new ModelError('connection', 'socket hang up');
    const model = new ScriptedModelProvider(
      roleScript({ architect: [a(), a(), b(), a(), a(), plan()], executor: [a(), a(), submitWork()], reviewer: [verdict('APPROVE')] }),
    );
    h = await startHarness({ model, launch: { retry: { maxAttempts: 10, baseDelayMs: 1, maxDelayMs: 1 } } });
    const state = await h.driver.drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(dataOf(await h.events(), 'ModelCallFailed')).toHaveLength(7);
    await expectReplayMatchesLive(h, state);
  });

  it('a resumed driver continues the count from the stored failures', async () => {
    const model = new ScriptedModelProvider(roleScript({ architect: () => serverError() }));
    // The first driver stops (as at a crash) while it waits before its third attempt.
    let sleeps = 0;
    let release = () => undefined as void;
    const parked = new Promise<void>((resolve) => (release = resolve));
    h = await startHarness({
      model,
      launch: { retry: { maxAttempts: 10, baseDelayMs: 1, maxDelayMs: 1 } },
      sleep: (_ms, signal) => (++sleeps === 2 ? new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })).finally(release) : Promise.resolve()),
    });
    const first = h.newDriver();
    const driving = first.drive();
    while (dataOf(await h.events(), 'ModelCallFailed').length < 2) await new Promise((r) => setTimeout(r, 1));
    first.stop('crash');
    await parked;
    await driving;
    expect(dataOf(await h.events(), 'ModelCallFailed')).toHaveLength(2);

    const state = await h.newDriver().drive();
    // Three in a row in all, whichever driver saw them.
    expect(dataOf(await h.events(), 'ModelCallFailed')).toHaveLength(3);
    expect(model.calls).toHaveLength(3);
    expect(terminationReason(state)).toBe('ERROR');
    expect(dataOf<RunEndedData>(await h.events(), 'RunEnded')[0].message).toMatch(/^circuit breaker/);
    await expectReplayMatchesLive(h, state);
  });
});

describe('permanent failures', () => {
  it('invalid_request is not retried', async () => {
    const model = new ScriptedModelProvider([new ModelError('invalid_request', 'tools.0.input_schema: invalid', { status: 400 })]);
    h = await startHarness({ model, launch: { retry: { maxAttempts: 5 } } });
    const state = await h.driver.drive();
    expect(model.calls).toHaveLength(1);
    expect(dataOf<ModelCallFailedData>(await h.events(), 'ModelCallFailed')).toEqual([expect.objectContaining({ kind: 'invalid_request', status: 400, attempt: 1 })]);
    expect(terminationReason(state)).toBe('ERROR');
    await expectReplayMatchesLive(h, state);
  });
});

describe('context too long: compact, then retry', () => {
  const big = 'z'.repeat(1_200);
  const readTurns = (n: number) => (_r: ModelRequest, i: number) => (i < n ? call('list_files', { path: `.`, pattern: `${i}-${big}` }) : submitWork());

  it('the model refuses the call; the older messages are summarised and the same call is made again', async () => {
    const tooLong = new ModelError('context_too_long', 'prompt is too long: 210000 tokens > 200000 maximum', { status: 400 });
    let failedOnce = false;
    const model = new ScriptedModelProvider(
      roleScript({
        architect: [plan()],
        executor: (request, i) => {
          if (i === 6 && !failedOnce) {
            failedOnce = true;
            return tooLong;
          }
          return readTurns(7)(request, i > 6 ? i - 1 : i);
        },
        reviewer: [verdict('APPROVE')],
        summary: [summaryText('The executor listed the workspace six times; nothing new was found.')],
      }),
    );
    h = await startHarness({ model, launch: { stagnation: { enabled: false } } });
    const state = await h.driver.drive();
    const events = await h.events();
    expect(runStatus(state)).toBe('awaiting_review');

    const failed = dataOf<ModelCallFailedData>(events, 'ModelCallFailed');
    expect(failed).toEqual([expect.objectContaining({ kind: 'context_too_long', status: 400, compactBeforeRetry: true })]);
    expect(failed[0].retryInMs).toBeUndefined();
    const [compacted] = dataOf<ContextCompactedData>(events, 'ContextCompacted');
    expect(compacted).toMatchObject({ role: 'executor', reason: 'context_too_long', method: 'model', fromIndex: 0, model: 'scripted-summary' });
    expect(compacted.summary).toBe('The executor listed the workspace six times; nothing new was found.');
    // The order: the failure, the compaction, the same call again (no new ModelCallStarted).
    const i = events.findIndex((e) => e.type === 'ModelCallFailed');
    expect(events.slice(i, i + 3).map((e) => e.type)).toEqual(['ModelCallFailed', 'ContextCompacted', 'ModelCallCompleted']);

    const summaryRequest = model.calls.find((c) => c.purpose === 'summary')!;
    expect(summaryRequest.tools).toEqual([]);
    expect(summaryRequest.messages[0].content).toMatch(/Conversation to summarise/);
    const calls = executorCalls(model);
    const retried = calls[7];
    expect(retried.messages.length).toBeLessThan(calls[6].messages.length);
    expect((retried.messages[0].content as Array<{ text: string }>)[0].text).toBe(`${SUMMARY_HEADER}\n${compacted.summary}`);
    expect(retried.messages.slice(1)).toEqual(calls[6].messages.slice(compacted.toIndex));
    for (const c of calls) expectToolPairsIntact(c.messages);
    await expectReplayMatchesLive(h, state);
  });

  it('over the budget before a call: compacted up front; if the summary fails, each message is cut to 150 characters', async () => {
    const model = new ScriptedModelProvider(
      roleScript({
        architect: [plan()],
        executor: readTurns(8),
        reviewer: [verdict('APPROVE')],
        summary: () => new ModelError('overloaded', 'Overloaded', { status: 529 }),
      }),
    );
    h = await startHarness({ model, launch: { stagnation: { enabled: false }, contextWindow: { limitTokens: 1_800, marginTokens: 0 } } });
    const state = await h.driver.drive();
    const events = await h.events();
    expect(runStatus(state)).toBe('awaiting_review');
    const compactions = dataOf<ContextCompactedData>(events, 'ContextCompacted');
    expect(compactions.length).toBeGreaterThan(0);
    for (const c of compactions) {
      expect(c).toMatchObject({ role: 'executor', method: 'truncate', reason: 'over_budget', error: 'Overloaded' });
      for (const line of c.summary.split('\n')) expect(line.length).toBeLessThanOrEqual('assistant: '.length + 150);
    }
    expect(dataOf(events, 'ModelCallFailed')).toEqual([]); // a failed summary is not a failed turn
    for (const c of executorCalls(model)) expectToolPairsIntact(c.messages);
    // Every request after a compaction stays within the budget the compaction aimed for (give or take the summary).
    const last = executorCalls(model).at(-1)!;
    expect(last.messages.length).toBeLessThan(2 * 8 + 1);
    await expectReplayMatchesLive(h, state);
  });
});
