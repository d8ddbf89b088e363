import type { ReviewDecidedData } from '../../team/domain/run-events';
import { RUN_STREAM_PREFIX } from '../../team/domain/run-events';
import { APPROVAL_DECISION_EVENT_TYPE, DECISION_EVENT_TYPE, GENESIS_PREV_HASH, type DecisionRecord } from './decision-record';
import { hashRecord, payloadAndContentJson, payloadHash, payloadJson, payloadOf, runIdOf, sha256, hasNoApprovalFields, type DecisionEvent } from './chain';

/**
 * Verification of the decision log's hash chain, pure: a sequence of stored records on its own (the
 * links) and against the decision events of the store (what each record must say, and how many
 * there must be). Building and hashing records is chain.ts.
 *
 * One file over 400 lines on purpose: the in-order fast path (`InOrderCheck`) must answer exactly
 * what the complete check (`ChainVerifier`) would when the log is intact, and that is checked by
 * reading the two side by side.
 */

export type ChainProblem = 'altered' | 'removed' | 'reordered' | 'inserted' | 'missing_tail';

export interface BadRecord {
  /** The place in the chain (1-based) where the log stops being what it must be. */
  seq: number;
  /**
   * The record found there (altered, reordered, inserted), or the decision missing there
   * (removed, missing_tail); null when only the chain was checked and the missing one is unknown.
   */
  decisionId: string | null;
  problem: ChainProblem;
  detail: string;
}

export interface ChainVerification {
  ok: boolean;
  /** Records verified intact and in order before the first bad one (all of them when ok). */
  checked: number;
  firstBadRecord?: BadRecord;
}

/** What the event store says one decision record must hold. */
export interface ExpectedDecision {
  payloadHash: string;
  position: number;
}

/** What the event store says the whole log must hold. */
export interface ChainExpectation {
  /** Number of decision events (up to `upToPosition`). */
  count: number;
  /** The decision events by decision id; with it, every record is checked against its event. */
  byDecisionId?: ReadonlyMap<string, ExpectedDecision>;
  /**
   * The store position the expectation was read up to. Records of decisions after it that the
   * expectation does not know (appended while verifying) are left out of the check.
   */
  upToPosition?: number;
}

/** The expectation entry of one decision event. */
export function expectedDecision(event: DecisionEvent): [string, ExpectedDecision] {
  const payload = payloadOf(event);
  return [payload.decisionId, { payloadHash: payloadHash(payload), position: event.position }];
}

export function expectationFrom(events: Iterable<DecisionEvent>, upToPosition?: number): ChainExpectation {
  const byDecisionId = new Map<string, ExpectedDecision>();
  for (const e of events) {
    if (upToPosition !== undefined && e.position > upToPosition) continue;
    const [id, expected] = expectedDecision(e);
    // The first event of a decision id has its record (the projector skips a copy); a copy's
    // attestation does not hold for its place, and verify's attestation check names it.
    if (!byDecisionId.has(id)) byDecisionId.set(id, expected);
  }
  return { count: byDecisionId.size, byDecisionId, ...(upToPosition !== undefined ? { upToPosition } : {}) };
}

/** A record found out of place: is the one that belongs there further on (reordered), or gone (removed)? */
interface Hunt {
  seq: number;
  found: string;
  /** With an expectation: the decision that belongs at `seq`. */
  missingId?: string;
  /** Chain only: the record that belongs at `seq` links to this hash and carries this seq. */
  wantPrevHash: string;
}

/**
 * Streaming verifier: push the stored records in seq order, then `finish()`. Memory: the set of
 * decision ids seen (and the expectation). It names the FIRST place where the log differs from
 * what it must be:
 *
 * With an expectation by decision id (the normal case: the store's decision events), record `s`
 * must be the `s`-th decision event in global order, say what that event says, carry seq `s`,
 * link to record `s-1`'s hash and hash to its own `hash`:
 * - a record of no decision event, or a second record of one → `inserted`;
 * - another decision than the one due → `reordered` if the due one comes later, else `removed`;
 * - the right decision with different content, seq, link or hash → `altered`;
 * - fewer records than decision events → `missing_tail` (removing the last records leaves a
 *   valid chain; only the count of decision events shows it).
 *
 * With only the chain (and maybe a count) the same problems are told apart from the links:
 * a record whose successor links past it was `inserted`; a record whose hash does not match its
 * content but which links correctly was `altered`; a record that does not fit is `reordered`
 * when the record that fits comes later, else the one due there was `removed`.
 */
export class ChainVerifier {
  private slot = 1;
  private prevHash = GENESIS_PREV_HASH;
  private prevPosition = 0;
  private prev?: DecisionRecord;
  private accepted = 0;
  private bad?: BadRecord;
  private hunt?: Hunt;
  private readonly seen = new Set<string>();
  /** The first record left out as newer than the expectation (see push). */
  private late?: { slot: number; record: DecisionRecord };
  private readonly order?: string[];
  private idx = 0;

