import { decideApproval, type ApprovalCommand } from '../../../src/team/domain/approval-decider';
import { approvalIdOf } from '../../../src/team/domain/approval-id';
import type { TeamRunEvent, ToolApprovalRequestedData } from '../../../src/team/domain/run-events';
import { evolve, initialRunState, type RunState } from '../../../src/team/domain/run-state';
import { DEFAULT_TOOL_APPROVAL, type ToolApprovalPolicy } from '../../../src/team/domain/resilience/policies';
import { DeciderSpecification, type Decider } from '../../support/decider-specification';
import { modelCallCompleted, modelCallStarted, phaseStarted, planSubmitted, RUN_ID, runLaunched, submitTurn, toolUse } from '../machines/given-when-then';

/**
 * Fixtures for the tool-approval decider: a run whose executor waits for approval of one risky
 * call (`tu_cmd`, run_command make), and `given(events).when(command).then(events)`
 * (test/support/decider-specification.ts) over `decideApproval` and the team run's own evolve.
 */

export const APPROVAL_ID = approvalIdOf(RUN_ID, 'tu_cmd');
export const REQUESTED_AT = '2025-01-01T00:00:05.000Z';

export const approvalDecider: Decider<RunState, ApprovalCommand, TeamRunEvent> = {
  decide: decideApproval,
  evolve,
  initialState: () => initialRunState(RUN_ID),
};

export const given = DeciderSpecification.for(approvalDecider);

export interface WaitingOptions {
  /** The run's tool-approval policy, over the defaults. */
  policy?: Partial<ToolApprovalPolicy>;
  /** The timeout recorded with the request (absent: the `wait` policy). */
  timeout?: ToolApprovalRequestedData['timeout'];
  /** Who launched the run (default `user:ann`), as recorded. */
  launchedBy?: string;
}

export function approvalRequested(timeout?: ToolApprovalRequestedData['timeout']): TeamRunEvent {
  return {
    type: 'ToolApprovalRequested',
    data: {
      approvalId: APPROVAL_ID,
      role: 'executor',
      turn: 1,
      toolUseId: 'tu_cmd',
      name: 'run_command',
      input: { command: 'make' },
      risk: 'high',
      threshold: 'high',
      ...(timeout ? { timeout } : {}),
      at: REQUESTED_AT,
    },
  };
}

/** Launch, plan, and the executor's first turn asking for run_command, waiting for approval. */
export function awaitingApproval(options: WaitingOptions = {}): TeamRunEvent[] {
  const launched = runLaunched();
  const data = launched.data as { toolApproval?: ToolApprovalPolicy; launchedBy: string };
  data.toolApproval = { ...DEFAULT_TOOL_APPROVAL, ...options.policy };
  if (options.launchedBy) data.launchedBy = options.launchedBy;
  return [
    launched,
    phaseStarted('planning'),
    ...submitTurn('architect', 1, planSubmitted()),
    phaseStarted('executing'),
    modelCallStarted('executor', 1),
    modelCallCompleted('executor', 1, [toolUse('tu_cmd', 'run_command', { command: 'make' })]),
    approvalRequested(options.timeout),
  ];
}

export function approve(options: { approvalId?: string; by?: string; kind?: 'human' | 'agent'; reason?: string; at?: string } = {}): ApprovalCommand {
  return {
    type: 'ApproveToolCall',
    approvalId: options.approvalId ?? APPROVAL_ID,
    approver: { id: options.by ?? 'user:bob', kind: options.kind ?? 'human' },
    reason: options.reason ?? 'looks safe',
    at: options.at ?? REQUESTED_AT,
  };
}

export function reject(options: { by?: string; reason?: string; at?: string } = {}): ApprovalCommand {
  return { type: 'RejectToolCall', approvalId: APPROVAL_ID, approver: { id: options.by ?? 'user:bob', kind: 'human' }, reason: options.reason ?? 'too risky', at: options.at ?? REQUESTED_AT };
}

export function fireTimeout(nowMs: number): ApprovalCommand {
  return { type: 'FireApprovalTimeout', approvalId: APPROVAL_ID, at: new Date(nowMs).toISOString(), nowMs };
}
