import { REVIEWER_REMINDER } from '../../../src/team/domain/next-action';
import {
  given,
  modelCallCompleted,
  modelCallFailed,
  modelCallStarted,
  phaseStarted,
  planned,
  reviewing,
  runEnded,
  runLaunched,
  text,
  toolCallCompleted,
  toolCallRequested,
  toolUse,
} from './given-when-then';

// One role's agent loop inside a phase: what the driver does after each recorded step.

const planning = (options: Parameters<typeof runLaunched>[0] = {}, maxTurns?: number) => [runLaunched(options), phaseStarted('planning', { maxTurns })];
const executing = (maxTurns?: number) => [...planned(), phaseStarted('executing', { maxTurns })];

describe('agent loop: tools', () => {
  it('a response with tool calls runs them, work tools in the model order, the submission last', () => {
    const response = modelCallCompleted('executor', 1, [
      text('Let me look.'),
      toolUse('tu_a', 'read_file', { path: 'a' }),
      toolUse('tu_s', 'submit_work', { summary: 'done' }),
      toolUse('tu_b', 'list_files', {}),
    ]);
    const past = [...executing(), modelCallStarted('executor', 1), response];
    given(past).then({ loop: 'runningTools', next: { kind: 'runTool', role: 'executor', call: { id: 'tu_a' }, alreadyStarted: false } });
    given(past)
      .when(toolCallRequested('executor', 1, 'tu_a', 'read_file'), toolCallCompleted('executor', 1, 'tu_a', 'read_file', 'A'))
      .then({ loop: 'runningTools', next: { kind: 'runTool', call: { id: 'tu_b', name: 'list_files' } } });
    given(past)
      .when(toolCallCompleted('executor', 1, 'tu_a', 'read_file', 'A'), toolCallCompleted('executor', 1, 'tu_b', 'list_files', 'a\nb'))
      .then({ loop: 'runningTools', next: { kind: 'submit', role: 'executor', call: { id: 'tu_s', name: 'submit_work', input: { summary: 'done' } } } });
  });

  it('the tool_result ids of the last response open the next user message, in the model order', () => {
    const past = [
      ...executing(),
      modelCallStarted('executor', 1),
      modelCallCompleted('executor', 1, [toolUse('tu_1', 'read_file', { path: 'x' }), toolUse('tu_2', 'list_files')]),
      // Completed out of order: the message still follows the response.
      toolCallCompleted('executor', 1, 'tu_2', 'list_files', 'x'),
      toolCallCompleted('executor', 1, 'tu_1', 'read_file', 'no such file', true),
    ];
    given(past).then({ loop: 'ready', next: { kind: 'callModel', role: 'executor', turn: 2, retry: false, toolResultIds: ['tu_1', 'tu_2'], content: [] } });

    const { state } = given(past).when(modelCallStarted('executor', 2, { toolResultIds: ['tu_1', 'tu_2'] })).then({ loop: 'awaitingResponse' });
    const messages = state.conversations.executor.messages;
    expect(messages[messages.length - 1]).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'tu_1', content: 'no such file', is_error: true },
        { type: 'tool_result', tool_use_id: 'tu_2', content: 'x' },
      ],
    });
    // Absorbed into the conversation, the results are not kept twice.
    expect(state.completedTools.has('tu_1') || state.completedTools.has('tu_2')).toBe(false);
  });

  it('a non-idempotent tool requested but not completed is run again with alreadyStarted (the driver decides)', () => {
    given([
      ...executing(),
      modelCallStarted('executor', 1),
      modelCallCompleted('executor', 1, [toolUse('tu_cmd', 'run_command', { command: 'make' })]),
      toolCallRequested('executor', 1, 'tu_cmd', 'run_command', { command: 'make' }),
    ]).then({ loop: 'runningTools', next: { kind: 'runTool', role: 'executor', call: { id: 'tu_cmd', name: 'run_command' }, alreadyStarted: true } });
  });

  it('cancelled during a tool call: the run is cancelled and there is nothing left to do', () => {
    given([
      ...executing(),
      modelCallStarted('executor', 1),
      modelCallCompleted('executor', 1, [toolUse('tu_cmd', 'run_command', { command: 'sleep 60' })]),
      toolCallRequested('executor', 1, 'tu_cmd', 'run_command', { command: 'sleep 60' }),
    ])
      .when(runEnded('CANCELLED', 'cancelled by user:ann'))
      .then({ status: 'cancelled', reason: 'CANCELLED', team: 'ended', loop: null, next: { kind: 'none' } });
  });
});

