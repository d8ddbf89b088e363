import { REVIEWER_REMINDER } from '../../../src/team/domain/next-action';
import type { RunState } from '../../../src/team/domain/run-state';
import type { ChatMessage } from '../../../src/team/models/model.port';
import {
  given,
  modelCallCompleted,
  modelCallFailed,
  modelCallStarted,
  phaseStarted,
  planSubmitted,
  runLaunched,
  text,
  toolCallCompleted,
  toolCallRequested,
  toolUse,
  verdictSubmitted,
  workSubmitted,
} from './given-when-then';

// The fold rebuilds every role's conversation exactly as it was sent to the model: tool results
// are stored once (ToolCallCompleted) and referenced by id from the next call's start.

const TASK_A = 'Goal: greet. Plan it.';
const TASK_E = 'Goal: greet. Do it.';
const TASK_R = 'Goal: greet. Review it.';

const events = [
  runLaunched(),
  phaseStarted('planning'),
  modelCallStarted('architect', 1, { content: [text(TASK_A)] }),
  modelCallCompleted('architect', 1, [text('Looking around.'), toolUse('tu_a1', 'list_files', {})], { usage: { inputTokens: 100, outputTokens: 20 } }),
  toolCallRequested('architect', 1, 'tu_a1', 'list_files', {}),
  toolCallCompleted('architect', 1, 'tu_a1', 'list_files', '(empty workspace)'),
  modelCallStarted('architect', 2, { toolResultIds: ['tu_a1'] }),
  modelCallCompleted('architect', 2, [toolUse('tu_plan', 'submit_plan', { plan: '1. greet' })], { usage: { inputTokens: 150, outputTokens: 30 } }),
  toolCallCompleted('architect', 2, 'tu_plan', 'submit_plan', 'Submitted.'),
  planSubmitted('tu_plan', '1. greet'),

  phaseStarted('executing'),
  modelCallStarted('executor', 1, { content: [text(TASK_E)] }),
  modelCallCompleted('executor', 1, [
    toolUse('tu_w', 'write_file', { path: 'hello.txt', content: 'Hello\n' }),
    toolUse('tu_r', 'run_command', { command: 'cat nope.txt' }),
  ]),
  toolCallRequested('executor', 1, 'tu_w', 'write_file', { path: 'hello.txt', content: 'Hello\n' }),
  toolCallCompleted('executor', 1, 'tu_w', 'write_file', 'wrote 6 bytes to hello.txt'),
  toolCallRequested('executor', 1, 'tu_r', 'run_command', { command: 'cat nope.txt' }),
  toolCallCompleted('executor', 1, 'tu_r', 'run_command', 'cat: nope.txt: No such file\n[exit code 1]', true),
  // A failed attempt of the next call changes nothing in the conversation.
  modelCallStarted('executor', 2, { toolResultIds: ['tu_w', 'tu_r'] }),
  modelCallFailed('executor', 2, { attempt: 1, retryInMs: 5 }),
  modelCallCompleted('executor', 2, [text('Done.'), toolUse('tu_work', 'submit_work', { summary: 'wrote hello.txt' })]),
  toolCallCompleted('executor', 2, 'tu_work', 'submit_work', 'Submitted.'),
  workSubmitted('tu_work', 1, 'wrote hello.txt'),

  phaseStarted('reviewing'),
  modelCallStarted('reviewer', 1, { content: [text(TASK_R)] }),
  modelCallCompleted('reviewer', 1, [text('Looks fine.')]),
  modelCallStarted('reviewer', 2, { content: [text(REVIEWER_REMINDER)] }),
  modelCallCompleted('reviewer', 2, [toolUse('tu_v', 'submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'ok' })]),
  toolCallCompleted('reviewer', 2, 'tu_v', 'submit_verdict', 'Submitted.'),
  verdictSubmitted('APPROVE', { toolUseId: 'tu_v', summary: 'ok' }),
];

describe('conversations rebuilt from the events', () => {
  let state: RunState;
  beforeAll(() => {
    state = given(events).then({ team: 'approved', status: 'reviewing', next: { kind: 'openReview' } }).state;
  });

  it("the architect's conversation", () => {
    const expected: ChatMessage[] = [
      { role: 'user', content: [text(TASK_A)] },
      { role: 'assistant', content: [text('Looking around.'), toolUse('tu_a1', 'list_files', {})] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_a1', content: '(empty workspace)' }] },
      { role: 'assistant', content: [toolUse('tu_plan', 'submit_plan', { plan: '1. greet' })] },
    ];
    expect(state.conversations.architect.messages).toEqual(expected);
  });

  it("the executor's conversation, with an error result flagged and no trace of the failed attempt", () => {
    const expected: ChatMessage[] = [
      { role: 'user', content: [text(TASK_E)] },
      {
        role: 'assistant',
        content: [toolUse('tu_w', 'write_file', { path: 'hello.txt', content: 'Hello\n' }), toolUse('tu_r', 'run_command', { command: 'cat nope.txt' })],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'tu_w', content: 'wrote 6 bytes to hello.txt' },
          { type: 'tool_result', tool_use_id: 'tu_r', content: 'cat: nope.txt: No such file\n[exit code 1]', is_error: true },
        ],
      },
      { role: 'assistant', content: [text('Done.'), toolUse('tu_work', 'submit_work', { summary: 'wrote hello.txt' })] },
    ];
    expect(state.conversations.executor.messages).toEqual(expected);
    expect(state.conversations.executor.openCallId).toBeUndefined();
  });

  it("the reviewer's conversation, with the reminder", () => {
    const expected: ChatMessage[] = [
      { role: 'user', content: [text(TASK_R)] },
      { role: 'assistant', content: [text('Looks fine.')] },
      { role: 'user', content: [text(REVIEWER_REMINDER)] },
      { role: 'assistant', content: [toolUse('tu_v', 'submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'ok' })] },
    ];
    expect(state.conversations.reviewer.messages).toEqual(expected);
  });

  it('usage and turns per role', () => {
    expect(state.usage.architect).toEqual({ inputTokens: 250, outputTokens: 50, costUsd: 0, turns: 2 });
    expect(state.usage.executor).toMatchObject({ inputTokens: 20, outputTokens: 10, turns: 2 });
    expect(state.usage.reviewer).toMatchObject({ turns: 2 });
  });

  it('folding the same events twice gives the same state, and folding a prefix gives that point of the run', () => {
    const again = given(events).then(() => undefined).state;
    expect(again.conversations).toEqual(state.conversations);
    const mid = given(events.slice(0, 12)).then({ status: 'executing', loop: 'awaitingResponse', next: { kind: 'callModel', role: 'executor', retry: true } }).state;
    expect(mid.conversations.executor.messages).toEqual([{ role: 'user', content: [text(TASK_E)] }]);
    expect(mid.conversations.architect.messages).toEqual(state.conversations.architect.messages);
  });

  it('a start that references a tool result not recorded is refused', () => {
    expect(() => given([runLaunched(), phaseStarted('planning'), modelCallStarted('architect', 1, { toolResultIds: ['tu_ghost'] })]).then(() => undefined)).toThrow(
      /tu_ghost/,
    );
  });
});
