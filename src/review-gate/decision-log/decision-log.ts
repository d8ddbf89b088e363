import { InvalidRequestError } from '../../shared/errors';
import type { AttestationReport } from '../../attestation/attestation-check';
import type { EventStore, RecordedEvent } from '../../events/event-store/event-store.port';
import { hashRecord } from './chain';
import { expectedDecision, InOrderCheck, verifyChainAsync, type ChainVerification, type ExpectedDecision } from './chain-verification';
import { GENESIS_PREV_HASH, type DecisionFilter, type DecisionLogHead, type DecisionRecord } from './decision-record';
import { BEFORE_FIRST_SEQ, type DecisionRecordRepository } from './decision-record.repository';
import { DECISION_EVENTS, isRecorded, type DecisionLogProjection } from './decision-log.projection';

/** What `verify` answers: the chain's verification, and what else it was asked to prove. */
export interface DecisionLogVerification extends ChainVerification {
  /** With `since`: whether the log still extends the head seen earlier. */
  since?: SinceCheck;
  /** Streams holding decisions in which revisions are missing (events deleted). Only when some are. */
  streamGaps?: StreamGap[];
  /** Attestations and personal signatures of every decision and key event (the served log checks them). */
  attestations?: AttestationReport;
}

export interface SinceCheck {
  hash: string;
  /** The seq of the record with that hash, when it is in the log. */
  seq?: number;
  /** True when that record is in the log at its seq, intact, and the chain from it to the head is intact. */
  extends: boolean;
  /** The log's head now. */
  head: DecisionLogHead;
  /** Why not, when it does not. */
  detail?: string;
  /** When `since` was a signed head: what it claimed, and why its signature does not hold, if it does not. */
  signedHead?: { seq: number; at: string; keyId: string; problem?: string };
}

export interface StreamGap {
  streamId: string;
  /** The first revision missing. */
  missingRevision: number;
  /** The revision found in its place (events after the gap), absent when events are missing at the end. */
  foundRevision: number;
}

/** Events read per page when naming the first gap of a decided stream. */
const GAP_PAGE = 2000;
/** Streams read at once to name their gaps. */
const GAP_READERS = 8;
/** Decided streams whose extents are asked of the store per call. */
const GAP_EXTENT_STREAMS = 1000;

export const SINCE_HASH = /^[0-9a-f]{64}$/;

/** `since` is not a record hash (→ 400, or exit code 2). */
export class InvalidSinceError extends InvalidRequestError {
  override readonly name = 'InvalidSinceError';
}

export interface DecisionLogOptions {
  /** Decision events read per page when verifying (default: verifyPageSize). */
  eventPageSize?: number;
  /** Records read per page by the in-order check (default: verifyPageSize). */
  recordPageSize?: number;
}

/**
 * Pages of 250 from an in-process store (SQLite, memory): a page costs no round trip, and small
 * pages keep what survives each young-generation GC small (on SQLite, 100–250 measured up to ~10 %
 * faster than 1000, within a noisy machine's spread). Pages of 1000 over the network (PostgreSQL),
 * where each page is a round trip.
 */
function verifyPageSize(storeKind: string): number {
  return storeKind === 'sqlite' || storeKind === 'memory' ? 250 : 1000;
}

/**
 * Reading and verifying the decision log. Every read first waits for the projector to reach the
 * store's head, so a client sees the decisions it just made. Framework-free; the HTTP route and
 * the CLI both use it.
 */
export class DecisionLog {
  private readonly eventPage: number;
  private readonly recordPage: number;

  constructor(
    private readonly store: EventStore,
    private readonly repo: DecisionRecordRepository,
    private readonly projection: DecisionLogProjection,
    options: DecisionLogOptions = {},
  ) {
    this.eventPage = options.eventPageSize ?? verifyPageSize(store.kind);
    this.recordPage = options.recordPageSize ?? verifyPageSize(store.kind);
  }

  async list(filter: DecisionFilter = {}, page: { afterSeq?: number; limit?: number } = {}): Promise<DecisionRecord[]> {
    await this.projection.catchUp();
    return this.repo.list(filter, page);
  }

  /** Every matching record in seq order, page by page (for exports). */
  async export(filter: DecisionFilter = {}, afterSeq?: number): Promise<AsyncIterable<DecisionRecord>> {
    await this.projection.catchUp();
    return this.repo.iterate({ filter, afterSeq });
  }

