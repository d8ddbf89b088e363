import {
  ApprovalNotFoundError,
  ApprovalNotPendingError,
  ApprovalTimeoutNotDueError,
  SelfApprovalError,
} from '../../../src/team/domain/approval-decider';
import { approvalIdOf, parseApprovalId } from '../../../src/team/domain/approval-id';
import { hashOf } from '../../../src/shared/canonical-json';
import { given as givenRun, RUN_ID, runEnded } from '../machines/given-when-then';
import { APPROVAL_ID, approve, awaitingApproval, fireTimeout, given, reject, REQUESTED_AT } from './approval-fixtures';

// The approval decider, given / when / then: ToolApprovalRequested puts the run in
// awaiting_approval; a decision (human, or the system when the timeout is due) lets it go on.

describe('tool approvals', () => {
  it('approval ids name the run and the tool use', () => {
    expect(APPROVAL_ID).toBe('apr_run_gwt.tu_cmd');
    expect(parseApprovalId(APPROVAL_ID)).toEqual({ runId: 'run_gwt', toolUseId: 'tu_cmd' });
    expect(parseApprovalId('apr_../etc')).toBeUndefined();
    expect(parseApprovalId('rev_run_gwt_1')).toBeUndefined();
  });

  it('given a requested approval, then the run is awaiting_approval and the driver waits', () => {
    givenRun(awaitingApproval()).then({ status: 'awaiting_approval', loop: 'awaitingApproval', next: { kind: 'waitForApproval', approvalIds: ['tu_cmd'] } });
  });

  it('given a requested approval, even past the run timeout, then the driver still waits for the human', () => {
    givenRun(awaitingApproval()).at(Date.parse(REQUESTED_AT) + 31 * 60_000).then({ next: { kind: 'waitForApproval' } });
  });

  it('when a reviewer approves, then ToolApprovalDecided(approved) and the batch can run', () => {
    const { events } = given(awaitingApproval())
      .when(approve())
      .then(({ events }) =>
        expect(events).toEqual([
          {
            type: 'ToolApprovalDecided',
            data: {
              approvalId: APPROVAL_ID,
              role: 'executor',
              turn: 1,
              toolUseId: 'tu_cmd',
              name: 'run_command',
              outcome: 'approved',
              reason: 'looks safe',
              decider: 'user:bob',
              deciderKind: 'human',
              inputHash: `sha256:${hashOf({ command: 'make' })}`,
              risk: 'high',
              at: REQUESTED_AT,
            },
          },
        ]),
      );
    givenRun(awaitingApproval())
      .when(...events)
      .then({ status: 'executing', loop: 'runningTools', next: { kind: 'runTool', call: { id: 'tu_cmd' } } });
  });

  it('when a reviewer rejects, then ToolApprovalDecided(rejected) with the reason', () => {
    given(awaitingApproval())
      .when(reject())
      .then([{ type: 'ToolApprovalDecided', data: { outcome: 'rejected', reason: 'too risky', decider: 'user:bob' } }]);
  });

  it('when the launcher decides, then it is refused (unless the policy allows it); agents never may', () => {
    given(awaitingApproval()).when(approve({ by: 'user:ann' })).thenThrows(SelfApprovalError);
    given(awaitingApproval({ policy: { allowLauncherToApprove: true } }))
      .when(approve({ by: 'user:ann' }))
      .then([{ type: 'ToolApprovalDecided', data: { outcome: 'approved' } }]);
    given(awaitingApproval({ policy: { allowLauncherToApprove: true } }))
      .when(approve({ by: `agent:executor:${RUN_ID}`, kind: 'agent' }))
      .thenThrows(SelfApprovalError);
  });

  it('when the id is unknown, then not found; when already decided or the run ended, then not pending', () => {
    given(awaitingApproval()).when(approve({ approvalId: approvalIdOf(RUN_ID, 'tu_other') })).thenThrows(ApprovalNotFoundError);
    given(awaitingApproval()).when(approve({ approvalId: approvalIdOf('run_other', 'tu_cmd') })).thenThrows(ApprovalNotFoundError);
    const { events } = given(awaitingApproval()).when(approve()).then([{ type: 'ToolApprovalDecided' }]);
    given([...awaitingApproval(), ...events]).when(reject()).thenThrows(ApprovalNotPendingError);
    given([...awaitingApproval(), runEnded('CANCELLED')]).when(approve()).thenThrows(ApprovalNotPendingError);
  });

  it('when the timeout fires before it is due, then refused; once due, the policy decides as the system', () => {
    const due = '2025-01-01T00:10:00.000Z';
    const denying = awaitingApproval({ policy: { timeout: { policy: 'auto_deny', afterMs: 1000 } }, timeout: { policy: 'auto_deny', dueAt: due } });
    given(denying).when(fireTimeout(Date.parse(due) - 1)).thenThrows(ApprovalTimeoutNotDueError);
    given(denying)
      .when(fireTimeout(Date.parse(due)))
      .then([{ type: 'ToolApprovalDecided', data: { outcome: 'rejected', decider: 'system', deciderKind: 'system', policy: 'auto_deny' } }]);
    given(awaitingApproval({ timeout: { policy: 'auto_approve', dueAt: due } }))
      .when(fireTimeout(Date.parse(due)))
      .then([{ type: 'ToolApprovalDecided', data: { outcome: 'approved', policy: 'auto_approve' } }]);
    given(awaitingApproval()).when(fireTimeout(Date.parse(due))).thenThrows(ApprovalTimeoutNotDueError);
  });
});
