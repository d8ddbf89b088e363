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
  return recordOf(
    row.seq,
    row.decision_id,
    row.run_id,
    row.review_id,
    row.iteration,
    row.executor,
    row.decider,
    row.decider_kind,
    row.outcome,
    row.reason,
    row.policy,
    row.acceptance_criteria,
    row.artifact_hash,
    row.charter_version,
    row.decided_at,
    row.position,
    row.prev_hash,
    row.hash,
  );
}

/**
 * A row read as an array of column values, in DECISION_COLUMNS order (better-sqlite3's raw mode:
 * no object with named keys built per row), mapped exactly as recordOfRow maps a row object.
 */
export function recordOfValues(v: readonly unknown[]): DecisionRecord {
  return recordOf(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[16], v[17]);
}

function recordOf(
  seq: unknown,
  decisionId: unknown,
  runId: unknown,
  reviewId: unknown,
  iteration: unknown,
  executor: unknown,
  decider: unknown,
  deciderKind: unknown,
  outcome: unknown,
  reason: unknown,
  policy: unknown,
  acceptanceCriteria: unknown,
  artifactHash: unknown,
  charterVersion: unknown,
  decidedAt: unknown,
  position: unknown,
  prevHash: unknown,
  hash: unknown,
): DecisionRecord {
  // An absent policy stays an undefined property (one object shape for every row); JSON and the
  // canonical form both leave it out.
  return {
    seq: bigint(seq),
    decisionId,
    runId,
    reviewId,
    iteration,
    executor,
    decider,
    deciderKind,
    outcome,
    reason,
    policy: policy === null ? undefined : policy,
    acceptanceCriteria: parseJsonOr(acceptanceCriteria),
    artifactHash,
    charterVersion,
    decidedAt,
    position: bigint(position),
    prevHash,
    hash,
  } as unknown as DecisionRecord;
}