describe('agent loop: answers without tools', () => {
  it("the architect's final answer is submitted as its plan", () => {
    given([...planning(), modelCallStarted('architect', 1), modelCallCompleted('architect', 1, [text('1. write'), text('2. check')])]).then({
      loop: 'answered',
      next: { kind: 'submitAnswer', role: 'architect', text: '1. write\n2. check' },
    });
  });

  it("the executor's final answer is submitted as its work", () => {
    given([...executing(), modelCallStarted('executor', 1), modelCallCompleted('executor', 1, [text('All done.')])]).then({
      next: { kind: 'submitAnswer', role: 'executor', text: 'All done.' },
    });
  });

  it('a reviewer that answers without submit_verdict is reminded, in a new call', () => {
    const past = [...reviewing(), modelCallStarted('reviewer', 1), modelCallCompleted('reviewer', 1, [text('Looks good to me.')])];
    given(past).then({
      status: 'reviewing',
      loop: 'answered',
      next: { kind: 'callModel', role: 'reviewer', turn: 2, retry: false, toolResultIds: [], content: [text(REVIEWER_REMINDER)] },
    });
    const { state } = given(past).when(modelCallStarted('reviewer', 2, { content: [text(REVIEWER_REMINDER)] })).then({ loop: 'awaitingResponse' });
    expect(state.conversations.reviewer.messages.slice(-2)).toEqual([
      { role: 'assistant', content: [text('Looks good to me.')] },
      { role: 'user', content: [text(REVIEWER_REMINDER)] },
    ]);
  });
});

describe('agent loop: crash recovery and retries', () => {
  it('a model call started but not completed is called again with retry: true', () => {
    const { state } = given([...planning(), modelCallStarted('architect', 1, { content: [text('task')] })]).then({
      loop: 'awaitingResponse',
      next: { kind: 'callModel', role: 'architect', turn: 1, retry: true, toolResultIds: [], content: [] },
    });
    expect(state.conversations.architect.openCallId).toBe('call_architect_1');
  });

  it('a failed attempt awaiting its retry is the same call, with its attempts counted', () => {
    const { state } = given([...planning(), modelCallStarted('architect', 1), modelCallFailed('architect', 1, { attempt: 2, retryInMs: 10 })]).then({
      next: { kind: 'callModel', turn: 1, retry: true },
    });
    expect(state.failedAttempts).toBe(2);
    // A start recorded twice for the same call does not add the message twice.
    const again = given([...planning(), modelCallStarted('architect', 1), modelCallStarted('architect', 1)]).then({ loop: 'awaitingResponse' });
    expect(again.state.conversations.architect.messages).toHaveLength(1);
  });
});

