import { IdempotencyKeyConflictError, runDecider, RunNotActiveError, RunNotFoundError, type RunCommand } from '../../src/team/domain/run-decider';
import type { RunLaunchedData, TeamRunEvent } from '../../src/team/domain/run-events';
import type { RunState } from '../../src/team/domain/run-state';
import { DeciderSpecification } from '../support/decider-specification';
import { awaitingReview, reviewIdOf } from '../review-gate/gate/review-fixtures';
import { approve, awaitingApproval, APPROVAL_ID } from './resilience/approval-fixtures';
import { modelCallStarted, phaseStarted, planned, RUN_ID, runEnded, runLaunched, text, toolUse } from './machines/given-when-then';
import { retryInMsOf } from '../../src/team/domain/run-steps';
import type { ToolUseBlock } from '../../src/team/models/model.port';

// The run's one decider: its launch, what people and recovery ask of it (cancel, resume), the
// human's decisions at its gates, and the driver's records. The gates' own rules have their
// specs (review-decider, approval-decider, run-steps); here: that each goes through runDecider.

const given = DeciderSpecification.for<RunState, RunCommand, TeamRunEvent>(runDecider);

const AT = '2025-01-02T00:00:00.000Z';
const cancel = (reason?: string): RunCommand => ({ type: 'CancelRun', runId: RUN_ID, by: 'user:ann', at: AT, ...(reason ? { reason } : {}) });
const resume: RunCommand = { type: 'ResumeRun', runId: RUN_ID, by: 'user:ann', at: AT };
const suspended: TeamRunEvent = { type: 'RunSuspended', data: { reason: 'SHUTDOWN', owner: 'host:1:ab', at: AT } };

const launchedData = (change: Partial<RunLaunchedData> = {}): RunLaunchedData => ({ ...(runLaunched().data as RunLaunchedData), idempotencyKey: 'k1', ...change });
const launch = (change: Partial<RunLaunchedData> = {}): RunCommand => ({ type: 'LaunchRun', launched: launchedData(change) });

describe('launch', () => {
  it('given no run, when launched, then RunLaunched records the launch as built', () => {
    given([]).when(launch()).then([{ type: 'RunLaunched', data: { runId: RUN_ID, idempotencyKey: 'k1', launchedBy: 'user:ann' } }]);
  });

  it('given a run launched under a key, when the same request is launched again later, then nothing is recorded: it is the same run', () => {
    given([{ type: 'RunLaunched', data: launchedData() }])
      .when(launch({ launchedAt: '2025-01-01T00:05:00.000Z' }))
      .thenNothing();
  });

  it('given a run launched under a key, when another request comes under the same key, then it is a conflict and nothing is recorded', () => {
    given([{ type: 'RunLaunched', data: launchedData() }])
      .when(launch({ goal: 'Write goodbye.txt' }))
      .thenThrows(IdempotencyKeyConflictError, (e) => expect(e.kind).toBe('conflict'));
  });

  it('given a run that has moved on, when its launch is retried, then nothing is recorded', () => {
    given(planned().map((e) => (e.type === 'RunLaunched' ? { ...e, data: launchedData() } : e)))
      .when(launch())
      .thenNothing();
  });
});

describe('the human decisions and the driver records', () => {
  it('given a run at its review, when a human approves, then the review is decided', () => {
    given(awaitingReview())
      .when({ type: 'ApproveReview', reviewId: reviewIdOf(1), decisionId: 'd1', at: AT, decider: { id: 'user:rita', kind: 'human' }, reason: 'good' })
      .then([{ type: 'ReviewDecided', data: { reviewId: reviewIdOf(1), outcome: 'approved' } }, { type: 'RunEnded', data: { status: 'completed' } }]);
  });

  it('given a tool call waiting for approval, when a human approves, then the approval is decided', () => {
    given(awaitingApproval()).when(approve()).then([{ type: 'ToolApprovalDecided', data: { approvalId: APPROVAL_ID, outcome: 'approved' } }]);
  });

  it('given a run, when a driver claims it, then DriverClaimed names the driver', () => {
    given(planned()).when({ type: 'ClaimDriver', runId: RUN_ID, owner: 'host:1:ab', at: AT }).then([{ type: 'DriverClaimed', data: { owner: 'host:1:ab', at: AT } }]);
  });

  it('given a run being driven, when its driver shuts down, then RunSuspended records the shutdown', () => {
    given(planned()).when({ type: 'SuspendRun', runId: RUN_ID, owner: 'host:1:ab', at: AT }).then([{ type: 'RunSuspended', data: { reason: 'SHUTDOWN', owner: 'host:1:ab' } }]);
  });

  it('given a launched run, when the driver takes its first step, then the planning phase starts', () => {
    given([runLaunched()])
      .when({ type: 'TakeStep', step: { kind: 'startPhase', phase: 'planning', role: 'architect' }, inputs: { runId: RUN_ID, at: AT, nowMs: Date.parse(AT), newId: () => 'id1' } })
      .then([{ type: 'PhaseStarted', data: { phase: 'planning', role: 'architect', agent: `agent:architect:${RUN_ID}` } }]);
  });
});

