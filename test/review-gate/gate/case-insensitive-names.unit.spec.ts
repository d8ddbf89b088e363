import { refusedDecider } from '../../../src/review-gate/domain/review-decider';
import { SelfReviewError, selfReviewRule } from '../../../src/review-gate/domain/self-review';
import { refusedApprover, SelfApprovalError } from '../../../src/team/domain/approval-decider';
import type { TeamRunEvent } from '../../../src/team/domain/run-events';
import * as gwt from '../../team/machines/given-when-then';
import { approve as approveTool, awaitingApproval, given as givenApproval } from '../../team/resilience/approval-fixtures';
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
    given(awaitingReview()).when(approve(human('ANN'))).thenThrows(SelfReviewError, (err) => expect(err.rule).toBe('launcher'));
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
  const approveAs = (id: string) => approveTool({ by: id, reason: 'ok', at: gwt.LAUNCHED_AT });

  it('given a run launched by user:ann, when user:ANN approves its tool call, then it is refused (decision and preflight)', () => {
    givenApproval(awaitingApproval()).when(approveAs('user:ANN')).thenThrows(SelfApprovalError);
    expect(refusedApprover(gwt.fold(awaitingApproval()), { id: 'user:ANN', kind: 'human' })).toBe('launcher');
  });

  it('given a run recorded as launched by user:Ann, when user:ann approves, then it is refused', () => {
    givenApproval(awaitingApproval({ launchedBy: 'user:Ann' })).when(approveAs('user:ann')).thenThrows(SelfApprovalError);
  });

  it('another user may decide', () => {
    givenApproval(awaitingApproval())
      .when(approveAs('user:bob'))
      .then([{ type: 'ToolApprovalDecided', data: { outcome: 'approved', decider: 'user:bob' } }]);
  });
});
