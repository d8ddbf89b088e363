import type { DecisionFilter, DecisionRecord } from './decision-record';
import {
  BEFORE_FIRST_SEQ,
  DecisionLogHeadMovedError,
  DEFAULT_PAGE_SIZE,
  followsHead,
  iterateByPages,
  matchesDecisionFilter,
  type AppendRecordResult,
  type DecisionRecordRepository,
} from './decision-record.repository';

/**
 * In-memory adapter (the memory store, unit tests). Records round-trip through JSON, so what a test
 * reads back is a copy, as from the SQL adapters.
 */
export class InMemoryDecisionRecordRepository implements DecisionRecordRepository {
  readonly kind = 'memory';
  /** Kept sorted by seq. */
  private readonly rows: string[] = [];
  private readonly seqs: number[] = [];
  private readonly byId = new Map<string, string>();

  async append(record: DecisionRecord): Promise<AppendRecordResult> {
    const existing = this.byId.get(record.decisionId);
    if (existing) return { appended: false, existing: JSON.parse(existing) as DecisionRecord };
    // No await between the check and the write: the append is atomic, as the SQL adapters' are.
    const head = this.lastSync();
    if (!followsHead(record, head)) throw new DecisionLogHeadMovedError(record, head);
    const row = JSON.stringify(record);
    this.rows.push(row);
    this.seqs.push(record.seq);
    this.byId.set(record.decisionId, row);
    return { appended: true };
  }

  async get(decisionId: string): Promise<DecisionRecord | null> {
    const row = this.byId.get(decisionId);
    return row ? (JSON.parse(row) as DecisionRecord) : null;
  }

  async getByHash(hash: string): Promise<DecisionRecord | null> {
    for (const row of this.rows) {
      const r = JSON.parse(row) as DecisionRecord;
      if (r.hash === hash) return r;
    }
    return null;
  }

  /** A log kept in memory records tool approvals from the start. */
  async approvalsFrom(): Promise<number> {
    return 0;
  }

  async last(): Promise<DecisionRecord | null> {
    return this.lastSync();
  }

  private lastSync(): DecisionRecord | null {
    const row = this.rows[this.rows.length - 1];
    return row ? (JSON.parse(row) as DecisionRecord) : null;
  }

  async list(filter: DecisionFilter = {}, page: { afterSeq?: number; limit?: number } = {}): Promise<DecisionRecord[]> {
    return this.page(filter, page.afterSeq ?? BEFORE_FIRST_SEQ, page.limit ?? DEFAULT_PAGE_SIZE);
  }

  iterate(options: { filter?: DecisionFilter; afterSeq?: number; pageSize?: number } = {}): AsyncIterable<DecisionRecord> {
    return iterateByPages(async (after, limit) => this.page(options.filter ?? {}, after, limit), options.pageSize, options.afterSeq);
  }

  async count(): Promise<number> {
    return this.rows.length;
  }

  async close(): Promise<void> {}

  private page(filter: DecisionFilter, afterSeq: number, limit: number): DecisionRecord[] {
    const out: DecisionRecord[] = [];
    for (let i = firstAfter(this.seqs, afterSeq); i < this.rows.length && out.length < limit; i++) {
      const r = JSON.parse(this.rows[i]) as DecisionRecord;
      if (matchesDecisionFilter(r, filter)) out.push(r);
    }
    return out;
  }
}

/** Index of the first seq greater than `after` (binary search over the sorted seqs). */
function firstAfter(seqs: number[], after: number): number {
  let lo = 0;
  let hi = seqs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (seqs[mid] <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