  constructor(private readonly expected?: ChainExpectation) {
    const by = expected?.byDecisionId;
    if (by) this.order = [...by.entries()].sort((a, b) => a[1].position - b[1].position).map(([id]) => id);
  }

  /** True once the first bad record is known: further records change nothing. */
  get done(): boolean {
    return this.bad !== undefined;
  }

  push(record: DecisionRecord): void {
    if (this.bad) return;
    if (this.hunt) {
      try {
        this.huntFor(record);
      } catch {
        // An unreadable record is not the one being looked for.
      }
      return;
    }
    try {
      const upTo = this.expected?.upToPosition;
      if (upTo !== undefined && record.position > upTo && !this.expected?.byDecisionId?.has(record.decisionId)) {
        // A decision made while verifying: left out, but only at the end of the log. Records of
        // known decisions after it mean it was put in the middle, where no new record can be.
        this.late ??= { slot: this.slot, record };
        return;
      }
      if (this.late) {
        const { slot, record: late } = this.late;
        return this.fail(slot, typeof late.decisionId === 'string' ? late.decisionId : null, 'inserted', `it claims position ${late.position}, past the verified head, but records of earlier decisions follow it`);
      }
      if (this.order) this.checkAgainstStore(record);
      else this.checkChain(record);
    } catch (err) {
      // A value no JSON can hold (a BLOB written into a text column, say) cannot be hashed: the
      // record was changed outside triad.
      this.fail(this.slot, typeof record.decisionId === 'string' ? record.decisionId : null, 'altered', `it holds a value that cannot be hashed (${(err as Error).message})`);
    }
  }

  finish(): ChainVerification {
    if (!this.bad && this.hunt) {
      const h = this.hunt;
      this.fail(h.seq, h.missingId ?? null, 'removed', h.missingId ? `decision ${h.missingId} is not in the log (found ${h.found} in its place)` : `the record due at seq ${h.seq} is not in the log (found ${h.found} in its place)`);
    }
    const count = this.expected?.byDecisionId?.size ?? this.expected?.count;
    if (!this.bad && count !== undefined && this.accepted < count) {
      const missing = this.order?.[this.idx] ?? null;
      this.fail(this.slot, missing, 'missing_tail', `the log ends after ${this.accepted} record(s) but the store holds ${count} decision(s)`);
    }
    if (this.bad) return { ok: false, checked: this.bad.seq - 1, firstBadRecord: this.bad };
    return { ok: true, checked: this.accepted };
  }

  private checkAgainstStore(r: DecisionRecord): void {
    const s = this.slot;
    const known = this.expected!.byDecisionId!.get(r.decisionId);
    if (!known) return this.fail(s, r.decisionId, 'inserted', `no decision event ${r.decisionId} exists in the store`);
    if (this.seen.has(r.decisionId)) return this.fail(s, r.decisionId, 'inserted', `a second record of decision ${r.decisionId}`);
    const due = this.order![this.idx];
    if (r.decisionId !== due) {
      this.hunt = { seq: s, found: r.decisionId, missingId: due, wantPrevHash: this.prevHash };
      return;
    }
    const [payload, content] = payloadAndContentJson(r);
    if (sha256(payload) !== known.payloadHash) return this.fail(s, r.decisionId, 'altered', `its content differs from the decision event at position ${known.position}`);
    if (r.seq !== s) return this.fail(s, r.decisionId, 'altered', `its seq is ${r.seq}, expected ${s}`);
    if (r.prevHash !== this.prevHash) return this.fail(s, r.decisionId, 'altered', `its prevHash is not the hash of record ${s - 1}`);
    if (sha256(content) !== r.hash) return this.fail(s, r.decisionId, 'altered', 'its hash does not match its content');
    this.accept(r);
  }

