import { autoChoice, complexityOf, loopSettingsOf, type LoopInput } from '../../src/team/domain/loop-strategy';
import { modelOfCall, nextAction, toolsOfCall } from '../../src/team/domain/next-action';
import type { RunLaunchedData, TeamRunEvent } from '../../src/team/domain/run-events';
import { evolve, initialRunState, type RunState } from '../../src/team/domain/run-state';
import { contextCompacted, decideStep, isDecidedStep, type DecidedStep, type StepInputs } from '../../src/team/domain/run-steps';
import { DEFAULT_STAGNATION_POLICY } from '../../src/team/domain/resilience/policies';
import { DeciderSpecification, type Decider } from '../support/decider-specification';
import {
  fold,
  LAUNCHED_AT_MS,
  modelCallCompleted,
  modelCallStarted,
  outcomeOf,
  phaseStarted,
  planned,
  RUN_ID,
  runLaunched,
  text,
  toolCallCompleted,
  toolUse,
  type LaunchOptions,
} from './machines/given-when-then';

// The loop decisions of plan-first phases: given (past events), when (the step nextAction reads
// off them), then (the events decideStep records for it).

const NOW_MS = LAUNCHED_AT_MS + 5_000;
const AT = new Date(NOW_MS).toISOString();
const inputs = (): StepInputs => ({ runId: RUN_ID, at: AT, nowMs: NOW_MS, newId: () => 'id_1' });

const loopSteps: Decider<RunState, DecidedStep, TeamRunEvent> = {
  decide: (step, state) => decideStep(state, step, inputs()),
  evolve: (state, event, recorded) => evolve(state, event, recorded),
  initialState: () => initialRunState(RUN_ID),
};
const given = DeciderSpecification.for(loopSteps);

function stepAfter(past: TeamRunEvent[]): DecidedStep {
  const next = outcomeOf(past, NOW_MS).next;
  if (!isDecidedStep(next)) throw new Error(`the next action is ${next.kind}, not a decided step`);
  return next;
}
const when = (past: TeamRunEvent[]) => given(past).when(stepAfter(past));

/** Launched with the executor's loop settings (completed from the defaults, as a launch records them). */
function launched(loop: LoopInput, options: LaunchOptions = {}): TeamRunEvent {
  const event = runLaunched(options);
  (event.data as RunLaunchedData).team.executor.loop = loopSettingsOf(loop);
  return event;
}

/** The executor's phase under `loop`, up to before its first call. */
const executing = (loop: LoopInput, options: LaunchOptions = {}): TeamRunEvent[] => [
  launched(loop, options),
  ...planned(options).slice(1),
  phaseStarted('executing'),
];

/** One executor turn calling one tool; the loop's own tools get no ToolCallCompleted here (the step decides it). */
function turn(n: number, name: string, input: Record<string, unknown>, toolResultIds: string[] = []): TeamRunEvent[] {
  return [modelCallStarted('executor', n, { toolResultIds, content: n === 1 ? [text('task')] : [] }), modelCallCompleted('executor', n, [toolUse(`tu_${n}`, name, input)])];
}

const loopResult = (n: number, name: string, output: string): TeamRunEvent => toolCallCompleted('executor', n, `tu_${n}`, name, output);
const planRecorded = (n: number, steps: string[]): TeamRunEvent => ({ type: 'LoopPlanRecorded', data: { role: 'executor', toolUseId: `tu_${n}`, steps, at: AT } });
const stepStarted = (index: number, of: number, textOf: string): TeamRunEvent => ({ type: 'LoopStepStarted', data: { role: 'executor', index, of, text: textOf, at: AT } });

/** Planned (three steps) and the first step started. */
function inFirstStep(loop: LoopInput, options: LaunchOptions = {}): TeamRunEvent[] {
  return [
    ...executing(loop, options),
    ...turn(1, 'submit_steps', { steps: ['write a', 'write b', 'check'] }),
    loopResult(1, 'submit_steps', 'Plan recorded: 3 step(s).'),
    planRecorded(1, ['write a', 'write b', 'check']),
    stepStarted(1, 3, 'write a'),
  ];
}

