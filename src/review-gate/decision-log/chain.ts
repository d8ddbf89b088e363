import { hash } from 'node:crypto';
import { canonicalJson } from '../../shared/canonical-json';
import { parseReviewId } from '../../team/domain/review-id';
import { parseApprovalId } from '../../team/approvals/approval-id';
import { RUN_STREAM_PREFIX, type ReviewDecidedData, type ToolApprovalDecidedData } from '../../team/domain/run-events';
import {
  APPROVAL_DECISION_EVENT_TYPE,
  DECISION_EVENT_TYPE,
  DECISION_RECORD_FIELDS,
  GENESIS_PREV_HASH,
  type DecisionPayload,
  type DecisionRecord,
  type DecisionRecordContent,
} from './decision-record';

/**
 * The decision log's hash chain, pure: building a record from a decision event, hashing it, and
 * verifying a sequence of stored records — on its own (the links) and against the decision
 * events of the store (what each record must say, and how many there must be).
 */

/** The part of a recorded event a record is made from. */
export interface DecisionEvent {
  type: string;
  streamId: string;
  position: number;
  data: unknown;
  metadata?: { runId?: string };
}

export class NotADecisionEventError extends Error {
  override readonly name = 'NotADecisionEventError';
}

/** The run of a decision event: from its stream `run-<runId>`, else its metadata, else its review or approval id. */
function runIdOf(event: DecisionEvent, d: { reviewId?: string; approvalId?: string }): string {
  if (event.streamId.startsWith(RUN_STREAM_PREFIX)) return event.streamId.slice(RUN_STREAM_PREFIX.length);
  if (event.metadata?.runId !== undefined) return event.metadata.runId;
  return (typeof d.reviewId === 'string' ? parseReviewId(d.reviewId)?.runId : undefined) ?? (typeof d.approvalId === 'string' ? parseApprovalId(d.approvalId)?.runId : undefined) ?? '';
}

export function payloadOf(event: DecisionEvent): DecisionPayload {
  if (event.type === APPROVAL_DECISION_EVENT_TYPE) return approvalPayloadOf(event);
  if (event.type !== DECISION_EVENT_TYPE) throw new NotADecisionEventError(`a decision record is made from a ${DECISION_EVENT_TYPE} or ${APPROVAL_DECISION_EVENT_TYPE} event, not ${event.type}`);
  const d = event.data as ReviewDecidedData;
  return {
    decisionId: d.decisionId,
    runId: runIdOf(event, d),
    reviewId: d.reviewId,
    iteration: d.iteration,
    executor: d.executor,
    decider: d.decider,
    deciderKind: d.deciderKind,
    outcome: d.outcome,
    reason: d.reason,
    ...(d.policy !== undefined ? { policy: d.policy } : {}),
    acceptanceCriteria: [...d.acceptanceCriteria],
    artifactHash: d.artifactHash,
    charterVersion: d.charterVersion,
    decidedAt: d.at,
    position: event.position,
  };
}

/**
 * A tool approval's record: its approval id is its decision id (one decision per approval). The
 * input's hash and the risk are absent when the event predates them.
 */
function approvalPayloadOf(event: DecisionEvent): DecisionPayload {
  const d = event.data as ToolApprovalDecidedData;
  const runId = runIdOf(event, d);
  return {
    kind: 'tool_approval',
    decisionId: d.approvalId,
    runId,
    executor: `agent:${d.role}:${runId}`,
    decider: d.decider,
    deciderKind: d.deciderKind,
    outcome: d.outcome,
    reason: d.reason,
    ...(d.policy !== undefined ? { policy: d.policy } : {}),
    approvalId: d.approvalId,
    toolName: d.name,
    ...(d.inputHash !== undefined ? { inputHash: d.inputHash } : {}),
    ...(d.risk !== undefined ? { risk: d.risk } : {}),
    role: d.role,
    turn: d.turn,
    decidedAt: d.at,
    position: event.position,
  };
}