  /** The last record's seq and hash (seq 0 and the genesis hash when the log is empty). */
  async head(): Promise<DecisionLogHead> {
    await this.projection.catchUp();
    const last = await this.repo.last();
    return last ? { seq: last.seq, hash: last.hash } : { seq: 0, hash: GENESIS_PREV_HASH };
  }

  /**
   * Verifies the chain and cross-checks it with the store: every decision event up to the
   * projector's position must have exactly its record, in order, with its content. Removing the
   * last records leaves a valid chain; the count of decision events is what reveals it — unless
   * their events were removed too, which `since` (a head seen earlier) and the stream check reveal.
   *
   * Two passes at most. The in-order check walks the decision events and the records side by side
   * (record `s` against the `s`-th event, one hash per record, memory flat but for the set of
   * decision ids); it concludes only that the log is intact. At the first thing it cannot
   * vouch for, the complete check runs from the start — the expectation of every decision event,
   * then ChainVerifier — and names and classifies the first bad record.
   *
   * Then the streams holding decision events are checked for revision gaps (an event deleted from
   * a decided run), and with `since` the record of that hash must still be in the log.
   */
  async verify(options: { since?: string } = {}): Promise<DecisionLogVerification> {
    if (options.since !== undefined && !SINCE_HASH.test(options.since)) throw new InvalidSinceError('since must be a record hash: 64 lowercase hex characters');
    const upTo = await this.verifiedUpTo();
    const approvalsFrom = await this.repo.approvalsFrom();
    const streams = new Set<string>();
    const chain = (await this.verifyInOrder(upTo, approvalsFrom, streams)) ?? (await this.verifyComplete(upTo, approvalsFrom, streams));
    const result: DecisionLogVerification = { ...chain };
    const gaps = await this.streamGaps(streams);
    if (gaps.length > 0) {
      result.ok = false;
      result.streamGaps = gaps;
    }
    if (options.since !== undefined) {
      result.since = await this.sinceCheck(options.since, chain);
      if (!result.since.extends) result.ok = false;
    }
    return result;
  }

  private async sinceCheck(hash: string, chain: ChainVerification): Promise<SinceCheck> {
    const head = await this.head();
    if (hash === GENESIS_PREV_HASH) {
      return chain.ok ? { hash, seq: 0, extends: true, head } : { hash, seq: 0, extends: false, head, detail: 'the chain is not intact (see firstBadRecord)' };
    }
    const record = await this.repo.getByHash(hash);
    if (!record) {
      return { hash, extends: false, head, detail: 'not found: no record with this hash is in the log; records were removed since that head was seen (truncated or rewritten), or the hash is not from this log' };
    }
    const seq = record.seq;
    const [atSeq] = await this.repo.list({}, { afterSeq: seq - 1, limit: 1 });
    if (atSeq?.hash !== hash || atSeq.seq !== seq || hashRecord(record) !== hash) {
      return { hash, seq, extends: false, head, detail: `the record with this hash is not intact at seq ${seq}` };
    }
    if (!chain.ok) return { hash, seq, extends: false, head, detail: 'the chain is not intact (see firstBadRecord)' };
    return { hash, seq, extends: true, head };
  }

  /**
   * Revision gaps in the streams that hold decisions: a stream's revisions run 0, 1, 2 … without
   * holes, so a hole is an event deleted outside triad (one a decision was appended with, say).
   * The store's extents (count, first and last revision, from its index) show which streams have
   * a hole without reading their events; only those are read, to name the first missing revision.
   */
  private async streamGaps(streams: Iterable<string>): Promise<StreamGap[]> {
    const ids = [...streams];
    const holed: string[] = [];
    for (let i = 0; i < ids.length; i += GAP_EXTENT_STREAMS) {
      const batch = ids.slice(i, i + GAP_EXTENT_STREAMS);
      const extents = await this.store.streamExtents(batch);
      for (const id of batch) {
        const e = extents.get(id);
        if (e && (e.firstRevision !== 0 || e.count !== e.lastRevision + 1)) holed.push(id);
      }
    }
    const found = new Map<string, StreamGap>();
    // A few streams at a time: over the network (PostgreSQL) each read is a round trip.
    const worker = async (): Promise<void> => {
      for (let streamId = holed.shift(); streamId !== undefined; streamId = holed.shift()) {
        const gap = await this.firstGap(streamId);
        if (gap) found.set(streamId, gap);
      }
    };
    await Promise.all(Array.from({ length: GAP_READERS }, worker));
    // In the order the streams were found (the order of their first decision).
    return ids.flatMap((id) => (found.has(id) ? [found.get(id)!] : []));
  }

