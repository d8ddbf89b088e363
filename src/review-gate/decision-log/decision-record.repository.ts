import { GENESIS_PREV_HASH, type DecisionFilter, type DecisionRecord } from './decision-record';

/**
 * Where decision records are kept: next to the events, in the same database as the configured
 * store. Every adapter passes the same contract suite
 * (test/review-gate/decision-log/decision-record.repository.contract.ts).
 *
 * The log only grows at its head: `append` stores a record only when it is the next one (seq one
 * more than the last, prevHash the last record's hash), atomically, so two projectors writing the
 * same database at once cannot fork or gap the chain. Adapters store what they are given and read
 * back what is stored — they never repair or re-derive anything, so tampering stays visible.
 */
export interface DecisionRecordRepository {
  readonly kind: string;
  /**
   * Appends `record` at the head. Idempotent by decision id: when a record of that decision is
   * already stored, nothing is written and it is returned. Throws DecisionLogHeadMovedError when
   * the record is not the next one (another writer appended first).
   */
  append(record: DecisionRecord): Promise<AppendRecordResult>;
  get(decisionId: string): Promise<DecisionRecord | null>;
  /** The record whose `hash` is this one (the lowest seq, should a tampered log hold two). */
  getByHash(hash: string): Promise<DecisionRecord | null>;
  /**
   * Tool-approval decisions at or before this store position are not in the log: the log's head
   * when it was upgraded to record them (0 for a log that recorded them from the start).
   */
  approvalsFrom(): Promise<number>;
  /** The record with the highest seq. */
  last(): Promise<DecisionRecord | null>;
  /** Matching records in seq order, after `afterSeq`, at most `limit` (default 1000). */
  list(filter?: DecisionFilter, page?: { afterSeq?: number; limit?: number }): Promise<DecisionRecord[]>;
  /** Every (matching) record in seq order, after `afterSeq`, read `pageSize` at a time (default 1000). */
  iterate(options?: { filter?: DecisionFilter; afterSeq?: number; pageSize?: number }): AsyncIterable<DecisionRecord>;
  count(): Promise<number>;
  /** Releases what the repository holds itself (never the storage's connection). */
  close(): Promise<void>;
}

export type AppendRecordResult = { appended: true } | { appended: false; existing: DecisionRecord };

export const DECISION_RECORD_REPOSITORY = Symbol('DECISION_RECORD_REPOSITORY');

export const DEFAULT_PAGE_SIZE = 1000;

/** `afterSeq` that lists from the first record (below any seq, even a tampered negative one). */
export const BEFORE_FIRST_SEQ = Number.MIN_SAFE_INTEGER;

/** The record was not the next one: the log's head moved (another projector appended first). */
export class DecisionLogHeadMovedError extends Error {
  override readonly name = 'DecisionLogHeadMovedError';
  constructor(
    readonly attempted: { seq: number; decisionId: string },
    readonly head: { seq: number; hash: string } | null,
  ) {
    super(
      `decision record ${attempted.seq} (${attempted.decisionId}) is not the next one: the log's head is ${head ? `record ${head.seq}` : 'empty'}`,
    );
  }
}

/** Whether `record` may follow `head` (the adapters' shared precondition). */
export function followsHead(record: Pick<DecisionRecord, 'seq' | 'prevHash'>, head: Pick<DecisionRecord, 'seq' | 'hash'> | null): boolean {
  return head ? record.seq === head.seq + 1 && record.prevHash === head.hash : record.seq === 1 && record.prevHash === GENESIS_PREV_HASH;
}

/** Whether a record passes a filter (the in-memory adapter; SQL adapters filter in the query). */
export function matchesDecisionFilter(r: DecisionRecord, f: DecisionFilter = {}): boolean {
  return (
    (f.kind === undefined || (f.kind === 'review' ? r.kind === undefined : r.kind === f.kind)) &&
    (f.runId === undefined || r.runId === f.runId) &&
    (f.decider === undefined || (typeof r.decider === 'string' && r.decider.toLowerCase() === f.decider.toLowerCase())) &&
    (f.outcome === undefined || r.outcome === f.outcome) &&
    (f.from === undefined || r.decidedAt >= f.from) &&
    (f.to === undefined || r.decidedAt <= f.to)
  );
}

/** Pages through `list` (shared by the adapters' `iterate`). */
export async function* iterateByPages(
  list: (afterSeq: number, limit: number) => Promise<DecisionRecord[]>,
  pageSize = DEFAULT_PAGE_SIZE,
  afterSeq = BEFORE_FIRST_SEQ,
): AsyncGenerator<DecisionRecord> {
  let after = afterSeq;
  for (;;) {
    const page = await list(after, pageSize);
    for (const r of page) yield r;
    if (page.length < pageSize) return;
    after = page[page.length - 1].seq;
  }
}

/**
 * The WHERE conditions of a filter for the SQL adapters, with `param(value)` giving the
 * placeholder of a value. `decider` compares lower-cased (names are case-insensitive; the schema
 * indexes lower(decider)); `kind=review` is the records without a kind.
 */
export function decisionFilterSql(filter: DecisionFilter, param: (value: unknown) => string): string[] {
  const where: string[] = [];
  if (filter.kind === 'review') where.push('kind IS NULL');
  else if (filter.kind !== undefined) where.push(`kind = ${param(filter.kind)}`);
  if (filter.runId !== undefined) where.push(`run_id = ${param(filter.runId)}`);
  if (filter.decider !== undefined) where.push(`lower(decider) = ${param(filter.decider.toLowerCase())}`);
  if (filter.outcome !== undefined) where.push(`outcome = ${param(filter.outcome)}`);
  if (filter.from !== undefined) where.push(`decided_at >= ${param(filter.from)}`);
  if (filter.to !== undefined) where.push(`decided_at <= ${param(filter.to)}`);
  return where;
}
