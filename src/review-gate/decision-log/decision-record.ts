import type { DecisionOutcome, ReviewTimeoutPolicy } from '../../team/domain/run-events';

/**
 * One entry of the tamper-evident decision log: a decision at the review gate, or on a risky tool
 * call (`kind: 'tool_approval'`), numbered and linked to the one before it by hash. Pure types, no
 * framework.
 *
 * The two kinds share one record shape. Fields of the other kind are absent, and an absent field is
 * not part of the hash input, so records written before tool approvals were recorded (no `kind`)
 * keep their hashes.
 */

export type DecisionKind = 'review' | 'tool_approval';
export const DECISION_KINDS: readonly DecisionKind[] = ['review', 'tool_approval'];

/** What a decision event says: every field of a record except its place in the chain. */
export interface DecisionPayload {
  /** Absent for a review decision; `tool_approval` for a decision on a risky tool call. */
  kind?: 'tool_approval';
  /** A review decision's id; for a tool approval, its approval id. */
  decisionId: string;
  runId: string;
  /** Review decisions only. */
  reviewId?: string;
  iteration?: number;
  /** Identity of the agent whose work (review) or tool call (tool approval) was decided. */
  executor?: string;
  /** `user:<name>` or `system`. */
  decider: string;
  deciderKind: 'human' | 'system';
  /** approved, rejected, escalated, waived (a review); approved, rejected (a tool approval). */
  outcome: DecisionOutcome;
  reason: string;
  /** The timeout policy, when the system decided because a review or an approval timed out. */
  policy?: ReviewTimeoutPolicy;
  /** Review decisions only. */
  acceptanceCriteria?: string[];
  artifactHash?: string;
  charterVersion?: string;
  /** Tool approvals only: the approval id (`apr_<runId>.<toolUseId>`), the tool, its input's hash and risk. */
  approvalId?: string;
  toolName?: string;
  /** `sha256:<hex>` of the canonical JSON of the tool call's input. */
  inputHash?: string;
  risk?: string;
  /** The role whose call it was and its turn. */
  role?: string;
  turn?: number;
  /** ISO time of the decision, exactly as recorded in the event. */
  decidedAt: string;
  /** Global position of the decision event the record was made from. */
  position: number;
}

/** Everything the hash covers: the payload, the record's number and the previous record's hash. */
export interface DecisionRecordContent extends DecisionPayload {
  /** 1, 2, 3 … without gaps, in the global order of the decision events. */
  seq: number;
  /** `hash` of the previous record; GENESIS_PREV_HASH for the first. */
  prevHash: string;
}

export interface DecisionRecord extends DecisionRecordContent {
  /** sha256 (hex) of the canonical JSON of the content (every field but `hash`). */
  hash: string;
}

export const GENESIS_PREV_HASH = '0'.repeat(64);

export const DECISION_OUTCOMES: readonly DecisionOutcome[] = ['approved', 'rejected', 'escalated', 'waived'];

export const DECISION_EVENT_TYPE = 'ReviewDecided';
export const APPROVAL_DECISION_EVENT_TYPE = 'ToolApprovalDecided';
export const DECISION_EVENT_TYPES: readonly string[] = [DECISION_EVENT_TYPE, APPROVAL_DECISION_EVENT_TYPE];

/** The last record's place and hash (seq 0 and the genesis hash for an empty log). */
export interface DecisionLogHead {
  seq: number;
  hash: string;
}

/**
 * Filters of the decision log (all optional, combined with AND). `decider` is compared
 * case-insensitively for `user:` names. `from`/`to` are inclusive and in
 * the form of Date#toISOString (as `decidedAt` is), so they compare as text.
 */
export interface DecisionFilter {
  kind?: DecisionKind;
  runId?: string;
  decider?: string;
  outcome?: DecisionOutcome;
  from?: string;
  to?: string;
}

/** The record's fields in a fixed order: the column order of exports. */
export const DECISION_RECORD_FIELDS = [
  'seq',
  'decisionId',
  'runId',
  'reviewId',
  'iteration',
  'executor',
  'decider',
  'deciderKind',
  'outcome',
  'reason',
  'policy',
  'acceptanceCriteria',
  'artifactHash',
  'charterVersion',
  'decidedAt',
  'position',
  'kind',
  'approvalId',
  'toolName',
  'inputHash',
  'risk',
  'role',
  'turn',
  'prevHash',
  'hash',
] as const satisfies ReadonlyArray<keyof DecisionRecord>;
