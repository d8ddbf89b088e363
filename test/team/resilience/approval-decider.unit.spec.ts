import type { TeamRunEvent, ToolApprovalRequestedData } from '../../../src/team/domain/run-events';
import {
  ApprovalNotFoundError,
  ApprovalNotPendingError,
  ApprovalTimeoutNotDueError,
  decideApproval,
  SelfApprovalError,
  type ApprovalCommand,
} from '../../../src/team/approvals/approval-decider';
import { approvalIdOf, parseApprovalId } from '../../../src/team/approvals/approval-id';
import { hashOf } from '../../../src/shared/canonical-json';
import { DEFAULT_TOOL_APPROVAL, type ToolApprovalPolicy } from '../../../src/team/resilience/policies';
import { fold, given, modelCallCompleted, modelCallStarted, phaseStarted, planSubmitted, RUN_ID, runEnded, runLaunched, submitTurn, toolUse } from '../machines/given-when-then';

// The approval decider, given / when / then: ToolApprovalRequested puts the run in
// awaiting_approval; a decision (human, or the system when the timeout is due) lets it go on.

const AT = '2025-01-01T00:00:05.000Z';
const APPROVAL_ID = approvalIdOf(RUN_ID, 'tu_cmd');

function launched(policy: Partial<ToolApprovalPolicy> = {}): TeamRunEvent {
  const e = runLaunched();
  (e.data as { toolApproval?: ToolApprovalPolicy }).toolApproval = { ...DEFAULT_TOOL_APPROVAL, ...policy };
  return e;
}

function requested(timeout?: ToolApprovalRequestedData['timeout']): TeamRunEvent {
  return {
    type: 'ToolApprovalRequested',
    data: { approvalId: APPROVAL_ID, role: 'executor', turn: 1, toolUseId: 'tu_cmd', name: 'run_command', input: { command: 'make' }, risk: 'high', threshold: 'high', ...(timeout ? { timeout } : {}), at: AT },
  };
}

const waiting = (policy: Partial<ToolApprovalPolicy> = {}, timeout?: ToolApprovalRequestedData['timeout']): TeamRunEvent[] => [
  launched(policy),
  phaseStarted('planning'),
  ...submitTurn('architect', 1, planSubmitted()),
  phaseStarted('executing'),
  modelCallStarted('executor', 1),
  modelCallCompleted('executor', 1, [toolUse('tu_cmd', 'run_command', { command: 'make' })]),
  requested(timeout),
];

const approve = (id: string, by = 'user:bob'): ApprovalCommand => ({ type: 'ApproveToolCall', approvalId: id, approver: { id: by, kind: 'human' }, reason: 'looks safe', at: AT });
const reject = (by = 'user:bob'): ApprovalCommand => ({ type: 'RejectToolCall', approvalId: APPROVAL_ID, approver: { id: by, kind: 'human' }, reason: 'too risky', at: AT });

describe('tool approvals', () => {
  it('approval ids name the run and the tool use', () => {
    expect(APPROVAL_ID).toBe('apr_run_gwt.tu_cmd');
    expect(parseApprovalId(APPROVAL_ID)).toEqual({ runId: 'run_gwt', toolUseId: 'tu_cmd' });
    expect(parseApprovalId('apr_../etc')).toBeUndefined();
    expect(parseApprovalId('rev_run_gwt_1')).toBeUndefined();
  });

  it('given a requested approval, then the run is awaiting_approval and the driver waits', () => {
    given(waiting()).then({ status: 'awaiting_approval', loop: 'awaitingApproval', next: { kind: 'waitForApproval', approvalIds: ['tu_cmd'] } });
  });

  it('given a requested approval, even past the run timeout, then the driver still waits for the human', () => {
    given(waiting()).at(Date.parse(AT) + 31 * 60_000).then({ next: { kind: 'waitForApproval' } });
  });

  it('when a reviewer approves, then ToolApprovalDecided(approved) and the batch can run', () => {
    const events = decideApproval(approve(APPROVAL_ID), fold(waiting()));
    expect(events).toEqual([
      {
        type: 'ToolApprovalDecided',
        data: { approvalId: APPROVAL_ID, role: 'executor', turn: 1, toolUseId: 'tu_cmd', name: 'run_command', outcome: 'approved', reason: 'looks safe', decider: 'user:bob', deciderKind: 'human', inputHash: `sha256:${hashOf({ command: 'make' })}`, risk: 'high', at: AT },
      },
    ]);
    given(waiting())
      .when(...events)
      .then({ status: 'executing', loop: 'runningTools', next: { kind: 'runTool', call: { id: 'tu_cmd' } } });
  });

  it('when a reviewer rejects, then ToolApprovalDecided(rejected) with the reason', () => {
    expect(decideApproval(reject(), fold(waiting()))[0].data).toMatchObject({ outcome: 'rejected', reason: 'too risky', decider: 'user:bob' });
  });

  it('when the launcher decides, then it is refused (unless the policy allows it); agents never may', () => {
    expect(() => decideApproval(approve(APPROVAL_ID, 'user:ann'), fold(waiting()))).toThrow(SelfApprovalError);
    expect(decideApproval(approve(APPROVAL_ID, 'user:ann'), fold(waiting({ allowLauncherToApprove: true })))[0].data).toMatchObject({ outcome: 'approved' });
    expect(() =>
      decideApproval({ ...approve(APPROVAL_ID), approver: { id: `agent:executor:${RUN_ID}`, kind: 'agent' } } as ApprovalCommand, fold(waiting({ allowLauncherToApprove: true }))),
    ).toThrow(SelfApprovalError);
  });

  it('when the id is unknown, then not found; when already decided or the run ended, then not pending', () => {
    expect(() => decideApproval(approve(approvalIdOf(RUN_ID, 'tu_other')), fold(waiting()))).toThrow(ApprovalNotFoundError);
    expect(() => decideApproval(approve(approvalIdOf('run_other', 'tu_cmd')), fold(waiting()))).toThrow(ApprovalNotFoundError);
    const decided = [...waiting(), ...decideApproval(approve(APPROVAL_ID), fold(waiting()))];
    expect(() => decideApproval(reject(), fold(decided))).toThrow(ApprovalNotPendingError);
    expect(() => decideApproval(approve(APPROVAL_ID), fold([...waiting(), runEnded('CANCELLED')]))).toThrow(ApprovalNotPendingError);
  });

  it('when the timeout fires before it is due, then refused; once due, the policy decides as the system', () => {
    const due = '2025-01-01T00:10:00.000Z';
    const state = () => fold(waiting({ timeout: { policy: 'auto_deny', afterMs: 1000 } }, { policy: 'auto_deny', dueAt: due }));
    const fire = (nowMs: number): ApprovalCommand => ({ type: 'FireApprovalTimeout', approvalId: APPROVAL_ID, at: new Date(nowMs).toISOString(), nowMs });
    expect(() => decideApproval(fire(Date.parse(due) - 1), state())).toThrow(ApprovalTimeoutNotDueError);
    expect(decideApproval(fire(Date.parse(due)), state())[0].data).toMatchObject({ outcome: 'rejected', decider: 'system', deciderKind: 'system', policy: 'auto_deny' });
    const approving = fold(waiting({}, { policy: 'auto_approve', dueAt: due }));
    expect(decideApproval(fire(Date.parse(due)), approving)[0].data).toMatchObject({ outcome: 'approved', policy: 'auto_approve' });
    expect(() => decideApproval(fire(Date.parse(due)), fold(waiting()))).toThrow(ApprovalTimeoutNotDueError);
  });
});