describe('agent loop: limits', () => {
  it('reaching maxTurns ends the run MAX_TURNS instead of another call', () => {
    const turn = (n: number) => [
      modelCallStarted('architect', n),
      modelCallCompleted('architect', n, [toolUse(`tu_${n}`, 'list_files')]),
      toolCallCompleted('architect', n, `tu_${n}`, 'list_files', '(empty)'),
    ];
    given([...planning({}, 2), ...turn(1)]).then({ loop: 'ready', next: { kind: 'callModel', turn: 2 } });
    given([...planning({}, 2), ...turn(1)])
      .when(...turn(2))
      .then({ loop: 'maxTurnsReached', status: 'planning', next: { kind: 'end', reason: 'MAX_TURNS', message: 'the architect reached its limit of 2 turns' } });
  });

  it("an architect's or executor's answer on its last turn is still its submission, not MAX_TURNS", () => {
    given([...planning({}, 1), modelCallStarted('architect', 1), modelCallCompleted('architect', 1, [text('1. write hello.txt')])]).then({
      next: { kind: 'submitAnswer', role: 'architect', text: '1. write hello.txt' },
    });
    given([...executing(2), modelCallStarted('executor', 1), modelCallCompleted('executor', 1, [toolUse('tu_1', 'list_files')])])
      .when(toolCallCompleted('executor', 1, 'tu_1', 'list_files', 'a'), modelCallStarted('executor', 2, { toolResultIds: ['tu_1'] }), modelCallCompleted('executor', 2, [text('Done.')]))
      .then({ next: { kind: 'submitAnswer', role: 'executor', text: 'Done.' } });
  });

  it('a reviewer answering without a verdict on its last turn ends MAX_TURNS', () => {
    given([...reviewing(), phaseStarted('reviewing', { maxTurns: 1 }), modelCallStarted('reviewer', 1), modelCallCompleted('reviewer', 1, [text('fine')])]).then({
      loop: 'maxTurnsReached',
      next: { kind: 'end', reason: 'MAX_TURNS' },
    });
  });

  it('the budget is checked before the call: reaching the total ends BUDGET_EXHAUSTED, never callModel', () => {
    const past = [
      ...planning({ totalTokens: 100 }),
      modelCallStarted('architect', 1),
      modelCallCompleted('architect', 1, [toolUse('tu_1', 'list_files')], { usage: { inputTokens: 60, outputTokens: 40 } }),
    ];
    // Tools of the response still run; the check is before the next model call.
    given(past).then({ next: { kind: 'runTool' } });
    given(past)
      .when(toolCallCompleted('architect', 1, 'tu_1', 'list_files', 'a'))
      .then({ loop: 'ready', next: { kind: 'end', reason: 'BUDGET_EXHAUSTED', budget: { scope: 'total', used: 100, limit: 100 } } });

    // One token under the budget: the next call goes ahead.
    given([
      ...planning({ totalTokens: 101 }),
      ...past.slice(2),
      toolCallCompleted('architect', 1, 'tu_1', 'list_files', 'a'),
    ]).then({ next: { kind: 'callModel', turn: 2 } });
  });

  it('a role reaching its own budget ends BUDGET_EXHAUSTED for that role; other roles do not count', () => {
    const opts = { perRole: { executor: 50 } };
    const past = [
      runLaunched(opts),
      phaseStarted('planning'),
      modelCallStarted('architect', 1),
      // The architect's 500 tokens do not count against the executor's budget.
      modelCallCompleted('architect', 1, [text('plan')], { usage: { inputTokens: 400, outputTokens: 100 } }),
      { type: 'PlanSubmitted' as const, data: { toolUseId: '', plan: 'plan', steps: [], at: '2025-01-01T00:00:00.000Z' } },
      phaseStarted('executing'),
    ];
    given(past).then({ next: { kind: 'callModel', role: 'executor', turn: 1 } });
    given(past)
      .when(
        modelCallStarted('executor', 1),
        modelCallCompleted('executor', 1, [toolUse('tu_1', 'list_files')], { usage: { inputTokens: 30, outputTokens: 20 } }),
        toolCallCompleted('executor', 1, 'tu_1', 'list_files', 'a'),
      )
      .then({ next: { kind: 'end', reason: 'BUDGET_EXHAUSTED', budget: { scope: 'executor', used: 50, limit: 50 } } });
  });

  it('an exhausted budget also stops the reminder call of a reviewer that answered in prose', () => {
    given([
      ...reviewing({ totalTokens: 50 }),
      modelCallStarted('reviewer', 1),
      modelCallCompleted('reviewer', 1, [text('fine')], { usage: { inputTokens: 10, outputTokens: 10 } }),
    ]).then({ next: { kind: 'end', reason: 'BUDGET_EXHAUSTED', budget: { scope: 'total' } } });
  });

  describe('timeout: past launchedAt + timeoutMs the run ends TIMEOUT, whatever the state', () => {
    const timeoutMs = 60_000;
    const launchedAtMs = Date.parse('2025-01-01T00:00:00.000Z');
    const opts = { timeoutMs };
    const states: Array<[string, ReturnType<typeof planning>]> = [
      ['queued', [runLaunched(opts)]],
      ['planning, ready to call', planning(opts)],
      ['planning, a call in flight', [...planning(opts), modelCallStarted('architect', 1)]],
      [
        'executing, a tool running',
        [
          runLaunched(opts),
          phaseStarted('planning'),
          modelCallStarted('architect', 1),
          modelCallCompleted('architect', 1, [toolUse('tu_x', 'run_command', { command: 'sleep 1' })]),
          toolCallRequested('architect', 1, 'tu_x', 'run_command'),
        ],
      ],
      ['reviewer answered in prose', [...reviewing(opts), modelCallStarted('reviewer', 1), modelCallCompleted('reviewer', 1, [text('ok')])]],
    ];

    it.each(states)('%s', (_name, events) => {
      given(events)
        .at(launchedAtMs + timeoutMs)
        .then({ next: { kind: 'end', reason: 'TIMEOUT', message: `the run exceeded its timeout of ${timeoutMs} ms` } });
      given(events)
        .at(launchedAtMs + timeoutMs - 1)
        .then(({ next }) => expect(next).not.toMatchObject({ reason: 'TIMEOUT' }));
    });

    it('an ended run stays ended', () => {
      given([...planning(opts), runEnded('CANCELLED')])
        .at(launchedAtMs + timeoutMs * 10)
        .then({ status: 'cancelled', next: { kind: 'none' } });
    });
  });
});