describe('loop strategies: what the loop does next (domain/loop-strategy.ts)', () => {
  it('react (no loop setting): the phase opens with the task alone, with the role model and tools', () => {
    const state = fold([...planned(), phaseStarted('executing')]);
    const next = nextAction(state, NOW_MS);
    expect(next).toMatchObject({ kind: 'callModel', role: 'executor', turn: 1 });
    expect((next as { content: unknown[] }).content).toHaveLength(1);
    expect(state.stepLoop).toBeUndefined();
  });

  it('plan_execute: the first call asks for a plan, with the planner model and submit_steps alone', () => {
    const state = fold(executing({ strategy: 'plan_execute', plannerModel: 'planner', executorModel: 'worker' }));
    const next = nextAction(state, NOW_MS) as { kind: string; content: { text: string }[] };
    expect(next.kind).toBe('callModel');
    expect(next.content[1].text).toMatch(/make a plan in 1 to 7 steps: call submit_steps/);
    expect(modelOfCall(state, 'executor')).toBe('planner');
    expect(toolsOfCall(state, 'executor', []).map((t) => t.name)).toEqual(['submit_steps']);
  });

  it('submit_steps records the plan, then the first step starts', () => {
    const past = [...executing({ strategy: 'plan_execute' }), ...turn(1, 'submit_steps', { steps: ['write a', 'check'] })];
    const { state } = when(past).then([
      { type: 'ToolCallCompleted', data: { toolUseId: 'tu_1', output: 'Plan recorded: 2 step(s).', isError: false } },
      { type: 'LoopPlanRecorded', data: { role: 'executor', steps: ['write a', 'check'] } },
    ]);
    expect(nextAction(state, NOW_MS)).toEqual({ kind: 'startStep', role: 'executor', index: 1, of: 2, text: 'write a' });
  });

  it('a plan outside the bounds is refused as the tool result, and nothing is recorded for the loop', () => {
    const past = [...executing({ strategy: 'hybrid' }), ...turn(1, 'submit_steps', { steps: ['only one'] })];
    when(past).then([{ type: 'ToolCallCompleted', data: { isError: true, output: 'invalid plan: a plan has 3 to 7 steps, this one has 1' } }]);
  });

  it('a work tool called while a plan is asked for (only submit_steps is offered) is refused, not run', () => {
    const past = [...executing({ strategy: 'plan_execute' }), ...turn(1, 'write_file', { path: 'a.txt', content: 'A' })];
    const { state } = when(past).then([
      { type: 'ToolCallCompleted', data: { toolUseId: 'tu_1', name: 'write_file', isError: true, output: 'write_file is not available yet: make a plan with submit_steps first' } },
    ]);
    expect(nextAction(state, NOW_MS)).toMatchObject({ kind: 'callModel', turn: 2, toolResultIds: ['tu_1'] });
  });

  it('auto: hybrid is downgraded from 80% of the budget used, not below', () => {
    expect(autoChoice('complex', 79)).toEqual({ strategy: 'hybrid', downgraded: false });
    expect(autoChoice('complex', 80)).toEqual({ strategy: 'plan_execute', downgraded: true });
    expect(autoChoice('medium', 95)).toEqual({ strategy: 'plan_execute', downgraded: false });
  });

  it('a step turn carries the step, the executor model, and complete_step / fail_step instead of submit_work', () => {
    const state = fold(inFirstStep({ strategy: 'plan_execute', executorModel: 'worker' }));
    const next = nextAction(state, NOW_MS) as { kind: string; toolResultIds: string[]; content: { text: string }[] };
    expect(next).toMatchObject({ kind: 'callModel', turn: 2, toolResultIds: ['tu_1'] });
    expect(next.content[0].text).toMatch(/^Step 1 of 3: write a/);
    expect(modelOfCall(state, 'executor')).toBe('worker');
    const names = toolsOfCall(state, 'executor', [{ name: 'submit_work', description: '', input_schema: {} }, { name: 'write_file', description: '', input_schema: {} }]).map((t) => t.name);
    expect(names).toEqual(['write_file', 'complete_step', 'fail_step']);
  });

  it('a compaction in the middle of a step keeps the plan and the step in the summary, whatever the summariser wrote', () => {
    const past = [
      ...inFirstStep({ strategy: 'hybrid' }),
      ...turn(2, 'write_file', { path: 'a.txt', content: 'A' }, ['tu_1']),
      toolCallCompleted('executor', 2, 'tu_2', 'write_file', 'wrote a.txt'),
    ];
    const state = fold(past);
    // The task, the plan call and its result are archived: the message naming step 1 is gone.
    const compaction = contextCompacted(
      state,
      { kind: 'compactContext', role: 'executor', turn: 2, reason: 'over_budget', plan: { fromIndex: 0, toIndex: 3, tokensBefore: 900, tokensAfter: 300 }, budgetTokens: 1000, summaryModel: 'm' },
      { ok: false, error: 'the summary model is down' },
      AT,
    );
    const summary = (compaction.data as { summary: string }).summary;
    expect(summary).toContain('The plan in force:\n1. write a\n2. write b\n3. check');
    expect(summary).toMatch(/Where you are now:\nStep 1 of 3: write a/);
    const after = fold([...past, compaction]);
    expect(after.conversations.executor.messages[0].content).toEqual([expect.objectContaining({ text: expect.stringContaining('Step 1 of 3: write a') })]);
    expect(after.stepLoop).toMatchObject({ current: 0, inStep: true });
  });

  it('complete_step records the step summary and the progress so far', () => {
    const past = [...inFirstStep({ strategy: 'plan_execute' }), ...turn(2, 'complete_step', { summary: 'a written' }, ['tu_1'])];
    const { state } = when(past).then([
      { type: 'ToolCallCompleted', data: { output: 'Step 1 of 3 done.' } },
      { type: 'LoopStepCompleted', data: { index: 1, summary: 'a written', progress: '1. write a — a written' } },
    ]);
    expect(nextAction(state, NOW_MS)).toMatchObject({ kind: 'startStep', index: 2, text: 'write b' });
  });

  it('a second complete_step in the same response is refused with what comes next: the next step, not a plan', () => {
    const past = [
      ...inFirstStep({ strategy: 'plan_execute' }),
      modelCallStarted('executor', 2, { toolResultIds: ['tu_1'] }),
      modelCallCompleted('executor', 2, [toolUse('tu_2a', 'complete_step', { summary: 'a written' }), toolUse('tu_2b', 'complete_step', { summary: 'b too' })]),
      toolCallCompleted('executor', 2, 'tu_2a', 'complete_step', 'Step 1 of 3 done.'),
      { type: 'LoopStepCompleted', data: { role: 'executor', index: 1, toolUseId: 'tu_2a', summary: 'a written', progress: '1. write a — a written', at: AT } },
    ] as TeamRunEvent[];
    when(past).then([{ type: 'ToolCallCompleted', data: { toolUseId: 'tu_2b', isError: true, output: 'there is no step in progress: step 2 of 3 starts with your next turn' } }]);
  });

  it('submit_work in the middle of the plan is refused: the close comes after the last step', () => {
    const past = [...inFirstStep({ strategy: 'plan_execute' }), ...turn(2, 'submit_work', { summary: 'done' }, ['tu_1'])];
    when(past).then([{ type: 'ToolCallCompleted', data: { isError: true, output: expect.stringMatching(/^submit_work is not available yet/) } }]);
  });

  it('fail_step records the failure; the next call asks the planner for a new plan', () => {
    const past = [...inFirstStep({ strategy: 'plan_execute', plannerModel: 'planner' }), ...turn(2, 'fail_step', { reason: 'no disk' }, ['tu_1'])];
    const { state } = when(past).then([
      { type: 'ToolCallCompleted', data: { output: 'Step 1 failed.' } },
      { type: 'LoopStepFailed', data: { index: 1, cause: 'fail_step', reason: 'no disk' } },
    ]);
    const next = nextAction(state, NOW_MS) as { content: { text: string }[] };
    expect(next.content[0].text).toMatch(/failed: no disk[\s\S]*Replan 1 of at most 3/);
    expect(modelOfCall(state, 'executor')).toBe('planner');
  });

  it('a new plan after a failure is LoopReplanned', () => {
    const past = [
      ...inFirstStep({ strategy: 'plan_execute' }),
      ...turn(2, 'fail_step', { reason: 'no disk' }, ['tu_1']),
      loopResult(2, 'fail_step', 'Step 1 failed.'),
      { type: 'LoopStepFailed', data: { role: 'executor', index: 1, cause: 'fail_step', reason: 'no disk', toolUseId: 'tu_2', at: AT } },
      ...turn(3, 'submit_steps', { steps: ['write a elsewhere'] }, ['tu_2']),
    ] as TeamRunEvent[];
    when(past).then([{ type: 'ToolCallCompleted' }, { type: 'LoopReplanned', data: { replan: 1, steps: ['write a elsewhere'] } }]);
  });

  it('a failed step with no replan left ends the run ERROR', () => {
    const past = [
      ...inFirstStep({ strategy: 'plan_execute', maxReplans: 0 }),
      ...turn(2, 'fail_step', { reason: 'no disk' }, ['tu_1']),
      loopResult(2, 'fail_step', 'Step 1 failed.'),
      { type: 'LoopStepFailed', data: { role: 'executor', index: 1, cause: 'fail_step', reason: 'no disk', toolUseId: 'tu_2', at: AT } },
    ] as TeamRunEvent[];
    when(past).then([{ type: 'RunEnded', data: { status: 'failed', reason: 'ERROR', message: expect.stringMatching(/no replan is left \(0 of 0 used\)/) } }]);
  });

  it('hybrid: a step that uses up its turns fails (turn_limit)', () => {
    const past = [
      ...inFirstStep({ strategy: 'hybrid', maxTurnsPerStep: 2 }),
      ...turn(2, 'list_files', { path: '.' }, ['tu_1']),
      loopResult(2, 'list_files', 'a'),
      ...turn(3, 'list_files', { path: 'x' }, ['tu_2']),
      loopResult(3, 'list_files', 'b'),
    ];
    when(past).then([{ type: 'LoopStepFailed', data: { index: 1, cause: 'turn_limit', reason: 'the step used its 2 turns without complete_step' } }]);
  });

  it.each(['hybrid', 'plan_execute'] as const)('%s: the stagnation window at the next step (fresh for hybrid only)', (strategy) => {
    const past = [
      ...inFirstStep({ strategy }),
      ...turn(2, 'list_files', { path: '.' }, ['tu_1']),
      loopResult(2, 'list_files', 'a'),
      ...turn(3, 'complete_step', { summary: 'looked' }, ['tu_2']),
      loopResult(3, 'complete_step', 'Step 1 of 3 done.'),
      { type: 'LoopStepCompleted', data: { role: 'executor', index: 1, toolUseId: 'tu_3', summary: 'looked', progress: '1. write a — looked', at: AT } },
    ] as TeamRunEvent[];
    const before = fold(past).resilience.stagnation.calls;
    expect(before.length).toBeGreaterThan(0);
    when(past).then(({ state }) => expect(state.resilience.stagnation.calls).toEqual(strategy === 'hybrid' ? [] : before));
  });

  it('stuck in a step: the corrective message names complete_step, not the submit tool', () => {
    const past = inFirstStep({ strategy: 'hybrid' });
    (past[0].data as RunLaunchedData).stagnation = { ...DEFAULT_STAGNATION_POLICY, minCalls: 3 };
    let id = 'tu_1';
    for (let n = 2; n <= 4; n++) {
      past.push(...turn(n, 'list_files', { path: '.' }, [id]), loopResult(n, 'list_files', 'a'));
      id = `tu_${n}`;
    }
    when(past).then([{ type: 'StagnationWarned', data: { role: 'executor', message: expect.stringMatching(/call complete_step \(or fail_step\) now/) } }]);
  });

  it('after the last step the close: the role tools again, with the executor model', () => {
    const past = [
      ...executing({ strategy: 'plan_execute', executorModel: 'worker' }),
      ...turn(1, 'submit_steps', { steps: ['write a'] }),
      loopResult(1, 'submit_steps', 'Plan recorded: 1 step(s).'),
      planRecorded(1, ['write a']),
      stepStarted(1, 1, 'write a'),
      ...turn(2, 'complete_step', { summary: 'done' }, ['tu_1']),
      loopResult(2, 'complete_step', 'Step 1 of 1 done.'),
      { type: 'LoopStepCompleted', data: { role: 'executor', index: 1, toolUseId: 'tu_2', summary: 'done', progress: '1. write a — done', at: AT } },
    ] as TeamRunEvent[];
    const state = fold(past);
    const next = nextAction(state, NOW_MS) as { content: { text: string }[] };
    expect(next.content[0].text).toMatch(/All 1 steps of the plan are complete[\s\S]*call submit_work/);
    expect(toolsOfCall(state, 'executor', [{ name: 'submit_work', description: '', input_schema: {} }]).map((t) => t.name)).toEqual(['submit_work']);
    expect(modelOfCall(state, 'executor')).toBe('worker');
  });

  it('auto: the choice is recorded when the phase starts, from the complexity and the budget used', () => {
    when(executing({ strategy: 'auto' }, { acceptanceCriteria: ['a', 'b', 'c', 'd'] })).then([
      { type: 'LoopStrategyChosen', data: { role: 'executor', phase: 'executing', iteration: 1, strategy: 'hybrid', complexity: 'complex', downgraded: false } },
    ]);
    // The architect's turn used 15 tokens of a budget of 18: over 80%, hybrid becomes plan_execute.
    when(executing({ strategy: 'auto' }, { acceptanceCriteria: ['a', 'b', 'c', 'd'], totalTokens: 18 })).then([
      { type: 'LoopStrategyChosen', data: { strategy: 'plan_execute', complexity: 'complex', budgetUsedPercent: 83, downgraded: true } },
    ]);
    const { state } = when(executing({ strategy: 'auto' }, { acceptanceCriteria: ['a'] })).then([{ type: 'LoopStrategyChosen', data: { strategy: 'react', complexity: 'simple' } }]);
    expect(state.stepLoop).toBeUndefined();
    expect(nextAction(state, NOW_MS)).toMatchObject({ kind: 'callModel', turn: 1 });
  });

  it('complexity: criteria count and goal length', () => {
    expect(complexityOf('short', ['a'])).toBe('simple');
    expect(complexityOf('short', ['a', 'b'])).toBe('medium');
    expect(complexityOf('x'.repeat(201), ['a'])).toBe('medium');
    expect(complexityOf('short', ['a', 'b', 'c', 'd'])).toBe('complex');
    expect(complexityOf('x'.repeat(1001), ['a'])).toBe('complex');
    expect(autoChoice('medium', 95)).toEqual({ strategy: 'plan_execute', downgraded: false });
    expect(autoChoice('complex', 79)).toEqual({ strategy: 'hybrid', downgraded: false });
  });
});
