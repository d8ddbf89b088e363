import type { DecisionOutcome, ReviewTimeoutPolicy } from '../../team/domain/run-events';

/**
 * One entry of the tamper-evident decision log (SPEC §4): a review decision, numbered and linked
 * to the one before it by hash. Pure types, no framework.
 */

/** What a decision event says: every field of a record except its place in the chain. */
export interface DecisionPayload {
  decisionId: string;
  runId: string;
  reviewId: string;
  iteration: number;
  /** Identity of the executor whose work was decided. */
  executor: string;
  /** `user:<name>` or `system`. */
  decider: string;
  deciderKind: 'human' | 'system';
  outcome: DecisionOutcome;
  reason: string;
  /** The timeout policy, when the system decided because a review timed out. */
  policy?: ReviewTimeoutPolicy;
  acceptanceCriteria: string[];
  artifactHash: string;
  charterVersion: string;
  /** ISO time of the decision, exactly as recorded in the event. */
  decidedAt: string;
  /** Global position of the ReviewDecided event the record was made from. */
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

/**
 * Filters of the decision log (all optional, combined with AND). `from`/`to` are inclusive and in
 * the form of Date#toISOString (as `decidedAt` is), so they compare as text.
 */
export interface DecisionFilter {
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
  'prevHash',
  'hash',
] as const satisfies ReadonlyArray<keyof DecisionRecord>;