describe('what the driver observed', () => {
  const executing = () => [...planned(), phaseStarted('executing'), modelCallStarted('executor', 1, { callId: 'call_1' })];
  const callStep = { kind: 'callModel' as const, role: 'executor' as const, turn: 1, retry: false, toolResultIds: [], content: [text('go')] };
  const usage = { inputTokens: 10, outputTokens: 5 };
  const call = (id: string) => toolUse(id, 'read_file', { path: 'a.txt' }) as ToolUseBlock;

  it('given a call in flight, when the model answers, then ModelCallCompleted records the answer and its cost', () => {
    given(executing())
      .when({ type: 'CompleteModelCall', step: callStep, callId: 'call_1', response: { model: 'scripted', content: [text('done')], stopReason: 'end_turn', usage }, durationMs: 12 })
      .then([{ type: 'ModelCallCompleted', data: { role: 'executor', turn: 1, callId: 'call_1', content: [text('done')], durationMs: 12, costUsd: expect.any(Number) } }]);
  });

  it('given a call in flight, when it fails transiently with attempts left, then ModelCallFailed records the wait before the retry', () => {
    const { events } = given(executing())
      .when({
        type: 'FailModelCall',
        step: callStep,
        error: { kind: 'overloaded', message: 'Overloaded', status: 529, transient: true },
        inputs: { attempt: 1, callId: 'call_1', retry: { delaysMs: [100, 200], maxDelayMs: 1_000 }, at: AT, random: () => 0 },
      })
      .then([{ type: 'ModelCallFailed', data: { attempt: 1, kind: 'overloaded', retryInMs: 100 } }]);
    expect(retryInMsOf(events)).toBe(100);
  });

  it('given a call in flight, when it fails for good, then the run ends and no retry is waited for', () => {
    const { events } = given(executing())
      .when({
        type: 'FailModelCall',
        step: callStep,
        error: { kind: 'invalid_request', message: 'bad', status: 400, transient: false },
        inputs: { attempt: 1, callId: 'call_1', retry: { delaysMs: [100], maxDelayMs: 1_000 }, at: AT, random: () => 0 },
      })
      .then([{ type: 'ModelCallFailed' }, { type: 'RunEnded', data: { status: 'failed', reason: 'ERROR' } }]);
    expect(retryInMsOf(events)).toBeUndefined();
  });

  it('given tools not safe to repeat, when they are about to run, then each is recorded as requested', () => {
    given(executing())
      .when({ type: 'StartToolCalls', role: 'executor', turn: 1, calls: [call('tu_1'), call('tu_2')], at: AT })
      .then([{ type: 'ToolCallRequested', data: { toolUseId: 'tu_1' } }, { type: 'ToolCallRequested', data: { toolUseId: 'tu_2' } }]);
  });

  it('given a turn whose calls ended, when it is committed, then the calls are recorded in the model\'s order: a request still unrecorded before its result, a change to the workspace with it', () => {
    const files = [{ path: 'a.txt', sha256: 'sha256:a', size: 1 }];
    given(executing())
      .when({
        type: 'CommitToolCalls',
        role: 'executor',
        turn: 1,
        calls: [
          { call: call('tu_1'), record: false, outcome: { output: 'rejected by user: no', isError: true } },
          { call: call('tu_2'), record: true, outcome: { output: 'A', isError: false }, durationMs: 3, files },
        ],
        at: AT,
      })
      .then([
        { type: 'ToolCallCompleted', data: { toolUseId: 'tu_1', isError: true, durationMs: 0 } },
        { type: 'ToolCallRequested', data: { toolUseId: 'tu_2' } },
        { type: 'ToolCallCompleted', data: { toolUseId: 'tu_2', output: 'A', durationMs: 3, files } },
      ]);
  });

  it('given a submit call, when its submission is invalid, then only its error result is recorded', () => {
    given(executing())
      .when({ type: 'SubmitToolCall', role: 'executor', call: toolUse('tu_s', 'submit_work', {}) as ToolUseBlock, checked: { ok: false, error: 'summary is required' }, at: AT })
      .then([{ type: 'ToolCallCompleted', data: { toolUseId: 'tu_s', isError: true, output: 'invalid submission: summary is required' } }]);
  });
});

