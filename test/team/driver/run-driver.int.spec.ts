import { hostProcessesWith, uniqueSleep } from '../../support/host-processes';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RecordedEvent } from '../../../src/events/event-store/event-store.port';
import { toRunStreamId, type RunEndedData, type ToolCallCompletedData } from '../../../src/team/domain/run-events';
import { foldRun, initialRunState, runStatus, terminationReason } from '../../../src/team/domain/run-state';
import { ModelError, type ChatMessage, type ModelRequest, type RoleName } from '../../../src/team/models/model.port';
import { ScriptedModelProvider, toolUseResponse } from '../../../src/team/models/scripted.model';
import { dataOf, plan, roleScript, startRun, submitWork, verdict, writeFile, type Harness } from './driver-support';
import { waitFor } from '../../support/wait-for';

// The run driver end to end on a scripted model: real tools in a temp workspace, an in-memory store.

let harness: Harness | undefined;
afterEach(() => {
  harness?.remove();
  harness = undefined;
});

const lastUserMessage = (request: ModelRequest): ChatMessage => request.messages[request.messages.length - 1];
const callsOf = (model: ScriptedModelProvider, role: RoleName) => model.calls.filter((c) => c.role === role);

describe('RunDriver: how runs end', () => {
  it('runs every phase and ends MAX_ITERATIONS; the fold of the stored events equals the live state', async () => {
    const model = new ScriptedModelProvider(
      roleScript({
        architect: [plan()],
        executor: [writeFile(), submitWork(), writeFile('hello.txt', 'Hello, world\n'), submitWork('added the comma')],
        reviewer: [verdict('REQUEST_CHANGES', ['say "world" too']), verdict('REQUEST_CHANGES', ['and a comma'])],
      }),
    );
    const observed: RecordedEvent[] = [];
    harness = await startRun({ model, launch: { maxIterations: 2 }, observer: { onEvents: (_id, events) => observed.push(...events) } });
    const state = await harness.driver.drive();
    const events = await harness.events();

    expect(runStatus(state)).toBe('failed');
    expect(terminationReason(state)).toBe('MAX_ITERATIONS');
    const iteration = [
      'PhaseStarted',
      'ModelCallStarted', 'ModelCallCompleted', 'ToolCallRequested', 'ToolCallCompleted', // write_file
      'ModelCallStarted', 'ModelCallCompleted', 'ToolCallCompleted', 'WorkSubmitted',
      'PhaseStarted',
      'ModelCallStarted', 'ModelCallCompleted', 'ToolCallCompleted', 'VerdictSubmitted',
    ];
    expect(events.map((e) => e.type)).toEqual([
      'RunLaunched',
      'PhaseStarted', 'ModelCallStarted', 'ModelCallCompleted', 'ToolCallCompleted', 'PlanSubmitted',
      ...iteration,
      'IterationStarted',
      ...iteration,
      'RunEnded',
    ]); // prettier-ignore
    expect(events.map((e) => e.revision)).toEqual(events.map((_, i) => i));
    expect(dataOf(events, 'PhaseStarted').map((d) => [d.phase, d.iteration])).toEqual([
      ['planning', 1], ['executing', 1], ['reviewing', 1], ['executing', 2], ['reviewing', 2],
    ]); // prettier-ignore
    expect(dataOf<RunEndedData>(events, 'RunEnded')[0]).toMatchObject({ status: 'failed', reason: 'MAX_ITERATIONS' });
    expect(readFileSync(join(harness.workspace, 'hello.txt'), 'utf8')).toBe('Hello, world\n');

    // The second iteration's first executor request answers its submit_work and carries the findings.
    const executorCalls = callsOf(model, 'executor');
    const reworkOpening = lastUserMessage(executorCalls[2]);
    const firstWorkId = (dataOf(events, 'WorkSubmitted')[0] as { toolUseId: string }).toolUseId;
    expect(reworkOpening.content[0]).toEqual({ type: 'tool_result', tool_use_id: firstWorkId, content: 'Submitted.' });
    expect((reworkOpening.content[1] as { text: string }).text).toContain('Findings to address:\n- say "world" too');
    expect((reworkOpening.content[1] as { text: string }).text).toContain('Iteration: 2');

    // Replaying the stored events rebuilds exactly the conversations the driver held live...
    const replayed = foldRun(events, initialRunState(harness.runId));
    expect(replayed.conversations).toEqual(state.conversations);
    expect(replayed.usage).toEqual(state.usage);
    expect(replayed.team.value).toEqual(state.team.value);
    expect(replayed.team.context).toEqual(state.team.context);
    // ...which are the requests the model received, plus its last answer.
    for (const role of ['architect', 'executor', 'reviewer'] as const) {
      const calls = callsOf(model, role);
      expect(calls[calls.length - 1].messages).toEqual(state.conversations[role].messages.slice(0, -1));
    }
    // The observer saw every stored event, once, in order.
    expect(observed.map((e) => [e.id, e.revision, e.type])).toEqual(events.slice(1).map((e) => [e.id, e.revision, e.type]));
  });

  it('a BLOCK verdict ends the run BLOCKED', async () => {
    const model = new ScriptedModelProvider(
      roleScript({ architect: [plan()], executor: [submitWork('nothing possible')], reviewer: [verdict('BLOCK', ['needs network'], 'the goal needs network access')] }),
    );
    harness = await startRun({ model });
    const state = await harness.driver.drive();
    expect(runStatus(state)).toBe('blocked');
    const ended = dataOf<RunEndedData>(await harness.events(), 'RunEnded');
    expect(ended).toEqual([expect.objectContaining({ status: 'blocked', reason: 'BLOCKED', message: 'the goal needs network access' })]);
  });

  it('APPROVE waits at the human gate; without the gate the run completes', async () => {
    const script = () => roleScript({ architect: [plan()], executor: [writeFile(), submitWork()], reviewer: [verdict('APPROVE')] });
    harness = await startRun({ model: new ScriptedModelProvider(script()) });
    expect(runStatus(await harness.driver.drive())).toBe('awaiting_review');
    expect((await harness.types()).slice(-2)).toEqual(['VerdictSubmitted', 'ReviewOpened']);
    harness.remove();

    harness = await startRun({ model: new ScriptedModelProvider(script()), launch: { reviewPolicy: { humanGate: false } } });
    const state = await harness.driver.drive();
    expect(runStatus(state)).toBe('completed');
    expect(terminationReason(state)).toBe('COMPLETED');
    const types = await harness.types();
    expect(types.slice(-2)).toEqual(['ReviewDecided', 'RunEnded']);
    expect(types).not.toContain('ReviewOpened');
  });

  it('given a run that reached the human gate, when its driver is suspended for shutdown, then it stays at the gate (nothing recorded)', async () => {
    const script = () => roleScript({ architect: [plan()], executor: [writeFile(), submitWork()], reviewer: [verdict('APPROVE')] });
    harness = await startRun({ model: new ScriptedModelProvider(script()) });
    const done = harness.driver.drive();
    expect(runStatus(await done)).toBe('awaiting_review');
    const before = await harness.types();
    expect(await harness.driver.suspend(done)).toBe(false);
    expect(await harness.types()).toEqual(before);
  });

  it('BUDGET_EXHAUSTED: the total budget is checked before each call and the overrun is recorded', async () => {
    // Every response costs 10 + 5 tokens; the budget of 40 is reached after the third call.
    const model = new ScriptedModelProvider(roleScript({ architect: () => toolUseResponse('list_files', {}) }));
    harness = await startRun({ model, launch: { budget: { totalTokens: 40 } } });
    const state = await harness.driver.drive();
    const events = await harness.events();
    expect(model.calls).toHaveLength(3);
    expect(runStatus(state)).toBe('failed');
    expect(events.slice(-2).map((e) => [e.type, e.data])).toEqual([
      ['BudgetExceeded', expect.objectContaining({ scope: 'total', usedTokens: 45, limitTokens: 40 })],
      ['RunEnded', expect.objectContaining({ status: 'failed', reason: 'BUDGET_EXHAUSTED' })],
    ]);
    // The last recorded model step is a completed call: no call was started over the budget.
    expect(events.filter((e) => e.type === 'ModelCallStarted')).toHaveLength(3);
  });

  it('BUDGET_EXHAUSTED for one role: the executor reaching its own budget', async () => {
    const model = new ScriptedModelProvider(roleScript({ architect: [plan()], executor: () => toolUseResponse('list_files', {}) }));
    harness = await startRun({ model, launch: { budget: { perRole: { executor: 20 } } } });
    await harness.driver.drive();
    const events = await harness.events();
    expect(callsOf(model, 'executor')).toHaveLength(2);
    expect(dataOf(events, 'BudgetExceeded')).toEqual([expect.objectContaining({ scope: 'executor', usedTokens: 30, limitTokens: 20 })]);
    expect(dataOf<RunEndedData>(events, 'RunEnded')[0].reason).toBe('BUDGET_EXHAUSTED');
  });

  it('MAX_TURNS: a role that never submits stops at its turn limit', async () => {
    const model = new ScriptedModelProvider(roleScript({ architect: () => toolUseResponse('list_files', {}) }));
    harness = await startRun({ model, launch: { team: { architect: { maxTurns: 2 } } } });
    const state = await harness.driver.drive();
    expect(model.calls).toHaveLength(2);
    expect(terminationReason(state)).toBe('MAX_TURNS');
    expect(dataOf<RunEndedData>(await harness.events(), 'RunEnded')[0].message).toBe('the architect reached its limit of 2 turns');
  });

  it('TIMEOUT: the call in flight is aborted at the deadline and the run ends TIMEOUT', async () => {
    const signals: AbortSignal[] = [];
    const scripted = new ScriptedModelProvider([plan()], { latencyMs: 20_000 });
    // The run's clock stands still until the first model call: however long a loaded machine takes
    // to get there, the call starts with the whole 300 ms before the deadline. (Its timer is set a
    // moment before the call reaches the model: the clock counts 50 ms more from there.)
    const launchedAt = Date.now();
    let firstCallAt: number | undefined;
    const clock = { now: () => launchedAt + (firstCallAt === undefined ? 0 : Date.now() - firstCallAt + 50) };
    const model = {
      name: 'scripted',
      complete: (request: ModelRequest) => {
        firstCallAt ??= Date.now();
        signals.push(request.signal!);
        return scripted.complete(request);
      },
    };
    harness = await startRun({ model, clock, launch: { timeoutMs: 300 } });
    const started = Date.now();
    const state = await harness.driver.drive();
    const elapsed = Date.now() - started;

    expect(elapsed).toBeLessThan(15_000);
    expect(signals).toHaveLength(1);
    expect(signals[0].aborted).toBe(true);
    expect(terminationReason(state)).toBe('TIMEOUT');
    const types = await harness.types();
    expect(types).not.toContain('ModelCallCompleted');
    expect(types[types.length - 1]).toBe('RunEnded');
    expect(dataOf<RunEndedData>(await harness.events(), 'RunEnded')[0]).toMatchObject({ status: 'failed', reason: 'TIMEOUT' });
  });

  it('cancel during a slow run_command: its processes are killed and nothing is appended after RunEnded', async () => {
    const mark = uniqueSleep();
    const model = new ScriptedModelProvider(
      roleScript({ architect: [plan()], executor: [toolUseResponse('run_command', { command: `sleep ${mark} & sleep ${mark}; wait` })] }),
    );
    harness = await startRun({ model });
    const driving = harness.driver.drive();
    await waitFor('both sleeps to start', () => hostProcessesWith(mark).length >= 2, 5000, 20);

    // What the cancel command does: append RunEnded at the run's revision, then stop the local driver.
    const stream = toRunStreamId(harness.runId);
    const head = (await harness.store.streamRevision(stream))!;
    await harness.store.append(
      stream,
      [{ type: 'RunEnded', data: { status: 'cancelled', reason: 'CANCELLED', message: 'cancelled by user:ann', at: new Date().toISOString() } }],
      { expectedRevision: head },
    );
    harness.driver.stop('cancelled');
    await driving;

    await waitFor('both sleeps to be gone', () => hostProcessesWith(mark).length === 0, 3000, 20);
    // drive() has returned: the driver can append nothing more.
    const events = await harness.events();
    expect(events[events.length - 1]).toMatchObject({ type: 'RunEnded', revision: head + 1, data: { reason: 'CANCELLED' } });
    expect(events[events.length - 2]).toMatchObject({ type: 'ToolCallRequested', data: { name: 'run_command' } });
    expect(runStatus(foldRun(events))).toBe('cancelled');
  });
});

