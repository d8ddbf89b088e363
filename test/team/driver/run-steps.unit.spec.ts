import { nextAction, type NextAction } from '../../../src/team/domain/next-action';
import { reviewIdOf } from '../../../src/team/domain/review-id';
import { DEFAULT_MAX_TURNS } from '../../../src/team/domain/roles';
import type { RunLaunchedData, TeamRunEvent } from '../../../src/team/domain/run-events';
import { evolve, initialRunState, runStatus, type RunState } from '../../../src/team/domain/run-state';
import {
  contextCompacted,
  decideModelFailure,
  decideStep,
  isDecidedStep,
  modelCallStarted,
  rejectionMessage,
  submissionEvents,
  toolApprovalRequested,
  toolCallCompleted,
  UNKNOWN_OUTCOME_MESSAGE,
  type DecidedStep,
  type StepInputs,
} from '../../../src/team/domain/run-steps';
import { ROLE_PROMPTS } from '../../../src/team/domain/prompts';
import { DEFAULT_ROLE_TOOLS } from '../../../src/team/tools/tool-registry';
import { DeciderSpecification, type Decider } from '../../support/decider-specification';
import {
  fold,
  LAUNCHED_AT_MS,
  modelCallCompleted,
  modelCallFailed,
  modelCallStarted as callStarted,
  outcomeOf,
  phaseStarted,
  planned,
  reviewing,
  RUN_ID,
  runLaunched,
  text,
  verdictTurn,
  worked,
} from '../machines/given-when-then';

// The events of the driver's steps, decided from the run's folded state with time and ids as
// inputs: given (past events), when (the step nextAction reads off them), then (the events).

const NOW_MS = LAUNCHED_AT_MS + 5_000;
const AT = new Date(NOW_MS).toISOString();

/** Inputs as the shell passes them: a fixed clock, ids from a counter. */
function inputs(extra: Partial<StepInputs> = {}): StepInputs {
  let n = 0;
  return { runId: RUN_ID, at: AT, nowMs: NOW_MS, newId: () => `id_${++n}`, ...extra };
}

interface TakeStep {
  step: DecidedStep;
  inputs: StepInputs;
}

const runSteps: Decider<RunState, TakeStep, TeamRunEvent> = {
  decide: (command, state) => decideStep(state, command.step, command.inputs),
  evolve: (state, event, recorded) => evolve(state, event, recorded),
  initialState: () => initialRunState(RUN_ID),
};
const given = DeciderSpecification.for(runSteps);

/** The step the driver takes next on these events (it must be one decided without effects). */
function stepAfter(past: TeamRunEvent[]): DecidedStep {
  const next = outcomeOf(past, NOW_MS).next;
  if (!isDecidedStep(next)) throw new Error(`the next action is ${next.kind}, not a decided step`);
  return next;
}

/** The next step, then the events it decides. */
function when(past: TeamRunEvent[], extra: Partial<StepInputs> = {}) {
  return given(past).when({ step: stepAfter(past), inputs: inputs(extra) });
}

function launchedWith(change: (data: RunLaunchedData) => void): TeamRunEvent {
  const launched = runLaunched();
  change(launched.data as RunLaunchedData);
  return launched;
}

