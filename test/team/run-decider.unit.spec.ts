import { IdempotencyKeyConflictError, runDecider, RunNotActiveError, RunNotFoundError, type RunCommand } from '../../src/team/domain/run-decider';
import type { RunLaunchedData } from '../../src/team/domain/run-events';
import type { TeamRunEvent } from '../../src/team/domain/run-events';
import type { RunState } from '../../src/team/domain/run-state';
import { DeciderSpecification } from '../support/decider-specification';
import { awaitingReview, reviewIdOf } from '../review-gate/gate/review-fixtures';
import { approve, awaitingApproval, APPROVAL_ID } from './resilience/approval-fixtures';
import { planned, RUN_ID, runEnded, runLaunched } from './machines/given-when-then';

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