  private checkChain(r: DecisionRecord): void {
    const s = this.slot;
    const selfOk = hashRecord(r) === r.hash;
    const linkOk = r.prevHash === this.prevHash;
    const seqOk = r.seq === s;
    if (selfOk && linkOk && seqOk && r.position > this.prevPosition) {
      const count = this.expected?.count;
      if (count !== undefined && this.accepted >= count) return this.fail(s, r.decisionId, 'inserted', `the store holds only ${count} decision(s)`);
      return this.accept(r);
    }
    const prev = this.prev;
    if (selfOk && !linkOk && prev && r.prevHash === prev.prevHash) {
      return this.fail(s - 1, prev.decisionId, 'inserted', `record ${r.seq} (${r.decisionId}) links past it to record ${s - 2}`);
    }
    if (!selfOk && linkOk && seqOk) return this.fail(s, r.decisionId, 'altered', 'its hash does not match its content');
    if (selfOk && linkOk && !seqOk) return this.fail(s, r.decisionId, 'altered', `its seq is ${r.seq}, expected ${s}`);
    if (selfOk && linkOk && seqOk) return this.fail(s, r.decisionId, 'reordered', `its event position ${r.position} is not after ${this.prevPosition}`);
    if (selfOk && seqOk && !linkOk) {
      if (!prev) return this.fail(s, r.decisionId, 'altered', 'the first record does not start from the genesis hash');
      return this.fail(s - 1, prev.decisionId, 'altered', `record ${s} does not link to it: it was changed and re-hashed`);
    }
    this.hunt = { seq: s, found: r.decisionId, wantPrevHash: this.prevHash };
  }

  private huntFor(r: DecisionRecord): void {
    const h = this.hunt!;
    const belongs = h.missingId !== undefined ? r.decisionId === h.missingId : r.prevHash === h.wantPrevHash || (r.seq === h.seq && hashRecord(r) === r.hash);
    if (!belongs) return;
    const due = h.missingId ?? r.decisionId;
    this.fail(h.seq, h.found, 'reordered', `found ${h.found} where ${due} belongs, which comes later`);
  }

  private accept(r: DecisionRecord): void {
    this.seen.add(r.decisionId);
    this.prev = r;
    this.prevHash = r.hash;
    this.prevPosition = r.position;
    this.accepted++;
    this.slot++;
    this.idx++;
  }

  private fail(seq: number, decisionId: string | null, problem: ChainProblem, detail: string): void {
    this.bad = { seq, decisionId, problem, detail };
  }
}

/** Verifies stored records (in seq order), against the store's decision events when given. */
export function verifyChain(records: Iterable<DecisionRecord>, expected?: ChainExpectation): ChainVerification {
  const verifier = new ChainVerifier(expected);
  for (const r of records) {
    verifier.push(r);
    if (verifier.done) break;
  }
  return verifier.finish();
}

/** `verifyChain` over records read page by page from a repository. */
export async function verifyChainAsync(records: AsyncIterable<DecisionRecord> | Iterable<DecisionRecord>, expected?: ChainExpectation): Promise<ChainVerification> {
  const verifier = new ChainVerifier(expected);
  for await (const r of records) {
    verifier.push(r);
    if (verifier.done) break;
  }
  return verifier.finish();
}

// ---------------------------------------------------------------------------------------------
// The in-order check: the fast path of verification against the store

/**
 * Whether two field values have the same canonical JSON — for the values a record holds when
 * nobody tampered with it (a string, a finite number, an array of strings, absent). Anything
 * else answers false: the in-order check then gives up and the complete check decides.
 */
function sameValue(a: unknown, b: unknown): boolean {
  if (typeof a === 'string') return a === b;
  // 0 and -0 are equal here, and both are "0" in JSON; NaN and ±Infinity have no JSON.
  if (typeof a === 'number') return a === b && Number.isFinite(a);
  if (a === undefined) return b === undefined;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x: unknown = a[i];
    if (typeof x !== 'string' || x !== b[i]) return false;
  }
  return true;
}

/** sameValue(runId, runIdOf(event)), without cutting the run id out of the stream id. */
function sameRunId(runId: unknown, e: DecisionEvent, d: ReviewDecidedData): boolean {
  const stream = e.streamId;
  if (!stream.startsWith(RUN_STREAM_PREFIX)) return sameValue(runId, runIdOf(e, d));
  return typeof runId === 'string' && stream.length === RUN_STREAM_PREFIX.length + runId.length && stream.endsWith(runId);
}

/**
 * The in-order check, the fast path of verification against the store. When the log is intact,
 * record `s` is made from the `s`-th decision event (in global order), so the two sequences can be
 * walked side by side: one record, one event, no expectation to build. A record passes when it
 * says what its event says — compared field by field, which is exactly equality of the two
 * payloads' canonical JSON (the complete check compares their hashes) — carries seq `s`, links to
 * the hash of record `s-1` and hashes to its own `hash` (one sha256 per record).
 *
 * It only ever concludes that the log is intact. At the first record that does not pass (or an
 * event without a record, or a record the complete check would not leave out), `pair`/`beyond`
 * answer false and the caller runs the complete check (`ChainVerifier` with the store's
 * expectation), which names the first bad record and classifies it. When every pair passes,
 * `result()` is what the complete check would answer: `{ok: true, checked: <decision events>}`.
 *
 * Memory: the set of the decision ids seen (a decision id twice among the events changes what the
 * complete check expects; the set also tells the records appended while verifying, which are left
 * out, from records of known decisions, which are not).
 */
