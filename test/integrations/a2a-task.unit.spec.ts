import { TaskState, type Message } from '@a2a-js/sdk';
import { launchRequestOf, MessageNotUnderstoodError, projectTaskState, runTaskState } from '../../src/integrations/a2a/a2a-task';
import { RUN_STATUSES } from '../../src/team/domain/run-events';

// The pure mapping between triad's runs and A2A tasks: states, and a message as a launch.

const part = (content: NonNullable<Message['parts'][number]['content']>) => ({ content, metadata: undefined, filename: '', mediaType: '' });
const msg = (parts: Message['parts'], extra: Partial<Message> = {}) => ({ messageId: 'm-1', taskId: '', parts, ...extra });

describe('task states', () => {
  it.each([
    ['queued', undefined, TaskState.TASK_STATE_SUBMITTED],
    ['planning', undefined, TaskState.TASK_STATE_WORKING],
    ['executing', undefined, TaskState.TASK_STATE_WORKING],
    ['reviewing', undefined, TaskState.TASK_STATE_WORKING],
    ['suspended', undefined, TaskState.TASK_STATE_WORKING],
    ['awaiting_review', undefined, TaskState.TASK_STATE_INPUT_REQUIRED],
    ['awaiting_approval', undefined, TaskState.TASK_STATE_INPUT_REQUIRED],
    ['completed', 'COMPLETED', TaskState.TASK_STATE_COMPLETED],
    ['cancelled', 'CANCELLED', TaskState.TASK_STATE_CANCELED],
    ['failed', 'REJECTED', TaskState.TASK_STATE_REJECTED],
    ['failed', 'TIMEOUT', TaskState.TASK_STATE_FAILED],
    ['blocked', 'BLOCKED', TaskState.TASK_STATE_FAILED],
  ] as const)('a run %s (%s) is %s', (status, terminationReason, state) => {
    expect(runTaskState({ status, terminationReason })).toBe(state);
  });

  it('every run status has a state', () => {
    for (const status of RUN_STATUSES) expect(runTaskState({ status })).toBeGreaterThan(0);
  });

  it('a project waiting for its review is input-required; one rejected is rejected', () => {
    expect(projectTaskState({ status: 'awaiting_review' })).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(projectTaskState({ status: 'failed', terminationReason: 'REJECTED' })).toBe(TaskState.TASK_STATE_REJECTED);
    expect(projectTaskState({ status: 'running' })).toBe(TaskState.TASK_STATE_WORKING);
  });
});

describe('a message as a launch', () => {
  it('the goal is the text parts, the options the data part, the message id the idempotency key', () => {
    const req = launchRequestOf(msg([part({ $case: 'text', value: 'Write' }), part({ $case: 'text', value: 'a greeting' }), part({ $case: 'data', value: { acceptanceCriteria: ['x'] } })]));
    expect(req).toEqual({ skill: 'team-run', body: { goal: 'Write\na greeting', acceptanceCriteria: ['x'], idempotencyKey: 'a2a:m-1' } });
  });

  it('skill "project" launches a project; its own idempotency key wins', () => {
    const req = launchRequestOf(msg([part({ $case: 'text', value: 'Build' }), part({ $case: 'data', value: { skill: 'project', strategy: 'dag', idempotencyKey: 'k' } })]));
    expect(req).toEqual({ skill: 'project', body: { goal: 'Build', strategy: 'dag', idempotencyKey: 'k' } });
  });

  it.each([
    ['no message', undefined, /required/],
    ['a follow-up to a task', msg([part({ $case: 'text', value: 'x' })], { taskId: 'run_1' }), /no further messages/],
    ['no text', msg([part({ $case: 'data', value: {} })]), /text part/],
    ['a blank text', msg([part({ $case: 'text', value: '  ' })]), /text part/],
    ['a file part', msg([part({ $case: 'text', value: 'x' }), part({ $case: 'url', value: 'http://x' })]), /file parts/],
    ['a data part that is no object', msg([part({ $case: 'text', value: 'x' }), part({ $case: 'data', value: [1] })]), /JSON object/],
    ['an unknown skill', msg([part({ $case: 'text', value: 'x' }), part({ $case: 'data', value: { skill: 'chat' } })]), /skill/],
    ['a goal in the data', msg([part({ $case: 'text', value: 'x' }), part({ $case: 'data', value: { goal: 'y' } })]), /goal/],
  ])('refuses %s', (_name, message, words) => {
    expect(() => launchRequestOf(message as never)).toThrow(MessageNotUnderstoodError);
    expect(() => launchRequestOf(message as never)).toThrow(words);
  });
});