describe('RunDriver: bad tool calls go back to the model', () => {
  it('invalid tool input comes back as an is_error tool result and the loop continues', async () => {
    const bad = toolUseResponse('write_file', { path: 'hello.txt' }, { id: 'tu_bad' });
    const model = new ScriptedModelProvider(
      roleScript({ architect: [plan()], executor: [bad, writeFile(), submitWork()], reviewer: [verdict('APPROVE')] }),
    );
    harness = await startRun({ model });
    const state = await harness.driver.drive();
    expect(runStatus(state)).toBe('awaiting_review');

    const completed = dataOf<ToolCallCompletedData>(await harness.events(), 'ToolCallCompleted').find((d) => d.toolUseId === 'tu_bad')!;
    expect(completed.isError).toBe(true);
    expect(completed.output).toMatch(/content/);
    const next = lastUserMessage(callsOf(model, 'executor')[1]);
    expect(next.content).toEqual([{ type: 'tool_result', tool_use_id: 'tu_bad', content: completed.output, is_error: true }]);
  });

  it('an invalid submit_verdict is an is_error result; the valid one that follows is taken', async () => {
    const invalid = toolUseResponse('submit_verdict', { verdict: 'MAYBE', findings: [], summary: 'not sure' }, { id: 'tu_maybe' });
    const model = new ScriptedModelProvider(
      roleScript({ architect: [plan()], executor: [writeFile(), submitWork()], reviewer: [invalid, verdict('APPROVE', [], 'all criteria met')] }),
    );
    harness = await startRun({ model });
    const state = await harness.driver.drive();
    const events = await harness.events();

    const result = dataOf<ToolCallCompletedData>(events, 'ToolCallCompleted').find((d) => d.toolUseId === 'tu_maybe')!;
    expect(result).toMatchObject({ name: 'submit_verdict', isError: true });
    expect(result.output).toMatch(/^invalid submission: .*verdict/);
    expect(dataOf(events, 'VerdictSubmitted')).toEqual([expect.objectContaining({ verdict: 'APPROVE', summary: 'all criteria met' })]);
    expect(lastUserMessage(callsOf(model, 'reviewer')[1]).content).toEqual([
      { type: 'tool_result', tool_use_id: 'tu_maybe', content: result.output, is_error: true },
    ]);
    expect(runStatus(state)).toBe('awaiting_review');
  });
});

