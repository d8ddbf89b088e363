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
  // Tool approvals (schema version 2); null for review decisions.
  'kind',
  'approval_id',
  'tool_name',
  'input_hash',
  'risk',
  'role',
  'turn',
] as const;

export type DecisionRow = Record<(typeof DECISION_COLUMNS)[number], unknown>;

/** Column values in DECISION_COLUMNS order. */
export function rowValues(r: DecisionRecord): unknown[] {
  return [
    r.seq,
    r.decisionId,
    r.runId,
    r.reviewId ?? null,
    r.iteration ?? null,
    r.executor ?? null,
    r.decider,
    r.deciderKind,
    r.outcome,
    r.reason,
    r.policy ?? null,
    r.acceptanceCriteria === undefined ? null : JSON.stringify(r.acceptanceCriteria),
    r.artifactHash ?? null,
    r.charterVersion ?? null,
    r.decidedAt,
    r.position,
    r.prevHash,
    r.hash,
    r.kind ?? null,
    r.approvalId ?? null,
    r.toolName ?? null,
    r.inputHash ?? null,
    r.risk ?? null,
    r.role ?? null,
    r.turn ?? null,
  ];
}

const absent = (v: unknown): unknown => (v === null ? undefined : v);

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
    row.kind,
    row.approval_id,
    row.tool_name,
    row.input_hash,
    row.risk,
    row.role,
    row.turn,
  );
}

/**
 * A row read as an array of column values, in DECISION_COLUMNS order (better-sqlite3's raw mode:
 * no object with named keys built per row), mapped exactly as recordOfRow maps a row object.
 */
export function recordOfValues(v: readonly unknown[]): DecisionRecord {
  return recordOf(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[16], v[17], v[18], v[19], v[20], v[21], v[22], v[23], v[24]);
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
  kind: unknown,
  approvalId: unknown,
  toolName: unknown,
  inputHash: unknown,
  risk: unknown,
  role: unknown,
  turn: unknown,
): DecisionRecord {
  // An absent field (NULL) stays an undefined property (one object shape for every row); JSON and
  // the canonical form both leave it out.
  return {
    seq: bigint(seq),
    decisionId,
    runId,
    reviewId: absent(reviewId),
    iteration: absent(iteration),
    executor: absent(executor),
    decider,
    deciderKind,
    outcome,
    reason,
    policy: absent(policy),
    acceptanceCriteria: acceptanceCriteria === null ? undefined : parseJsonOr(acceptanceCriteria),
    artifactHash: absent(artifactHash),
    charterVersion: absent(charterVersion),
    decidedAt,
    position: bigint(position),
    kind: absent(kind),
    approvalId: absent(approvalId),
    toolName: absent(toolName),
    inputHash: absent(inputHash),
    risk: absent(risk),
    role: absent(role),
    turn: absent(turn),
    prevHash,
    hash,
  } as unknown as DecisionRecord;
}
