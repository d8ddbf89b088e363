import { verify } from 'node:crypto';
import { canonicalJson } from '../shared/canonical-json';
import { expectationFrom, verifyChain, type ChainVerification } from '../review-gate/decision-log/chain-verification';
import { DECISION_EVENT_TYPES, type DecisionRecord } from '../review-gate/decision-log/decision-record';
import { isRecorded } from '../review-gate/decision-log/decision-log.projection';
import { ATTESTED_EVENT_TYPES, isSignedHead, signatureBytes, signedHeadProblem, type Attestation, type KnownKey, type SignedHead, type Signer } from './attestation';
import { checkAttestations, type AttestationReport, type CheckedEvent } from './attestation-check';
import { KeyTrust } from './decision-trust';
import { foldKeyRing, knownKey, SIGNING_KEYS_STREAM, type SigningKeyRegisteredData } from './key-ring';
import type { WebAuthnVerifier } from './personal-signature';

/**
 * A decision bundle: everything an auditor needs to check the decision log with no store and no
 * configuration — the records, the events they rest on (decisions, key registrations), a signed
 * head, the signing keys — in one file of canonical JSON, signed as a whole by the exporting
 * server. Verifying it needs node alone (and, for passkey signatures, the WebAuthn verifier).
 *
 * The file is exactly `canonicalJson(bundle) + "\n"`: a reader refuses any other text, so a change
 * of any byte either breaks the JSON, changes what the signatures cover, or leaves text that is not
 * canonical — each a failed verification.
 */

export const BUNDLE_FORMAT = 'triad-decision-bundle/1';
const BUNDLE_CONTEXT = 'triad-bundle-v1';

export interface BundleEvent {
  id: string;
  type: string;
  streamId: string;
  revision: number;
  position: number;
  data: unknown;
}

export interface DecisionBundle {
  format: typeof BUNDLE_FORMAT;
  exportedAt: string;
  /** The log's head as the exporting server signed it (its last record). */
  head: SignedHead;
  /** Tool approvals recorded after this position (before it, the log did not record them). */
  approvalsFrom: number;
  records: DecisionRecord[];
  /** Decision events, and the API-key and signing-key events (registrations, revocations), in store order. */
  events: BundleEvent[];
  /** The exporting server's signature on everything above. */
  signature?: Attestation;
}

export function bundleSignedText(bundle: DecisionBundle): string {
  const { signature: _s, ...rest } = bundle;
  return `${BUNDLE_CONTEXT}\n${canonicalJson(rest)}`;
}

export function signBundle(bundle: DecisionBundle, signer: Signer): string {
  const signed: DecisionBundle = { ...bundle, signature: { keyId: signer.keyId, sig: signer.sign(Buffer.from(bundleSignedText(bundle))) } };
  return `${canonicalJson(signed)}\n`;
}

export interface BundleVerification {
  ok: boolean;
  /** Why the file could not be read as a bundle at all. */
  unreadable?: string;
  /** Which keys were trusted: `pinned` (the --since head's signer or --trust keys), or `self` (the bundle's own registrations: proves consistency, not origin). */
  trust?: 'pinned' | 'self';
  signature?: 'ok' | 'bad_signature' | 'unknown_signer' | 'missing';
  head?: { seq: number; hash: string; problem?: string };
  chain?: ChainVerification;
  attestations?: AttestationReport;
  since?: { seq: number; hash: string; extends: boolean; detail?: string };
  /** Decisions verified against their events, and by whom signed. */
  records: number;
}

/**
 * Verifies a bundle's text. `since`: a signed head the auditor kept; the bundle must still hold
 * that record, intact, at its seq. `trust`: public keys the auditor trusts (base64 SPKI).
 */
export async function verifyBundle(text: string, options: { since?: SignedHead; trust?: string[]; webauthn: WebAuthnVerifier }): Promise<BundleVerification> {
  try {
    return await verifyBundleText(text, options);
  } catch (err) {
    // A well-formed file of the wrong shape somewhere deep (a field renamed): not a bundle.
    return { ok: false, unreadable: `malformed: ${(err as Error).message}`, records: 0 };
  }
}

const isEvent = (e: unknown): e is BundleEvent => {
  const v = e as BundleEvent;
  return typeof e === 'object' && e !== null && typeof v.id === 'string' && typeof v.type === 'string' && typeof v.streamId === 'string' && Number.isSafeInteger(v.revision) && Number.isSafeInteger(v.position) && typeof v.data === 'object' && v.data !== null;
};

