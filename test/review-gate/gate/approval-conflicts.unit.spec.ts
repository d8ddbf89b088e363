import { ApprovalNotFoundError, ApprovalNotPendingError } from '../../../src/team/domain/approval-decider';
import { approvalIdOf } from '../../../src/team/domain/approval-id';
import * as gwt from '../../team/machines/given-when-then';
import { APPROVAL_ID, approve, awaitingApproval, given } from '../../team/resilience/approval-fixtures';

// Tool approvals that cannot be decided: unknown ids are not found (404), and a conflict (409) says
// what happened — who decided it and how, or how the run ended.

const AT = '2025-01-01T00:00:09.000Z';

describe('tool approvals that cannot be decided', () => {
  it('given an approval decided by user:bob, when decided again, then 409 names the outcome, the decider and the time', () => {
    const { events } = given(awaitingApproval()).when(approve({ at: AT })).then([{ type: 'ToolApprovalDecided' }]);
    given([...awaitingApproval(), ...events])
      .when(approve({ by: 'user:carol', at: AT }))
      .thenThrows(ApprovalNotPendingError, (err) =>
        expect(err.message).toBe(`approval ${APPROVAL_ID} can no longer be decided: it was already approved by user:bob at 2025-01-01T00:00:09.000Z`),
      );
  });

  it('given the run cancelled while the call waited, then 409 says the run was cancelled', () => {
    given([...awaitingApproval(), gwt.runEnded('CANCELLED')])
      .when(approve({ at: AT }))
      .thenThrows(ApprovalNotPendingError, (err) => expect(err.message).toBe(`approval ${APPROVAL_ID} can no longer be decided: the run was cancelled`));
  });

  it('given another tool use id of the run, or another run, then not found', () => {
    given(awaitingApproval()).when(approve({ approvalId: approvalIdOf(gwt.RUN_ID, 'tu_other') })).thenThrows(ApprovalNotFoundError);
    given(awaitingApproval()).when(approve({ approvalId: approvalIdOf('run_other', 'tu_cmd') })).thenThrows(ApprovalNotFoundError);
  });
});