/** The record of a decision event, chained after `prev` (the genesis record when there is none). */
export function recordFrom(event: DecisionEvent, prev: DecisionRecord | null | undefined): DecisionRecord {
  const content: DecisionRecordContent = {
    ...payloadOf(event),
    seq: prev ? prev.seq + 1 : 1,
    prevHash: prev ? prev.hash : GENESIS_PREV_HASH,
  };
  return { ...content, hash: hashRecord(content) };
}

/** What a decision says: every field of its record but its place in the chain and its hash. */
const PAYLOAD_KEYS: ReadonlyArray<keyof DecisionPayload> = DECISION_RECORD_FIELDS.filter(
  (k): k is keyof DecisionPayload & (typeof DECISION_RECORD_FIELDS)[number] => k !== 'seq' && k !== 'prevHash' && k !== 'hash',
);
/** What a record's hash covers: every field but the hash. */
const CONTENT_KEYS: ReadonlyArray<keyof DecisionRecordContent> = DECISION_RECORD_FIELDS.filter((k): k is Exclude<typeof k, 'hash'> => k !== 'hash');

/**
 * canonicalJson of exactly the given keys of an object: keys sorted, undefined values left out,
 * the record's usual value types (strings, finite numbers, arrays of strings) encoded directly and
 * anything else through canonicalJson — so the text is the same as canonicalJson of an object
 * holding only those keys, without walking it generically (verification hashes every record
 * twice; this keeps it well above 100,000 records/s).
 */
function canonicalOf(keys: readonly string[]): (value: object) => string {
  const sorted = [...keys].sort().map((k) => ({ key: k, prefix: `${JSON.stringify(k)}:` }));
  return (value) => {
    let out = '{';
    let first = true;
    for (const { key, prefix } of sorted) {
      const v = (value as Record<string, unknown>)[key];
      if (v === undefined) continue;
      out += (first ? prefix : `,${prefix}`) + encode(v);
      first = false;
    }
    return `${out}}`;
  };
}

/**
 * Strings JSON.stringify writes as they are between quotes: no quote, backslash, control character
 * or surrogate (a lone one is escaped; a pair is left to JSON.stringify too). Testing for them is
 * about twice as fast as JSON.stringify, and nearly every string of a record is such a string.
 */
const PLAIN = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

const quote = (s: string): string => (PLAIN.test(s) ? `"${s}"` : JSON.stringify(s));

function encode(v: unknown): string {
  if (typeof v === 'string') return quote(v);
  // A finite number's JSON text is its string form (-0 included: both are "0").
  if (typeof v === 'number' && Number.isFinite(v)) return `${v}`;
  if (Array.isArray(v)) {
    let out = '[';
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (typeof x !== 'string') return canonicalJson(v);
      out += i === 0 ? quote(x) : `,${quote(x)}`;
    }
    return `${out}]`;
  }
  return canonicalJson(v);
}

/** sha256 hex, one-shot (crypto.hash, Node ≥ 20.12): no Hash object per record. Same digest as sha256Hex. */
const sha256 = (text: string): string => hash('sha256', text, 'hex');

const contentJson = canonicalOf(CONTENT_KEYS);
const payloadJson = canonicalOf(PAYLOAD_KEYS);

const SORTED_CONTENT = [...CONTENT_KEYS].sort().map((key) => ({ key, prefix: `${JSON.stringify(key)}:`, chain: key === 'seq' || key === 'prevHash' }));

/**
 * Both canonical texts of a record in one pass: its payload's (what the event says) and its
 * content's (what its hash covers). The sorted content keys are the sorted payload keys with
 * `prevHash` and `seq` among them, so one walk builds both.
 */
