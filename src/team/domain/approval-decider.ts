import { ConflictError, NotFoundError } from '../../shared/errors';
import { SelfDecisionError } from '../../shared/self-decision';
import { sameIdentity } from '../../auth/names';
import { hashOf } from '../../shared/canonical-json';
import type { TeamRunEvent, ToolApprovalDecidedData } from './run-events';
import { runStatus, terminationReason, type ApprovalRecord, type RunState } from './run-state';
import { parseApprovalId } from './approval-id';
import { proofFields, type DecisionProof } from '../../review-gate/domain/review-decider';
import type { DecisionStatement } from '../../attestation/personal-signature';

/**
 * Tool approvals: `decideApproval(command, runState) → events`, pure. Time arrives with the command.
 * A decision is one ToolApprovalDecided appended at the run's expected revision, so of two
 * concurrent decisions exactly one lands (the other folds it and gets "not pending": 409).
 */

export interface Approver {
  /** `user:<name>`, `system`, or an agent identity. */
  id: string;
  kind: 'human' | 'system' | 'agent';
  /** A human's proof of who they are, recorded with the decision. */
  proof?: DecisionProof;
}

/** What a person signs to decide this tool call (attestation/personal-signature.ts). */
export function approvalStatement(state: RunState, approvalId: string, outcome: 'approved' | 'rejected', reason: string): DecisionStatement {
  const r = pendingApproval(state, approvalId).requested;
  return { kind: 'tool_approval', runId: state.runId, approvalId, inputHash: `sha256:${hashOf(r.input)}`, outcome, reason };
}

interface Base {
  approvalId: string;
  /** ISO time of the decision. */
  at: string;
}

export type ApprovalCommand =
  | (Base & { type: 'ApproveToolCall'; approver: Approver; reason: string })
  | (Base & { type: 'RejectToolCall'; approver: Approver; reason: string })
  | (Base & { type: 'FireApprovalTimeout'; nowMs: number });

export class ApprovalNotFoundError extends NotFoundError {
  override readonly name = 'ApprovalNotFoundError';
  constructor(approvalId: string) {
    super(`approval ${approvalId} not found`);
  }
}

/** Not waiting for a decision; the message says what happened (decided by whom, or the run ended). */
export class ApprovalNotPendingError extends ConflictError {
  override readonly name = 'ApprovalNotPendingError';
  constructor(approvalId: string, why = 'it is not waiting for a decision') {
    super(`approval ${approvalId} can no longer be decided: ${why}`);
  }
}

function whyNotPending(state: RunState, record: ApprovalRecord): string {
  const d = record.decided;
  if (d) return `it was already ${d.outcome} by ${d.decider} at ${d.at}`;
  if (String(state.team.value) === 'ended') {
    const reason = terminationReason(state);
    return reason === 'CANCELLED' ? 'the run was cancelled' : `the run ended ${reason ?? ''} (${runStatus(state)})`.replace('  ', ' ');
  }
  return 'it is not waiting for a decision';
}

export class ApprovalTimeoutNotDueError extends ConflictError {
  override readonly name = 'ApprovalTimeoutNotDueError';
  constructor(approvalId: string) {
    super(`approval ${approvalId} has no timeout due`);
  }
}

export type SelfApprovalRule = 'agent' | 'launcher';

/** Refused: the approver may not decide this call. The message names no ids on purpose. */
export class SelfApprovalError extends SelfDecisionError<SelfApprovalRule> {
  override readonly name = 'SelfApprovalError';
  readonly securityEvent = 'self_approval_refused';
  constructor(rule: SelfApprovalRule) {
    super(rule, 'you may not decide this approval');
  }
}

/** The approval, when it exists in this run and waits for a decision; throws otherwise. */
export function pendingApproval(state: RunState, approvalId: string): ApprovalRecord {
  const parsed = parseApprovalId(approvalId);
  if (!parsed || !state.launched || parsed.runId !== state.runId) throw new ApprovalNotFoundError(approvalId);
  const record = state.approvals.get(parsed.toolUseId);
  if (!record || record.requested.approvalId !== approvalId) throw new ApprovalNotFoundError(approvalId);
  const waiting = state.loop && String(state.loop.value) === 'awaitingApproval' && (state.loop.context.approvalIds ?? []).includes(parsed.toolUseId);
  if (record.decided || String(state.team.value) === 'ended' || !waiting) throw new ApprovalNotPendingError(approvalId, whyNotPending(state, record));
  return record;
}

/**
 * Who may not approve: no agent (a run's agents must not approve their own risky calls) and, unless
 * the run's policy allows it, not the person who launched the run — as at the review gate (names
 * compare case-insensitively).
 */
export function refusedApprover(state: RunState, approver: Approver): SelfApprovalRule | undefined {
  if (approver.kind === 'agent' || approver.id.startsWith('agent:')) return 'agent';
  if (approver.kind === 'human' && sameIdentity(approver.id, state.launched!.launchedBy) && !state.launched!.toolApproval?.allowLauncherToApprove) return 'launcher';
  return undefined;
}

export function decideApproval(command: ApprovalCommand, state: RunState): TeamRunEvent[] {
  const record = pendingApproval(state, command.approvalId);
  const r = record.requested;
  // The input's hash and the risk go into the decision log's record of this decision.
  const base = { approvalId: r.approvalId, role: r.role, turn: r.turn, toolUseId: r.toolUseId, name: r.name, inputHash: `sha256:${hashOf(r.input)}`, risk: r.risk, at: command.at };
  let data: ToolApprovalDecidedData;
  switch (command.type) {
    case 'ApproveToolCall':
    case 'RejectToolCall': {
      const rule = refusedApprover(state, command.approver);
      if (rule) throw new SelfApprovalError(rule);
      data = {
        ...base,
        outcome: command.type === 'ApproveToolCall' ? 'approved' : 'rejected',
        reason: command.reason,
        decider: command.approver.id,
        deciderKind: command.approver.kind === 'system' ? 'system' : 'human',
        ...proofFields(command.approver),
      };
      break;
    }
    case 'FireApprovalTimeout': {
      const timeout = r.timeout;
      if (!timeout || Date.parse(timeout.dueAt) > command.nowMs) throw new ApprovalTimeoutNotDueError(command.approvalId);
      data = {
        ...base,
        outcome: timeout.policy === 'auto_approve' ? 'approved' : 'rejected',
        reason: `no human decided by ${timeout.dueAt}; timeout policy ${timeout.policy}`,
        decider: 'system',
        deciderKind: 'system',
        policy: timeout.policy,
      };
      break;
    }
  }
  return [{ type: 'ToolApprovalDecided', data }];
}
