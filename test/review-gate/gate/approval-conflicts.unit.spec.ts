import { ApprovalNotFoundError, ApprovalNotPendingError, decideApproval, type ApprovalCommand } from '../../../src/team/approvals/approval-decider';
import { approvalIdOf } from '../../../src/team/approvals/approval-id';
import type { TeamRunEvent } from '../../../src/team/domain/run-events';
import * as gwt from '../../team/machines/given-when-then';

// Tool approvals that cannot be decided: unknown ids are not found (404), and a conflict (409) says
// what happened — who decided it and how, or how the run ended.

const ID = approvalIdOf(gwt.RUN_ID, 'tu_cmd');
const waiting: TeamRunEvent[] = [
  gwt.runLaunched(),
  gwt.phaseStarted('planning'),
  ...gwt.submitTurn('architect', 1, gwt.planSubmitted()),
  gwt.phaseStarted('executing'),
  gwt.modelCallStarted('executor', 1),
  gwt.modelCallCompleted('executor', 1, [gwt.toolUse('tu_cmd', 'run_command', { command: 'make' })]),
  {
    type: 'ToolApprovalRequested',
    data: { approvalId: ID, role: 'executor', turn: 1, toolUseId: 'tu_cmd', name: 'run_command', input: { command: 'make' }, risk: 'high', threshold: 'high', at: gwt.LAUNCHED_AT },
  },
];
const approve = (approvalId = ID, by = 'user:bob'): ApprovalCommand => ({ type: 'ApproveToolCall', approvalId, approver: { id: by, kind: 'human' }, reason: 'ok', at: '2025-01-01T00:00:09.000Z' });

function refusal(events: TeamRunEvent[], command: ApprovalCommand): Error {
  try {
    decideApproval(command, gwt.fold(events));
  } catch (err) {
    return err as Error;
  }
  throw new Error('not refused');
}

describe('tool approvals that cannot be decided', () => {
  it('given an approval decided by user:bob, when decided again, then 409 names the outcome, the decider and the time', () => {
    const decided = decideApproval(approve(), gwt.fold(waiting));
    const err = refusal([...waiting, ...decided], approve(ID, 'user:carol'));
    expect(err).toBeInstanceOf(ApprovalNotPendingError);
    expect(err.message).toBe(`approval ${ID} can no longer be decided: it was already approved by user:bob at 2025-01-01T00:00:09.000Z`);
  });

  it('given the run cancelled while the call waited, then 409 says the run was cancelled', () => {
    const err = refusal([...waiting, gwt.runEnded('CANCELLED')], approve());
    expect(err).toBeInstanceOf(ApprovalNotPendingError);
    expect(err.message).toBe(`approval ${ID} can no longer be decided: the run was cancelled`);
  });

  it('given another tool use id of the run, or another run, then not found', () => {
    expect(refusal(waiting, approve(approvalIdOf(gwt.RUN_ID, 'tu_other')))).toBeInstanceOf(ApprovalNotFoundError);
    expect(refusal(waiting, approve(approvalIdOf('run_other', 'tu_cmd')))).toBeInstanceOf(ApprovalNotFoundError);
  });
});