export class InOrderCheck {
  private checked = 0;
  private prevHash = GENESIS_PREV_HASH;
  private prevPosition = Number.NEGATIVE_INFINITY;
  private readonly ids = new Set<string>();

  /** `upToPosition` as in ChainExpectation: the store position the decision events are read up to. */
  constructor(private readonly upToPosition?: number) {}

  /**
   * The next decision event (in global order, at or before `upToPosition`) and the next record (in
   * seq order). False when the record is not exactly the one that event must have made here.
   */
  pair(event: DecisionEvent, record: DecisionRecord): boolean {
    try {
      return this.tryPair(event, record);
    } catch {
      // Whatever cannot be read here is for the complete check to name.
      return false;
    }
  }

  /**
   * A record after the last decision event: true when the complete check leaves it out (a record of
   * a decision made after `upToPosition`, appended while verifying).
   */
  beyond(record: DecisionRecord): boolean {
    try {
      const upTo = this.upToPosition;
      return upTo !== undefined && record.position > upTo && !this.ids.has(record.decisionId);
    } catch {
      return false;
    }
  }

  /** Valid once every decision event has been paired and every other record was `beyond`. */
  result(): ChainVerification {
    return { ok: true, checked: this.checked };
  }

  private tryPair(e: DecisionEvent, r: DecisionRecord): boolean {
    const s = this.checked + 1;
    const position = e.position;
    // The complete check orders the events by position; here they must come in that order.
    if (typeof position !== 'number' || !Number.isFinite(position) || !(position > this.prevPosition)) return false;
    if (this.upToPosition !== undefined && position > this.upToPosition) return false;
    if (e.type === APPROVAL_DECISION_EVENT_TYPE) return this.tryPairApproval(e, r, s);
    if (e.type !== DECISION_EVENT_TYPE || !hasNoApprovalFields(r)) return false;
    const d = e.data as ReviewDecidedData;
    const id = d.decisionId;
    if (typeof id !== 'string' || r.decisionId !== id || this.ids.has(id)) return false;
    if (r.seq !== s || r.prevHash !== this.prevHash || r.position !== position) return false;
    // payloadOf copies the criteria with a spread: for an array that is the same elements.
    if (!Array.isArray(d.acceptanceCriteria)) return false;
    const same =
      sameRunId(r.runId, e, d) &&
      sameValue(r.reviewId, d.reviewId) &&
      sameValue(r.iteration, d.iteration) &&
      sameValue(r.executor, d.executor) &&
      sameValue(r.decider, d.decider) &&
      sameValue(r.deciderKind, d.deciderKind) &&
      sameValue(r.outcome, d.outcome) &&
      sameValue(r.reason, d.reason) &&
      sameValue(r.policy, d.policy) &&
      sameValue(r.acceptanceCriteria, d.acceptanceCriteria) &&
      sameValue(r.artifactHash, d.artifactHash) &&
      sameValue(r.charterVersion, d.charterVersion) &&
      sameValue(r.decidedAt, d.at);
    if (!same || typeof r.hash !== 'string' || hashRecord(r) !== r.hash) return false;
    return this.passed(id, r.hash, position, s);
  }

  /** A tool approval's record (rarer than reviews): its payload's canonical JSON against the event's. */
  private tryPairApproval(e: DecisionEvent, r: DecisionRecord, s: number): boolean {
    const payload = payloadOf(e);
    const id = payload.decisionId;
    if (typeof id !== 'string' || r.decisionId !== id || this.ids.has(id)) return false;
    if (r.seq !== s || r.prevHash !== this.prevHash || r.position !== e.position) return false;
    if (payloadJson(r) !== payloadJson(payload) || typeof r.hash !== 'string' || hashRecord(r) !== r.hash) return false;
    return this.passed(id, r.hash, e.position, s);
  }

  private passed(id: string, hash: string, position: number, s: number): true {
    this.ids.add(id);
    this.prevHash = hash;
    this.prevPosition = position;
    this.checked = s;
    return true;
  }
}


/**
 * The in-order check over whole sequences: `verifyChain(records, expectationFrom(events,
 * upToPosition))` when that is ok, else undefined (the complete check must decide).
 */
export function verifyInOrder(events: Iterable<DecisionEvent>, records: Iterable<DecisionRecord>, upToPosition?: number): ChainVerification | undefined {
  const check = new InOrderCheck(upToPosition);
  const stored = records[Symbol.iterator]();
  for (const e of events) {
    if (upToPosition !== undefined && e.position > upToPosition) continue;
    const next = stored.next();
    if (next.done || !check.pair(e, next.value)) return undefined;
  }
  for (let next = stored.next(); !next.done; next = stored.next()) if (!check.beyond(next.value)) return undefined;
  return check.result();
}
