import { randomUUID } from 'node:crypto';
import type { EsdbConnection } from '../../events/esdb.client';
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

const READ_PAGE = 1_000;

/**
 * EventStoreDB: the decision log is one stream, `<ns>.decisions`, record N at revision N - 1. An
 * append reads the head and appends at its revision, so two projectors cannot fork or gap the
 * chain: the one that loses gets a wrong expected revision and is told the head moved.
 *
 * Queries (by decision id, by hash, filtered pages) are answered from a copy of the stream held
 * in this process and brought up to date by reading the stream's new events before each call (a
 * read that returns nothing once nothing changed). The log holds one record per human decision,
 * so the copy stays small; records are kept as stored, never repaired.
 */
export class EsdbDecisionRecordRepository implements DecisionRecordRepository {
  readonly kind = 'esdb';
  private readonly records: DecisionRecord[] = [];
  private readonly byId = new Map<string, DecisionRecord>();
  private bySeq: DecisionRecord[] | undefined;
  private syncing: Promise<void> | undefined;

  constructor(
    private readonly conn: EsdbConnection,
    private readonly namespace: string,
  ) {}

  get stream(): string {
    return `${this.namespace}.decisions`;
  }

  async append(record: DecisionRecord): Promise<AppendRecordResult> {
    await this.sync();
    const known = this.byId.get(record.decisionId);
    if (known) return { appended: false, existing: copy(known) };
    const head = this.records[this.records.length - 1] ?? null;
    if (!followsHead(record, head)) throw new DecisionLogHeadMovedError(record, head);
    const expected = this.records.length === 0 ? 'no_stream' : BigInt(this.records.length - 1);
    const outcome = await this.conn.append(
      this.stream,
      [{ id: randomUUID(), type: 'DecisionRecorded', data: Buffer.from(JSON.stringify(record)), metadata: Buffer.from('{}') }],
      expected,
    );
    await this.sync();
    if (outcome.ok) return { appended: true };
    const existing = this.byId.get(record.decisionId);
    if (existing) return { appended: false, existing: copy(existing) };
    throw new DecisionLogHeadMovedError(record, this.records[this.records.length - 1] ?? null);
  }

  async get(decisionId: string): Promise<DecisionRecord | null> {
    await this.sync();
    const r = this.byId.get(decisionId);
    return r ? copy(r) : null;
  }

  async getByHash(hash: string): Promise<DecisionRecord | null> {
    await this.sync();
    const r = this.ordered().find((x) => x.hash === hash);
    return r ? copy(r) : null;
  }

  /** The log on EventStoreDB records tool approvals from its start. */
  async approvalsFrom(): Promise<number> {
    return 0;
  }

  async last(): Promise<DecisionRecord | null> {
    await this.sync();
    const ordered = this.ordered();
    return ordered.length === 0 ? null : copy(ordered[ordered.length - 1]);
  }

  async list(filter: DecisionFilter = {}, page: { afterSeq?: number; limit?: number } = {}): Promise<DecisionRecord[]> {
    await this.sync();
    return this.page(filter, page.afterSeq ?? BEFORE_FIRST_SEQ, page.limit ?? DEFAULT_PAGE_SIZE);
  }

  iterate(options: { filter?: DecisionFilter; afterSeq?: number; pageSize?: number } = {}): AsyncIterable<DecisionRecord> {
    return iterateByPages(
      async (after, limit) => {
        await this.sync();
        return this.page(options.filter ?? {}, after, limit);
      },
      options.pageSize,
      options.afterSeq,
    );
  }

  async count(): Promise<number> {
    await this.sync();
    return this.records.length;
  }

  async close(): Promise<void> {}

  private page(filter: DecisionFilter, afterSeq: number, limit: number): DecisionRecord[] {
    const out: DecisionRecord[] = [];
    for (const r of this.ordered()) {
      if (out.length >= limit) break;
      if (r.seq > afterSeq && matchesDecisionFilter(r, filter)) out.push(copy(r));
    }
    return out;
  }

  private ordered(): DecisionRecord[] {
    this.bySeq ??= [...this.records].sort((a, b) => a.seq - b.seq);
    return this.bySeq;
  }

  /**
   * Reads the records appended since the last read. Calls queue behind each other, and each reads
   * after the previous one ended, so a caller sees every record appended before it called.
   */
  private sync(): Promise<void> {
    // The previous read's failure was its own caller's; this one reads again regardless.
    const run = (this.syncing ?? Promise.resolve()).catch(() => undefined).then(() => this.readNew());
    this.syncing = run;
    return run;
  }

  private async readNew(): Promise<void> {
    for (;;) {
      const page = await this.conn.readStream(this.stream, BigInt(this.records.length), { maxCount: READ_PAGE });
      for (const e of page) {
        const r = JSON.parse(Buffer.from(e.data).toString('utf8')) as DecisionRecord;
        this.records.push(r);
        if (!this.byId.has(r.decisionId)) this.byId.set(r.decisionId, r);
      }
      if (page.length > 0) this.bySeq = undefined;
      if (page.length < READ_PAGE) return;
    }
  }
}

function copy(r: DecisionRecord): DecisionRecord {
  return JSON.parse(JSON.stringify(r)) as DecisionRecord;
}