describe('the events of the driver steps that need no effect (decideStep)', () => {
  it('a queued run starts its planning phase: the architect, its default prompt and tools', () => {
    when([runLaunched()]).then(({ events, state }) => {
      expect(events).toEqual([
        {
          type: 'PhaseStarted',
          data: {
            phase: 'planning',
            role: 'architect',
            iteration: 1,
            agent: `agent:architect:${RUN_ID}`,
            system: ROLE_PROMPTS.architect,
            tools: [...DEFAULT_ROLE_TOOLS.architect],
            maxTurns: DEFAULT_MAX_TURNS.architect,
            at: AT,
          },
        },
      ]);
      expect(nextAction(state, NOW_MS)).toMatchObject({ kind: 'callModel', role: 'architect', turn: 1 });
    });
  });

  it('a role prompt given at launch is the phase system prompt', () => {
    const launched = launchedWith((d) => (d.team.executor.systemPrompt = 'Be brief.'));
    when([launched, ...planned().slice(1)]).then([{ type: 'PhaseStarted', data: { phase: 'executing', role: 'executor', system: 'Be brief.' } }]);
  });

  it('changes requested: the next iteration starts with the findings', () => {
    when([...reviewing(), ...verdictTurn('REQUEST_CHANGES', { findings: ['add a farewell'] })]).then([
      { type: 'IterationStarted', data: { iteration: 2, reason: 'changes_requested', findings: ['add a farewell'], at: AT } },
    ]);
  });

  it('the executor answers in prose: the prose is its submission (no tool use id)', () => {
    const past = [...planned(), phaseStarted('executing'), callStarted('executor', 1), modelCallCompleted('executor', 1, [text('all done')])];
    when(past).then(({ events, state }) => {
      expect(events).toEqual([{ type: 'WorkSubmitted', data: { toolUseId: '', iteration: 1, summary: 'all done', files: [], at: AT } }]);
      expect(nextAction(state, NOW_MS)).toMatchObject({ kind: 'startPhase', phase: 'reviewing' });
    });
  });

  it('the architect answers in prose: a plan without steps', () => {
    const past = [runLaunched(), phaseStarted('planning'), callStarted('architect', 1), modelCallCompleted('architect', 1, [text('1. do it')])];
    when(past).then([{ type: 'PlanSubmitted', data: { toolUseId: '', plan: '1. do it', steps: [], at: AT } }]);
  });

  it('an approved verdict opens the human review, on the workspace digest the shell computed', () => {
    when([...reviewing(), ...verdictTurn('APPROVE')], { artifactHash: 'sha256:work' }).then(({ events, state }) => {
      expect(events).toEqual([
        {
          type: 'ReviewOpened',
          data: {
            reviewId: reviewIdOf(RUN_ID, 1),
            iteration: 1,
            executor: `agent:executor:${RUN_ID}`,
            artifactHash: 'sha256:work',
            charterVersion: expect.stringMatching(/^sha256:/),
            at: AT,
          },
        },
      ]);
      expect(runStatus(state)).toBe('awaiting_review');
    });
  });

  it('a review timeout policy sets the due date from the clock given', () => {
    const launched = launchedWith((d) => (d.reviewPolicy.timeout = { policy: 'auto_approve', afterMs: 60_000 }));
    const past = [launched, ...reviewing().slice(1), ...verdictTurn('APPROVE')];
    when(past, { artifactHash: 'sha256:work', nowMs: NOW_MS + 7 }).then([
      { type: 'ReviewOpened', data: { timeout: { policy: 'auto_approve', dueAt: new Date(NOW_MS + 7 + 60_000).toISOString() }, at: AT } },
    ]);
  });

  it('opening a review without the workspace digest is refused', () => {
    when([...reviewing(), ...verdictTurn('APPROVE')]).thenThrows(Error, (e) => expect(e.message).toMatch(/artifactHash/));
  });

  it('a waived gate is the system decision, with an id from the inputs; the run then completes', () => {
    const launched = launchedWith((d) => (d.reviewPolicy.humanGate = false));
    const past = [launched, ...reviewing().slice(1), ...verdictTurn('APPROVE')];
    when(past, { artifactHash: 'sha256:work' }).then(({ events, state }) => {
      expect(events).toMatchObject([
        {
          type: 'ReviewDecided',
          data: { decisionId: 'id_1', reviewId: reviewIdOf(RUN_ID, 1), outcome: 'waived', decider: 'system', deciderKind: 'system', artifactHash: 'sha256:work', at: AT },
        },
      ]);
      expect(nextAction(state, NOW_MS)).toMatchObject({ kind: 'end', reason: 'COMPLETED' });
    });
  });

  it('over the token budget: BudgetExceeded, then the run ends BUDGET_EXHAUSTED', () => {
    // The architect's turn used 15 tokens (10 in, 5 out): the budget is spent before the executor's first call.
    when([runLaunched({ totalTokens: 15 }), ...planned().slice(1), phaseStarted('executing')]).then(({ events, state }) => {
      expect(events).toEqual([
        { type: 'BudgetExceeded', data: { scope: 'total', usedTokens: 15, limitTokens: 15, at: AT } },
        { type: 'RunEnded', data: { status: 'failed', reason: 'BUDGET_EXHAUSTED', message: 'token budget exhausted (total: 15 of 15)', at: AT } },
      ]);
      expect(runStatus(state)).toBe('failed');
    });
  });

  it('prompt-cache reads and writes count against the token budget: caching lowers the cost, not the count', () => {
    // The architect's turn processed 100 tokens, only 10 of them input billed at the full rate.
    const cached = planned({ totalTokens: 100 }).map((e) =>
      e.type === 'ModelCallCompleted' ? { ...e, data: { ...e.data, usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 80, cacheWriteTokens: 5 } } } : e,
    );
    when([...cached, phaseStarted('executing')]).then(({ events }) => {
      expect(events[0]).toEqual({ type: 'BudgetExceeded', data: { scope: 'total', usedTokens: 100, limitTokens: 100, at: AT } });
    });
  });

  it('past the timeout: the run ends TIMEOUT', () => {
    when([runLaunched({ timeoutMs: 1_000 }), phaseStarted('planning')]).then([{ type: 'RunEnded', data: { status: 'failed', reason: 'TIMEOUT', message: 'the run exceeded its timeout of 1000 ms', at: AT } }]);
  });

  it('a repetition warning names the repeated fingerprints; a cycle names each call of the cycle once', () => {
    const past = [...planned(), phaseStarted('executing')];
    const repetition: DecidedStep = {
      kind: 'warnStagnation',
      role: 'executor',
      turn: 6,
      detection: { signal: 'repetition', ratio: 0.833, calls: 6, repeated: [{ tool: 'read_file', fingerprint: 'read_file:aa', count: 6 }] },
      message: 'stop repeating',
    };
    given(past)
      .when({ step: repetition, inputs: inputs() })
      .then([{ type: 'StagnationWarned', data: { role: 'executor', turn: 6, signal: 'repetition', ratio: 0.833, fingerprints: ['read_file:aa'], message: 'stop repeating', at: AT } }]);
    const cycle: DecidedStep = { ...repetition, detection: { signal: 'cycle', cycleLength: 2, turns: 4, cycle: ['a:1 + b:2', 'a:1'] } };
    given(past)
      .when({ step: cycle, inputs: inputs() })
      .then(({ events }) => {
        expect(events[0].data).toEqual({ role: 'executor', turn: 6, signal: 'cycle', cycleLength: 2, fingerprints: ['a:1', 'b:2'], message: 'stop repeating', at: AT });
      });
  });

  it('the same state and inputs decide the same events: no clock or id inside', () => {
    const past = [...worked(), phaseStarted('reviewing'), ...verdictTurn('APPROVE')];
    const step = stepAfter(past);
    const a = decideStep(fold(past), step, inputs({ artifactHash: 'sha256:x' }));
    const b = decideStep(fold(past), step, inputs({ artifactHash: 'sha256:x' }));
    expect(a).toEqual(b);
  });

  it('only the steps without effects are decided here', () => {
    const effectful: NextAction['kind'][] = ['callModel', 'runTool', 'compactContext', 'submit', 'none', 'waitForReview', 'waitForApproval'];
    for (const kind of effectful) expect(isDecidedStep({ kind } as NextAction)).toBe(false);
  });
});

