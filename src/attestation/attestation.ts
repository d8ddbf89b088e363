import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { canonicalJson } from '../shared/canonical-json';

/**
 * Attestations: the server's Ed25519 signature on an event it writes (every decision, every key
 * registration) and on every head of the decision log it hands out. Pure but for node's crypto.
 *
 * Why triad's own: the signed text is triad's (a context string, the event type, the canonical JSON
 * of the data without its attestation) and Ed25519 is node's; there is nothing between the two a
 * library would add. The key itself never enters the store: only its public half and its id do.
 *
 * What an attestation proves: a holder of that private key — a triad process that checked the
 * decider's credential — wrote exactly this data. A store writer without the key can append a
 * decision but cannot make its attestation; a copy moved to another decision fails, because the
 * data (review or approval id, outcome, reason, decider …) is what is signed.
 */

export interface Attestation {
  /** Id of the signing key: `srv_` and 16 hex of the sha256 of its public key (SPKI DER). */
  keyId: string;
  /** Ed25519 signature, base64. */
  sig: string;
}

/** The event types a triad process attests when it writes them. */
export const ATTESTED_EVENT_TYPES: ReadonlySet<string> = new Set([
  'ReviewDecided',
  'ToolApprovalDecided',
  'ApiKeyAdded',
  'ApiKeyReplaced',
  'PublicKeyRegistered',
  'PublicKeyRevoked',
  'SigningKeyRegistered',
  'SigningKeyRevoked',
]);

/** Why an attestation does not hold. */
export type AttestationProblem = 'unsigned' | 'bad_signature' | 'unknown_signer' | 'revoked_signer';

const EVENT_CONTEXT = 'triad-attestation-v1';
const HEAD_CONTEXT = 'triad-head-v1';

/** A public signing key the verifier knows, and since when it is revoked (a store position), if it is. */
export interface KnownKey {
  keyId: string;
  key: KeyObject;
  /** Events at or after this position signed by the key are `revoked_signer`. */
  revokedFrom?: number;
}

/** The text an event's attestation signs: context, type and the canonical JSON of the data without `attestation`. */
export function attestedText(type: string, data: unknown): string {
  const { attestation: _a, ...rest } = (data ?? {}) as Record<string, unknown>;
  // As stored: JSON drops undefined fields, and what is read back must sign the same.
  return `${EVENT_CONTEXT}\n${type}\n${canonicalJson(JSON.parse(JSON.stringify(rest)))}`;
}

export function keyIdOf(publicKey: KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return `srv_${createHash('sha256').update(der).digest('hex').slice(0, 16)}`;
}

/** A public key as text (base64 of its SPKI DER): how keys are registered, served and bundled. */
export function publicKeyText(publicKey: KeyObject): string {
  return publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
}

export class InvalidPublicKeyError extends Error {
  override readonly name = 'InvalidPublicKeyError';
}

/** Parses publicKeyText (or a PEM SPKI); only Ed25519 keys are signing keys. */
export function parsePublicKey(text: string): KeyObject {
  let key: KeyObject;
  try {
    key = text.includes('-----BEGIN') ? createPublicKey(text) : createPublicKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'spki' });
  } catch {
    throw new InvalidPublicKeyError('not a public key (base64 of an SPKI DER, or PEM)');
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new InvalidPublicKeyError(`a signing key is Ed25519, not ${key.asymmetricKeyType ?? 'unknown'}`);
  return key;
}

/** The server's signing key: its private half and what others know of it. */
export class Signer {
  readonly keyId: string;
  readonly publicKey: KeyObject;

  constructor(private readonly privateKey: KeyObject) {
    if (privateKey.asymmetricKeyType !== 'ed25519') throw new InvalidPublicKeyError('the signing key must be Ed25519');
    this.publicKey = createPublicKey(privateKey);
    this.keyId = keyIdOf(this.publicKey);
  }

  static fromPem(pem: string): Signer {
    return new Signer(createPrivateKey(pem));
  }