describe('RunDriver: model failures', () => {
  it('retries a rate-limited call after the backoff: ModelCallFailed with retryInMs, then ModelCallCompleted', async () => {
    const sleeps: number[] = [];
    const model = new ScriptedModelProvider(
      roleScript({
        architect: [new ModelError('rate_limited', 'slow down', { status: 429, retryAfterMs: 7 }), plan()],
        executor: [submitWork()],
        reviewer: [verdict('APPROVE')],
      }),
    );
    harness = await startRun({
      model,
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1000 },
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });
    const state = await harness.driver.drive();
    const events = await harness.events();
    expect(runStatus(state)).toBe('awaiting_review');

    expect(events.slice(2, 5).map((e) => e.type)).toEqual(['ModelCallStarted', 'ModelCallFailed', 'ModelCallCompleted']);
    const [started, failed, completed] = events.slice(2, 5).map((e) => e.data as Record<string, unknown>);
    expect(failed).toMatchObject({ role: 'architect', turn: 1, attempt: 1, kind: 'rate_limited', callId: started.callId });
    expect(failed.retryInMs).toBeGreaterThanOrEqual(7);
    expect(sleeps).toEqual([failed.retryInMs]);
    expect(completed.callId).toBe(started.callId);
    // The retried request is the same request: one user message, not two.
    expect(callsOf(model, 'architect').map((c) => c.messages)).toEqual([callsOf(model, 'architect')[0].messages, callsOf(model, 'architect')[0].messages]);
    expect(state.conversations.architect.messages).toHaveLength(2);
  });

  it('gives up after maxAttempts transient failures: RunEnded ERROR', async () => {
    const sleeps: number[] = [];
    const model = new ScriptedModelProvider(roleScript({ architect: () => new ModelError('overloaded', 'overloaded', { status: 529 }) }));
    harness = await startRun({ model, retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5 }, sleep: async (ms) => void sleeps.push(ms) });
    const state = await harness.driver.drive();
    const failed = dataOf<{ attempt: number; retryInMs?: number }>(await harness.events(), 'ModelCallFailed');
    expect(failed.map((f) => [f.attempt, f.retryInMs !== undefined])).toEqual([
      [1, true],
      [2, false],
    ]);
    expect(sleeps).toHaveLength(1);
    expect(terminationReason(state)).toBe('ERROR');
  });

  it('a permanent error (invalid_request) ends the run ERROR without a retry', async () => {
    const sleeps: number[] = [];
    const model = new ScriptedModelProvider([new ModelError('invalid_request', 'messages: bad', { status: 400 })]);
    harness = await startRun({ model, sleep: async (ms) => void sleeps.push(ms) });
    const state = await harness.driver.drive();
    const events = await harness.events();
    expect(model.calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
    expect(events.slice(2).map((e) => e.type)).toEqual(['ModelCallStarted', 'ModelCallFailed', 'RunEnded']);
    expect(events[3].data).toMatchObject({ kind: 'invalid_request', attempt: 1 });
    expect(events[3].data).not.toHaveProperty('retryInMs');
    expect(events[4].data).toMatchObject({ status: 'failed', reason: 'ERROR' });
    expect((events[4].data as RunEndedData).message).toMatch(/invalid_request/);
    expect(runStatus(state)).toBe('failed');
  });
});