async function verifyBundleText(text: string, options: { since?: SignedHead; trust?: string[]; webauthn: WebAuthnVerifier }): Promise<BundleVerification> {
  const fail = (unreadable: string): BundleVerification => ({ ok: false, unreadable, records: 0 });
  let bundle: DecisionBundle;
  try {
    bundle = JSON.parse(text) as DecisionBundle;
  } catch {
    return fail('not JSON');
  }
  let canonical: string;
  try {
    canonical = `${canonicalJson(bundle)}\n`;
  } catch (err) {
    return fail(`not canonical JSON: ${(err as Error).message}`);
  }
  if (canonical !== text) return fail('not the canonical text of a bundle (a byte was changed, added or removed)');
  if (bundle.format !== BUNDLE_FORMAT || !Array.isArray(bundle.records) || !Array.isArray(bundle.events) || !isSignedHead(bundle.head) || !Number.isSafeInteger(bundle.approvalsFrom)) {
    return fail(`not a ${BUNDLE_FORMAT} file`);
  }
  if (!bundle.events.every(isEvent)) return fail('an event of the bundle is not {id, type, streamId, revision, position, data}');
  if (!bundle.records.every((r) => typeof r === 'object' && r !== null)) return fail('a record of the bundle is not an object');
  const events = bundle.events as CheckedEvent[];
  const signingEvents = events.filter((e) => e.streamId === SIGNING_KEYS_STREAM);

  // The trust: keys the auditor pinned (their own, or a kept head's signer), else the bundle's own.
  const anchors: KnownKey[] = [];
  for (const t of options.trust ?? []) {
    const k = knownKey(t);
    if (!k) return fail(`--trust ${t.slice(0, 16)}… is not an Ed25519 public key`);
    anchors.push(k);
  }
  let pinned = anchors.length > 0;
  if (options.since) {
    const reg = signingEvents.find((e) => e.type === 'SigningKeyRegistered' && (e.data as SigningKeyRegisteredData).keyId === options.since!.keyId);
    const k = reg ? knownKey((reg.data as SigningKeyRegisteredData).publicKey) : undefined;
    // The kept head must have been signed by the key the bundle registers under that id.
    if (k && k.keyId === options.since.keyId && signedHeadProblem(options.since, new Map([[k.keyId, k]])) === undefined) {
      anchors.push(k);
      pinned = true;
    } else {
      return { ok: false, records: 0, since: { seq: options.since.seq, hash: options.since.hash, extends: false, detail: 'the kept head is not signed by a key this bundle registers' } };
    }
  }
  if (!pinned) {
    for (const e of signingEvents) {
      if (e.type !== 'SigningKeyRegistered') continue;
      const k = knownKey((e.data as SigningKeyRegisteredData).publicKey);
      if (k && (e.data as { attestation?: Attestation }).attestation?.keyId === k.keyId) anchors.push(k);
    }
  }
  const ring = foldKeyRing(anchors, signingEvents);
  const trust = new KeyTrust(ring.keys, ring.signingSince ?? 0);
  const result: BundleVerification = { ok: true, trust: pinned ? 'pinned' : 'self', records: bundle.records.length };

  // The bundle's own signature.
  const sig = bundle.signature;
  const key = sig ? ring.keys.get(sig.keyId) : undefined;
  result.signature = !sig ? 'missing' : !key ? 'unknown_signer' : safeVerify(bundleSignedText(bundle), key, sig.sig) ? 'ok' : 'bad_signature';
  if (result.signature !== 'ok') result.ok = false;

  // The chain, against the decision events.
  const decisionEvents = events.filter((e) => DECISION_EVENT_TYPES.includes(e.type) && isRecorded(e, bundle.approvalsFrom));
  const upTo = decisionEvents.length > 0 ? decisionEvents[decisionEvents.length - 1].position : 0;
  result.chain = verifyChain(bundle.records, expectationFrom(decisionEvents, upTo));
  if (!result.chain.ok) result.ok = false;

  // The head: signed by a trusted key, and the last record.
  const last = bundle.records[bundle.records.length - 1];
  const head = bundle.head;
  const headProblem = signedHeadProblem(head, ring.keys) ?? (head.seq !== (last?.seq ?? 0) || (last !== undefined && head.hash !== last.hash) ? 'not the last record' : undefined);
  result.head = { seq: head.seq, hash: head.hash, ...(headProblem ? { problem: headProblem } : {}) };
  if (headProblem) result.ok = false;

  // Attestations and personal signatures.
  result.attestations = await checkAttestations(
    events.filter((e) => ATTESTED_EVENT_TYPES.has(e.type)),
    trust,
    options.webauthn,
  );
  if (!result.attestations.ok) result.ok = false;

  if (options.since) {
    const at = bundle.records.find((r) => r.seq === options.since!.seq);
    const extends_ = at !== undefined && at.hash === options.since.hash && result.chain.ok;
    result.since = {
      seq: options.since.seq,
      hash: options.since.hash,
      extends: extends_,
      ...(extends_ ? {} : { detail: at ? (at.hash !== options.since.hash ? `record ${at.seq} has another hash: the log was rewritten` : 'the chain is not intact') : `no record ${options.since.seq}: the log was truncated` }),
    };
    if (!extends_) result.ok = false;
  }
  return result;
}

function safeVerify(text: string, key: KnownKey, sig: string): boolean {
  try {
    const bytes = signatureBytes(sig);
    return bytes !== undefined && verify(null, Buffer.from(text), key.key, bytes);
  } catch {
    return false; // a signature of the wrong length or encoding
  }
}