  /** A raw Ed25519 signature (base64) of bytes whose context the caller fixed (a bundle's). */
  sign(bytes: Buffer): string {
    return sign(null, bytes, this.privateKey).toString('base64');
  }

  attest(type: string, data: unknown): Attestation {
    return { keyId: this.keyId, sig: sign(null, Buffer.from(attestedText(type, data)), this.privateKey).toString('base64') };
  }

  signHead(head: { seq: number; hash: string; at: string }): SignedHead {
    const unsigned = { seq: head.seq, hash: head.hash, at: head.at, keyId: this.keyId };
    return { ...unsigned, sig: sign(null, Buffer.from(headText(unsigned)), this.privateKey).toString('base64') };
  }
}

/** An event's attestation against the keys a verifier knows; undefined when it holds. */
export function attestationProblem(type: string, data: unknown, position: number, keys: ReadonlyMap<string, KnownKey>): AttestationProblem | undefined {
  const attestation = (data as { attestation?: unknown } | null)?.attestation;
  if (!isAttestation(attestation)) return 'unsigned';
  const known = keys.get(attestation.keyId);
  if (!known) return 'unknown_signer';
  let ok = false;
  try {
    const sig = signatureBytes(attestation.sig);
    ok = sig !== undefined && verify(null, Buffer.from(attestedText(type, data)), known.key, sig);
  } catch {
    ok = false; // text canonicalJson refuses, or a signature of the wrong length: not a valid signature either way
  }
  if (!ok) return 'bad_signature';
  if (known.revokedFrom !== undefined && position >= known.revokedFrom) return 'revoked_signer';
  return undefined;
}

/**
 * A signature's bytes from its base64, only when the text is the canonical base64 of them: base64
 * leaves the last character's low bits unused, and a signature that verifies under two spellings
 * would let a record's bytes change while it still verifies.
 */
export function signatureBytes(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : undefined;
}

function isAttestation(v: unknown): v is Attestation {
  return typeof v === 'object' && v !== null && typeof (v as Attestation).keyId === 'string' && typeof (v as Attestation).sig === 'string';
}

/** A head of the decision log (the last record's seq and hash) as a server signed it, at a time. */
export interface SignedHead {
  seq: number;
  hash: string;
  at: string;
  keyId: string;
  sig: string;
}

function headText(h: { seq: number; hash: string; at: string; keyId: string }): string {
  return `${HEAD_CONTEXT}\n${h.seq}\n${h.hash}\n${h.at}\n${h.keyId}`;
}

/** Whether a signed head was signed by one of the keys (revocation does not undo a head signed before it). */
export function signedHeadProblem(head: SignedHead, keys: ReadonlyMap<string, KnownKey>): 'bad_signature' | 'unknown_signer' | undefined {
  const known = keys.get(head.keyId);
  if (!known) return 'unknown_signer';
  try {
    const sig = signatureBytes(head.sig);
    return sig !== undefined && verify(null, Buffer.from(headText(head)), known.key, sig) ? undefined : 'bad_signature';
  } catch {
    return 'bad_signature'; // a signature that is not Ed25519's length
  }
}

export function isSignedHead(v: unknown): v is SignedHead {
  const h = v as SignedHead;
  return typeof v === 'object' && v !== null && Number.isSafeInteger(h.seq) && h.seq >= 0 && typeof h.hash === 'string' && /^[0-9a-f]{64}$/.test(h.hash) && typeof h.at === 'string' && typeof h.keyId === 'string' && typeof h.sig === 'string';
}

/** A signed head as one line of text an auditor keeps (`triad decisions head`, `--since`). */
export function signedHeadToken(head: SignedHead): string {
  return Buffer.from(JSON.stringify(head)).toString('base64url');
}

export function parseSignedHeadToken(text: string): SignedHead | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    return isSignedHead(v) ? { seq: v.seq, hash: v.hash, at: v.at, keyId: v.keyId, sig: v.sig } : undefined;
  } catch {
    return undefined; // not a token: the caller says what it expected
  }
}