function payloadAndContentJson(r: DecisionRecordContent): [string, string] {
  let payload = '{';
  let content = '{';
  for (const { key, prefix, chain } of SORTED_CONTENT) {
    const v = (r as unknown as Record<string, unknown>)[key];
    if (v === undefined) continue;
    const entry = prefix + encode(v);
    content += content.length === 1 ? entry : `,${entry}`;
    if (!chain) payload += payload.length === 1 ? entry : `,${entry}`;
  }
  return [`${payload}}`, `${content}}`];
}

/**
 * The canonical JSON of a record's content (what `hashRecord` hashes) when every field holds its
 * usual type — strings, finite numbers, an array of strings, no policy or a string — and no
 * string but the criteria needs escaping (one test over all of them); else undefined (then
 * `contentJson` encodes it field by field). A fixed template, no walk over the keys: this is most of
 * the in-order check's own cost, and of building records.
 */
function usualContentJson(r: DecisionRecordContent): string | undefined {
  // Only a review record's fields are in the template: any other field present (a tool approval's,
  // or one added by hand) must be hashed field by field.
  if (!hasNoApprovalFields(r)) return undefined;
  const { acceptanceCriteria: criteria, iteration, position, seq, policy } = r;
  const strings = [r.artifactHash, r.charterVersion, r.decidedAt, r.decider, r.deciderKind, r.decisionId, r.executor, r.outcome, r.prevHash, r.reason, r.reviewId, r.runId];
  for (const v of strings) if (typeof v !== 'string') return undefined;
  if (policy !== undefined && typeof policy !== 'string') return undefined;
  if (!Number.isFinite(iteration) || !Number.isFinite(position) || !Number.isFinite(seq) || !Array.isArray(criteria)) return undefined;
  let list = '';
  for (let i = 0; i < criteria.length; i++) {
    const c: unknown = criteria[i];
    if (typeof c !== 'string') return undefined;
    list += i === 0 ? quote(c) : `,${quote(c)}`;
  }
  if (!PLAIN.test(strings.join('') + (policy ?? ''))) return undefined;
  return (
    `{"acceptanceCriteria":[${list}],"artifactHash":"${r.artifactHash}","charterVersion":"${r.charterVersion}","decidedAt":"${r.decidedAt}",` +
    `"decider":"${r.decider}","deciderKind":"${r.deciderKind}","decisionId":"${r.decisionId}","executor":"${r.executor}","iteration":${iteration},` +
    `"outcome":"${r.outcome}"${policy === undefined ? '' : `,"policy":"${policy}"`},"position":${position},"prevHash":"${r.prevHash}",` +
    `"reason":"${r.reason}","reviewId":"${r.reviewId}","runId":"${r.runId}","seq":${seq}}`
  );
}

/**
 * sha256 (hex) of the canonical JSON of a record's content: every field but `hash`, prevHash
 * included. Fields outside the record's schema are not part of the content (so a whole record
 * may be passed).
 */
export function hashRecord(content: DecisionRecordContent): string {
  return sha256(usualContentJson(content) ?? contentJson(content));
}

/** The canonical JSON text `hashRecord` hashes (for tests and tools that re-hash independently). */
export function canonicalContent(content: DecisionRecordContent): string {
  return usualContentJson(content) ?? contentJson(content);
}

/** Hash of what a decision says (no seq, no links): the same for a record and for its event. */
export function payloadHash(payload: DecisionPayload): string {
  return sha256(payloadJson(payload));
}

export function contentOf(record: DecisionRecord): DecisionRecordContent {
  const { hash: _hash, ...content } = record;
  return content;
}

// ---------------------------------------------------------------------------------------------
// Verification

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
    byDecisionId.set(id, expected);
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

/** A review record holds none of a tool approval's fields (one put there by hand is a change). */
function hasNoApprovalFields(r: DecisionPayload): boolean {
  return r.kind === undefined && r.approvalId === undefined && r.toolName === undefined && r.inputHash === undefined && r.risk === undefined && r.role === undefined && r.turn === undefined;
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
