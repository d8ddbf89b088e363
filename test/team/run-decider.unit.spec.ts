import { decideRun, RunNotActiveError, RunNotFoundError, type RunCommand } from '../../src/team/domain/run-decider';
import type { TeamRunEvent } from '../../src/team/domain/run-events';
import { evolve, initialRunState, type RunState } from '../../src/team/domain/run-state';
import { DeciderSpecification } from '../support/decider-specification';
import { awaitingReview } from '../review-gate/gate/review-fixtures';
import { planned, RUN_ID, runEnded } from './machines/given-when-then';

// What people and recovery ask of a run from outside its driver: cancel and resume.

const given = DeciderSpecification.for<RunState, RunCommand, TeamRunEvent>({ decide: decideRun, evolve, initialState: () => initialRunState(RUN_ID) });

const AT = '2025-01-02T00:00:00.000Z';
const cancel = (reason?: string): RunCommand => ({ type: 'CancelRun', runId: RUN_ID, by: 'user:ann', at: AT, ...(reason ? { reason } : {}) });
const resume: RunCommand = { type: 'ResumeRun', runId: RUN_ID, by: 'user:ann', at: AT };
const suspended: TeamRunEvent = { type: 'RunSuspended', data: { reason: 'SHUTDOWN', owner: 'host:1:ab', at: AT } };

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
