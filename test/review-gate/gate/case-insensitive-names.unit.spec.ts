import { refusedDecider } from '../../../src/review-gate/domain/review-decider';
import { SelfReviewError, selfReviewRule } from '../../../src/review-gate/domain/self-review';
import { decideApproval, refusedApprover, SelfApprovalError, type ApprovalCommand } from '../../../src/team/approvals/approval-decider';
import { approvalIdOf } from '../../../src/team/approvals/approval-id';
import type { TeamRunEvent } from '../../../src/team/domain/run-events';
import * as gwt from '../../team/machines/given-when-then';
import { approve, awaitingReview, fold, given, human, reject, reviewIdOf } from './review-fixtures';

// Names are case-insensitive: `user:ANN` is the launcher `user:ann`, at the review gate and at the
// tool-approval gate, in the handlers' preflight and in the domain decision; also when the run was
// recorded with a mixed-case name before names were normalised.

/** The same run, recorded as launched by `launchedBy`. */
function launchedBy(events: TeamRunEvent[], who: string): TeamRunEvent[] {
  return events.map((e) => (e.type === 'RunLaunched' ? ({ ...e, data: { ...e.data, launchedBy: who } } as TeamRunEvent) : e));
}

describe('review gate: names compare case-insensitively', () => {
  it('given a run launched by user:ann, when user:ANN approves or rejects, then it is refused as self-review', () => {
    given(awaitingReview()).when(approve(human('ANN'))).thenThrows(SelfReviewError, (err) => expect((err as SelfReviewError).rule).toBe('launcher'));
    given(awaitingReview()).when(reject(human('Ann'), { rework: false })).thenThrows(SelfReviewError);
  });

  it('given a run recorded as launched by user:Ann (before normalisation), when user:ann decides, then it is refused', () => {
    given(launchedBy(awaitingReview(), 'user:Ann')).when(approve(human('ann'))).thenThrows(SelfReviewError);
  });

  it('the handler preflight applies the same comparison', () => {
    expect(refusedDecider(fold(awaitingReview()), reviewIdOf(1), human('ANN'))).toBe('launcher');
    expect(refusedDecider(fold(launchedBy(awaitingReview(), 'user:ANN')), reviewIdOf(1), human('ann'))).toBe('launcher');
  });

  it('selfReviewRule: user names fold case; agent identities compare exactly', () => {
    const review = { executor: 'agent:executor:r1', launchedBy: 'user:ann', allowLauncherToReview: false };
    expect(selfReviewRule('USER:ANN', review)).toBe('launcher');
    expect(selfReviewRule('user:anna', review)).toBeUndefined();
    expect(selfReviewRule('agent:executor:r1', review)).toBe('executor');
  });
});

describe('tool approvals: names compare case-insensitively', () => {
  const APPROVAL_ID = approvalIdOf(gwt.RUN_ID, 'tu_cmd');
  const waiting = (launcher = 'user:ann'): TeamRunEvent[] =>
    launchedBy(
      [
        gwt.runLaunched(),
        gwt.phaseStarted('planning'),
        ...gwt.submitTurn('architect', 1, gwt.planSubmitted()),
        gwt.phaseStarted('executing'),
        gwt.modelCallStarted('executor', 1),
        gwt.modelCallCompleted('executor', 1, [gwt.toolUse('tu_cmd', 'run_command', { command: 'make' })]),
        {
          type: 'ToolApprovalRequested',
          data: { approvalId: APPROVAL_ID, role: 'executor', turn: 1, toolUseId: 'tu_cmd', name: 'run_command', input: { command: 'make' }, risk: 'high', threshold: 'high', at: gwt.LAUNCHED_AT },
        },
      ],
      launcher,
    );
  const by = (id: string): ApprovalCommand => ({ type: 'ApproveToolCall', approvalId: APPROVAL_ID, approver: { id, kind: 'human' }, reason: 'ok', at: gwt.LAUNCHED_AT });

  it('given a run launched by user:ann, when user:ANN approves its tool call, then it is refused (decision and preflight)', () => {
    expect(() => decideApproval(by('user:ANN'), gwt.fold(waiting()))).toThrow(SelfApprovalError);
    expect(refusedApprover(gwt.fold(waiting()), { id: 'user:ANN', kind: 'human' })).toBe('launcher');
  });

  it('given a run recorded as launched by user:Ann, when user:ann approves, then it is refused', () => {
    expect(() => decideApproval(by('user:ann'), gwt.fold(waiting('user:Ann')))).toThrow(SelfApprovalError);
  });

  it('another user may decide', () => {
    expect(decideApproval(by('user:bob'), gwt.fold(waiting()))[0].data).toMatchObject({ outcome: 'approved', decider: 'user:bob' });
  });
});
