import { hash } from 'node:crypto';
import { canonicalJson } from '../../shared/canonical-json';
import { parseReviewId } from '../../team/domain/review-id';
import { parseApprovalId } from '../../team/domain/approval-id';
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
export function runIdOf(event: DecisionEvent, d: { reviewId?: string; approvalId?: string }): string {
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
export const sha256 = (text: string): string => hash('sha256', text, 'hex');

const contentJson = canonicalOf(CONTENT_KEYS);
export const payloadJson = canonicalOf(PAYLOAD_KEYS);

const SORTED_CONTENT = [...CONTENT_KEYS].sort().map((key) => ({ key, prefix: `${JSON.stringify(key)}:`, chain: key === 'seq' || key === 'prevHash' }));

/**
 * Both canonical texts of a record in one pass: its payload's (what the event says) and its
 * content's (what its hash covers). The sorted content keys are the sorted payload keys with
 * `prevHash` and `seq` among them, so one walk builds both.
 */
export function payloadAndContentJson(r: DecisionRecordContent): [string, string] {
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

/** A review record holds none of a tool approval's fields (one put there by hand is a change). */
export function hasNoApprovalFields(r: DecisionPayload): boolean {
  return r.kind === undefined && r.approvalId === undefined && r.toolName === undefined && r.inputHash === undefined && r.risk === undefined && r.role === undefined && r.turn === undefined;
}