  private async firstGap(streamId: string): Promise<StreamGap | undefined> {
    // Plain reads a page at a time: most decided streams are one page, and a read-ahead thread
    // would cost more than it saves.
    for (let expected = 0; ; ) {
      const page = await this.store.readStream(streamId, { fromRevision: expected, maxCount: GAP_PAGE });
      const hole = page.findIndex((e, i) => e.revision !== expected + i);
      if (hole >= 0) return { streamId, missingRevision: expected + hole, foundRevision: page[hole].revision };
      if (page.length < GAP_PAGE) return undefined;
      expected += page.length;
    }
  }

  /**
   * The store position verification reads the decision events up to. Records appended after
   * this point (newer decisions) are left out; a record claiming a position the store has not
   * reached is checked, and found to be of no decision event.
   */
  private async verifiedUpTo(): Promise<number> {
    const caughtUp = await this.projection.catchUp();
    const last = await this.repo.last();
    return Math.max(caughtUp, typeof last?.position === 'number' ? last.position : 0);
  }

  /** The in-order check (see InOrderCheck): the result when the log is intact, else undefined. */
  private async verifyInOrder(upTo: number, approvalsFrom: number, streams: Set<string>): Promise<ChainVerification | undefined> {
    const check = new InOrderCheck(upTo);
    let records: DecisionRecord[] = [];
    let r = 0;
    let afterSeq = BEFORE_FIRST_SEQ;
    let lastPage = false;
    // The records page by page, as repo.iterate() reads them (after the last seq of the page before).
    const nextPage = async (): Promise<void> => {
      records = await this.repo.list({}, { afterSeq, limit: this.recordPage });
      r = 0;
      lastPage = records.length < this.recordPage;
      if (!lastPage) afterSeq = records[records.length - 1].seq;
    };
    await nextPage();
    for await (const page of this.decisionEventPages(upTo, approvalsFrom, streams)) {
      for (const e of page) {
        if (r === records.length) {
          if (lastPage) return undefined;
          await nextPage();
          if (records.length === 0) return undefined;
        }
        if (!check.pair(e, records[r++])) return undefined;
      }
    }
    // Records left over must all be of decisions after upTo (appended while verifying).
    for (;;) {
      while (r < records.length) if (!check.beyond(records[r++])) return undefined;
      if (lastPage) return check.result();
      await nextPage();
    }
  }

  /** The complete check: the expectation of every decision event, then ChainVerifier over the records. */
  private async verifyComplete(upTo: number, approvalsFrom: number, streams: Set<string>): Promise<ChainVerification> {
    const byDecisionId = new Map<string, ExpectedDecision>();
    for await (const page of this.decisionEventPages(upTo, approvalsFrom, streams)) {
      for (const e of page) {
        const [id, expected] = expectedDecision(e);
        // The first event of a decision id has its record (as expectationFrom).
        if (!byDecisionId.has(id)) byDecisionId.set(id, expected);
      }
    }
    return verifyChainAsync(this.repo.iterate(), { count: byDecisionId.size, byDecisionId, upToPosition: upTo });
  }

  /**
   * The store's decision events that have records, up to position `upTo`, a page at a time (pages,
   * not events: one await per page); their streams are collected into `streams`.
   */
  private async *decisionEventPages(upTo: number, approvalsFrom: number, streams: Set<string>): AsyncGenerator<RecordedEvent[]> {
    for (let after = 0; ; ) {
      const page = await this.store.readAll({ after, maxCount: this.eventPage, filter: DECISION_EVENTS });
      const inRange = page.length > 0 && page[page.length - 1].position > upTo ? page.filter((e) => e.position <= upTo) : page;
      const within = approvalsFrom > 0 ? inRange.filter((e) => isRecorded(e, approvalsFrom)) : inRange;
      for (const e of within) streams.add(e.streamId);
      if (within.length > 0) yield within;
      if (page.length < this.eventPage || page[page.length - 1].position >= upTo) return;
      after = page[page.length - 1].position;
    }
  }
}