describe('what a sub-agent\'s work came to', () => {
  const PATH = 'executor/1';
  const spawnedAgent: TeamRunEvent = {
    type: 'SubAgentSpawned',
    data: {
      path: PATH,
      agent: `agent:coder:${RUN_ID}/${PATH}`,
      parent: `agent:executor:${RUN_ID}`,
      depth: 1,
      toolUseId: 'tu_spawn',
      role: 'coder',
      task: 'write it',
      tools: ['read_file', 'write_file'],
      limits: { maxTurns: 2, maxTokens: 1_000, timeoutMs: 60_000 },
      priority: 5,
      at: AT,
    },
  };
  const withSubAgent = () => [...planned(), phaseStarted('executing'), spawnedAgent];
  const running = () => [...withSubAgent(), { type: 'SubAgentStarted', data: { path: PATH, at: AT } } as TeamRunEvent];

  it('given a spawned sub-agent, when it gets its slot, then it starts; when it must wait, then it is queued at its priority', () => {
    given(withSubAgent()).when({ type: 'StartSubAgent', path: PATH, at: AT }).then([{ type: 'SubAgentStarted', data: { path: PATH } }]);
    given(withSubAgent()).when({ type: 'StartSubAgent', path: PATH, queue: { priority: 5 }, at: AT }).then([{ type: 'SubAgentQueued', data: { path: PATH, priority: 5 } }]);
  });

  it('given a running sub-agent, when its model answers, then the turn is recorded with its cost', () => {
    given(running())
      .when({
        type: 'RecordSubAgentTurn',
        path: PATH,
        turn: { turn: 1, content: [text('write it')], callId: 'call_s1' },
        response: { model: 'scripted', content: [text('done')], stopReason: 'end_turn', usage: { inputTokens: 10, outputTokens: 5 } },
        durationMs: 7,
        origin: {},
        at: AT,
      })
      .then([{ type: 'SubAgentModelCalled', data: { path: PATH, turn: 1, callId: 'call_s1', response: [text('done')], costUsd: expect.any(Number), durationMs: 7 } }]);
  });

  it('given a running sub-agent, when its tool ran, then the result is recorded under its path', () => {
    given(running())
      .when({ type: 'CompleteSubAgentTool', path: PATH, turn: 1, call: toolUse('tu_s', 'read_file', { path: 'a.txt' }) as ToolUseBlock, outcome: { output: 'A', isError: false }, durationMs: 2 })
      .then([{ type: 'SubAgentToolCompleted', data: { path: PATH, toolUseId: 'tu_s', output: 'A', isError: false, durationMs: 2 } }]);
  });

  it('given a running sub-agent, when its model fails for good or its time is up, then it ends failed or timed out', () => {
    given(running()).when({ type: 'FailSubAgent', path: PATH, message: 'the model failed: bad', at: AT }).then([{ type: 'SubAgentFailed', data: { reason: 'ERROR', message: 'the model failed: bad' } }]);
    given(running()).when({ type: 'TimeOutSubAgent', path: PATH, at: AT }).then([{ type: 'SubAgentTimedOut', data: { message: 'the sub-agent exceeded its timeout' } }]);
  });
});

describe('cancel', () => {
  it('given a run being worked on, when cancelled, then it ends CANCELLED naming who and why', () => {
    given(planned()).when(cancel('wrong goal')).then([
      { type: 'RunEnded', data: { status: 'cancelled', reason: 'CANCELLED', message: 'cancelled by user:ann: wrong goal', at: AT } },
    ]);
  });

  it('given a run waiting at its review, when cancelled, then it ends CANCELLED', () => {
    given(awaitingReview()).when(cancel()).then([{ type: 'RunEnded', data: { status: 'cancelled', message: 'cancelled by user:ann' } }]);
  });

  it('given a run that has ended, when cancelled, then it is a conflict naming its status', () => {
    given([...planned(), runEnded('TIMEOUT')])
      .when(cancel())
      .thenThrows(RunNotActiveError, (e) => expect(e.message).toBe(`run ${RUN_ID} has already ended (failed)`));
  });

  it('given no run, when cancelled, then it is not found', () => {
    given([]).when(cancel()).thenThrows(RunNotFoundError, (e) => expect(e.kind).toBe('not_found'));
  });
});

describe('resume', () => {
  it('given a run suspended at a shutdown, when resumed, then RunResumed records who resumed it', () => {
    given([...planned(), suspended]).when(resume).then([{ type: 'RunResumed', data: { by: 'user:ann', at: AT } }]);
  });

  it('given a run that crashed (not suspended), when resumed, then nothing is recorded: it is driven on as it stands', () => {
    given(planned()).when(resume).thenNothing();
  });

  it('given a run waiting for a human review, when resumed, then it is a conflict: the decision drives it on', () => {
    given(awaitingReview())
      .when(resume)
      .thenThrows(RunNotActiveError, (e) => expect(e.message).toBe(`run ${RUN_ID} waits for a human review, not for a driver`));
  });

  it('given a run that has ended, when resumed, then it is a conflict that points to fork', () => {
    given([...planned(), runEnded('CANCELLED')])
      .when(resume)
      .thenThrows(RunNotActiveError, (e) => expect(e.message).toMatch(/has ended \(cancelled\); fork it/));
  });

  it('given no run, when resumed, then it is not found', () => {
    given([]).when(resume).thenThrows(RunNotFoundError);
  });
});