describe('RunDriver: stored bytes per turn stay flat', () => {
  const PAYLOAD = 'x'.repeat(400);

  /** Executor turns of one read_file call each (~400-byte response and result), then submit. */
  async function bytesPerTurn(turns: number): Promise<{ average: number; perTurn: number[] }> {
    const model = new ScriptedModelProvider(
      roleScript({
        architect: [plan()],
        executor: (_request, n) => (n < turns - 1 ? toolUseResponse('read_file', { path: 'data.txt' }, { text: `Turn ${n}: ${PAYLOAD}` }) : submitWork()),
        reviewer: [verdict('APPROVE')],
      }),
    );
    const h = await startRun({ model, launch: { team: { executor: { maxTurns: turns + 1 } }, reviewPolicy: { humanGate: false } } });
    try {
      const { writeFileSync } = await import('node:fs');
      writeFileSync(join(h.workspace, 'data.txt'), `${PAYLOAD}\n`);
      const state = await h.driver.drive();
      expect(runStatus(state)).toBe('completed');
      const bytes = new Map<number, number>();
      for (const e of await h.events()) {
        const d = e.data as { role?: string; turn?: number };
        if (d.role !== 'executor' || d.turn === undefined) continue;
        if (!['ModelCallStarted', 'ModelCallCompleted', 'ToolCallRequested', 'ToolCallCompleted'].includes(e.type)) continue;
        bytes.set(d.turn, (bytes.get(d.turn) ?? 0) + JSON.stringify(e.data).length + JSON.stringify(e.metadata).length);
      }
      // Turns 2..turns-1: one tool call each (turn 1 also carries the task, the last one submits).
      const perTurn = [...bytes.entries()].filter(([t]) => t >= 2 && t <= turns - 1).map(([, b]) => b);
      expect(perTurn).toHaveLength(turns - 2);
      return { average: perTurn.reduce((a, b) => a + b, 0) / perTurn.length, perTurn };
    } finally {
      h.remove();
    }
  }

  it('10 turns vs 200 turns: average stored bytes of the turn events within 10%', async () => {
    const short = await bytesPerTurn(10);
    const long = await bytesPerTurn(200);
    expect(short.average).toBeGreaterThan(800); // the turns really carry ~400-byte messages
    expect(Math.abs(long.average - short.average) / short.average).toBeLessThan(0.1);
    // And flat within the long run: the last turns cost what the first ones did.
    const head = long.perTurn.slice(0, 10).reduce((a, b) => a + b, 0);
    const tail = long.perTurn.slice(-10).reduce((a, b) => a + b, 0);
    expect(Math.abs(tail - head) / head).toBeLessThan(0.1);
  });
});