describe('the events of effectful steps, built from what the shell observed', () => {
  const executing = () => fold([...planned(), phaseStarted('executing'), callStarted('executor', 1, { callId: 'call_1' })]);
  const callStep = { kind: 'callModel' as const, role: 'executor' as const, turn: 1, retry: false, toolResultIds: ['tu_a'], content: [text('go')] };

  it('a new call records its start with the user message it sends', () => {
    expect(modelCallStarted(callStep, { callId: 'call_1', model: 'scripted', at: AT })).toEqual({
      type: 'ModelCallStarted',
      data: { role: 'executor', turn: 1, callId: 'call_1', model: 'scripted', toolResultIds: ['tu_a'], content: [text('go')], at: AT },
    });
  });

  const failure = (inputsExtra: { attempt?: number } = {}) => ({ attempt: 1, callId: 'call_1', retry: { delaysMs: [100, 200], maxDelayMs: 1_000 }, at: AT, random: () => 0, ...inputsExtra });

  it('a transient failure with attempts left waits the scheduled delay, then retries', () => {
    const decided = decideModelFailure(executing(), callStep, { kind: 'overloaded', message: 'Overloaded', status: 529, transient: true }, failure());
    expect(decided).toEqual({
      events: [{ type: 'ModelCallFailed', data: { role: 'executor', turn: 1, callId: 'call_1', attempt: 1, kind: 'overloaded', message: 'Overloaded', status: 529, retryInMs: 100 } }],
      retryInMs: 100,
    });
  });

  it('the server retry-after is honoured', () => {
    const decided = decideModelFailure(executing(), callStep, { kind: 'rate_limited', message: 'slow down', transient: true, retryAfterMs: 150 }, failure());
    expect(decided.retryInMs).toBe(150);
  });

  it('a context too long for the model: compaction first, then the same call', () => {
    const decided = decideModelFailure(executing(), callStep, { kind: 'context_too_long', message: 'too long', status: 400, transient: false }, failure());
    expect(decided).toEqual({ events: [{ type: 'ModelCallFailed', data: expect.objectContaining({ compactBeforeRetry: true }) }] });
  });

  it('a permanent failure, or the last attempt, ends the run ERROR', () => {
    const permanent = decideModelFailure(executing(), callStep, { kind: 'invalid_request', message: 'bad', status: 400, transient: false }, failure());
    expect(permanent.retryInMs).toBeUndefined();
    expect(permanent.events.map((e) => e.type)).toEqual(['ModelCallFailed', 'RunEnded']);
    expect(permanent.events[1].data).toEqual({ status: 'failed', reason: 'ERROR', message: 'model call failed (invalid_request) after 1 attempt(s): bad', at: AT });
    const last = decideModelFailure(executing(), callStep, { kind: 'server', message: 'boom', status: 500, transient: true }, failure({ attempt: 3 }));
    expect(last.events[1].data).toMatchObject({ reason: 'ERROR', message: 'model call failed (server) after 3 attempt(s): boom' });
  });

  it('the same error a third time in a row trips the breaker, whatever attempts are left', () => {
    const state = fold([
      ...planned(),
      phaseStarted('executing'),
      callStarted('executor', 1, { callId: 'call_executor_1' }),
      modelCallFailed('executor', 1, { attempt: 1, kind: 'server', retryInMs: 1 }),
      modelCallFailed('executor', 1, { attempt: 2, kind: 'server', retryInMs: 1 }),
    ]);
    const decided = decideModelFailure(state, callStep, { kind: 'server', message: 'rate limited', transient: true }, { ...failure({ attempt: 3 }), retry: { delaysMs: [1, 1, 1, 1, 1], maxDelayMs: 1_000 } });
    expect(decided.retryInMs).toBeUndefined();
    expect(decided.events[1].data).toMatchObject({ reason: 'ERROR', message: expect.stringMatching(/3 times in a row/) });
  });

  it('a submission: its tool result and the submission when valid, the reason when not', () => {
    const state = executing();
    const call = { type: 'tool_use' as const, id: 'tu_w', name: 'submit_work', input: {} };
    expect(submissionEvents(state, 'executor', call, { ok: false, error: 'summary is required' }, AT)).toEqual([
      { type: 'ToolCallCompleted', data: { role: 'executor', turn: 1, toolUseId: 'tu_w', name: 'submit_work', output: 'invalid submission: summary is required', isError: true, durationMs: 0 } },
    ]);
    expect(submissionEvents(state, 'executor', call, { ok: true, submission: { summary: 'done', files: ['a'] } }, AT)).toEqual([
      { type: 'ToolCallCompleted', data: { role: 'executor', turn: 1, toolUseId: 'tu_w', name: 'submit_work', output: 'Submitted.', isError: false, durationMs: 0 } },
      { type: 'WorkSubmitted', data: { toolUseId: 'tu_w', iteration: 1, summary: 'done', files: ['a'], at: AT } },
    ]);
  });

  it('a risky call asks for approval, due after the policy timeout', () => {
    const call = { type: 'tool_use' as const, id: 'tu_cmd', name: 'run_command', input: { command: 'ls' } };
    const policy = { threshold: 'high' as const, allowLauncherToApprove: false, timeout: { policy: 'auto_deny' as const, afterMs: 1_000 } };
    expect(toolApprovalRequested(RUN_ID, 'executor', 2, call, 'high', policy, { nowMs: NOW_MS, at: AT })).toEqual({
      type: 'ToolApprovalRequested',
      data: {
        approvalId: `apr_${RUN_ID}.tu_cmd`,
        role: 'executor',
        turn: 2,
        toolUseId: 'tu_cmd',
        name: 'run_command',
        input: { command: 'ls' },
        risk: 'high',
        threshold: 'high',
        timeout: { policy: 'auto_deny', dueAt: new Date(NOW_MS + 1_000).toISOString() },
        at: AT,
      },
    });
  });

  it('tool results: an unknown outcome is marked; a rejection tells the model who rejected it and why', () => {
    const call = { type: 'tool_use' as const, id: 'tu_x', name: 'write_file', input: {} };
    expect(toolCallCompleted('executor', 1, call, { output: UNKNOWN_OUTCOME_MESSAGE, isError: true }, 0, true).data).toMatchObject({ outcomeUnknown: true, isError: true });
    expect(toolCallCompleted('executor', 1, call, { output: 'ok', isError: false }, 5).data).not.toHaveProperty('outcomeUnknown');
    const decision = { approvalId: 'a', role: 'executor' as const, turn: 1, toolUseId: 'tu_x', name: 'write_file', outcome: 'rejected' as const, reason: 'no', decider: 'system', at: AT };
    expect(rejectionMessage({ ...decision, deciderKind: 'human' })).toBe('rejected by user: no');
    expect(rejectionMessage({ ...decision, deciderKind: 'system', policy: 'auto_deny' })).toBe('rejected: no human approved this call in time (timeout policy auto_deny): no');
  });

  it('a compaction records the model summary, or each archived message cut short when summarising failed', () => {
    const state = fold([
      ...planned(),
      phaseStarted('executing'),
      callStarted('executor', 1),
      modelCallCompleted('executor', 1, [text('x'.repeat(400))]),
    ]);
    const step = {
      kind: 'compactContext' as const,
      role: 'executor' as const,
      turn: 2,
      reason: 'over_budget' as const,
      plan: { fromIndex: 0, toIndex: 2, tokensBefore: 500, tokensAfter: 1_200 },
      budgetTokens: 800,
      summaryModel: 'scripted',
    };
    const response = { model: 'scripted', content: [text('short')], stopReason: 'end_turn' as const, usage: { inputTokens: 10, outputTokens: 2 } };
    expect(contextCompacted(state, step, { ok: true, text: 'short', response }, AT).data).toEqual({
      role: 'executor',
      turn: 2,
      fromIndex: 0,
      toIndex: 2,
      summary: 'short',
      method: 'model',
      reason: 'over_budget',
      model: 'scripted',
      usage: { inputTokens: 10, outputTokens: 2 },
      costUsd: 0,
      tokensBefore: 500,
      tokensAfter: 1_200 - 1_000 + 2,
      budgetTokens: 800,
      at: AT,
    });
    const truncated = contextCompacted(state, step, { ok: false, error: 'Overloaded' }, AT).data as { method: string; error: string; summary: string };
    expect(truncated).toMatchObject({ method: 'truncate', error: 'Overloaded' });
    expect(truncated.summary.length).toBeLessThan(400);
  });
});
