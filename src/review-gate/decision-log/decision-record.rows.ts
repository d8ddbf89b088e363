import type { DecisionRecord } from './decision-record';

/**
 * The SQL adapters' row shape and its mapping, shared so SQLite and PostgreSQL store and read
 * records the same way. Reading maps without repairing: a value someone changed in the database
 * is handed to verification exactly as found (only bigint text becomes a number).
 */

export const DECISION_COLUMNS = [
  'seq',
  'decision_id',
  'run_id',
  'review_id',
  'iteration',
  'executor',
  'decider',
  'decider_kind',
  'outcome',
  'reason',
  'policy',
  'acceptance_criteria',
  'artifact_hash',
  'charter_version',
  'decided_at',
  'position',
  'prev_hash',
  'hash',
] as const;

export type DecisionRow = Record<(typeof DECISION_COLUMNS)[number], unknown>;

/** Column values in DECISION_COLUMNS order. */
export function rowValues(r: DecisionRecord): unknown[] {
  return [
    r.seq,
    r.decisionId,
    r.runId,
    r.reviewId,
    r.iteration,
    r.executor,
    r.decider,
    r.deciderKind,
    r.outcome,
    r.reason,
    r.policy ?? null,
    JSON.stringify(r.acceptanceCriteria),
    r.artifactHash,
    r.charterVersion,
    r.decidedAt,
    r.position,
    r.prevHash,
    r.hash,
  ];
}

/** PostgreSQL returns bigint columns as text. */
const bigint = (v: unknown): unknown => (typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v);

function parseJsonOr(text: unknown): unknown {
  if (typeof text !== 'string') return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function recordOfRow(row: DecisionRow): DecisionRecord {
  const record = {
    seq: bigint(row.seq),
    decisionId: row.decision_id,
    runId: row.run_id,
    reviewId: row.review_id,
    iteration: row.iteration,
    executor: row.executor,
    decider: row.decider,
    deciderKind: row.decider_kind,
    outcome: row.outcome,
    reason: row.reason,
    policy: row.policy === null ? undefined : row.policy,
    acceptanceCriteria: parseJsonOr(row.acceptance_criteria),
    artifactHash: row.artifact_hash,
    charterVersion: row.charter_version,
    decidedAt: row.decided_at,
    position: bigint(row.position),
    prevHash: row.prev_hash,
    hash: row.hash,
  } as unknown as DecisionRecord;
  // An absent policy stays an undefined property (one object shape for every row); JSON and the
  // canonical form both leave it out.
  return record;
}
