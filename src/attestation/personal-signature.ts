import { createHash } from 'node:crypto';
import { canonicalJson } from '../shared/canonical-json';
import { sshSignatureProblem, sshKeyFingerprint } from './ssh-signature';

/**
 * A person's own signature on a decision: what they saw and decided, bound to their key, so
 * that neither the server nor a store writer can make it for them. Pure.
 *
 * The signed text is the decision's *statement*: its subject (the review, its run and iteration,
 * the artifact's hash; or the tool approval, its run and the call input's hash), the outcome and
 * the reason. The statement exists before the decision (the person signs, then the server records),
 * so the decision's own id and time are not in it; the server attests those.
 *
 * Two kinds: `ssh`, an SSH signature (`ssh-keygen -Y sign -n triad-decision`, as git signs
 * commits: ssh-agent and keys held elsewhere work), and `webauthn`, a passkey's assertion whose
 * challenge is the statement's sha256.
 */

export const SSH_NAMESPACE = 'triad-decision';

export type DecisionStatement =
  | { kind: 'review'; runId: string; reviewId: string; iteration: number; artifactHash: string; outcome: 'approved' | 'rejected'; reason: string }
  | { kind: 'tool_approval'; runId: string; approvalId: string; inputHash: string; outcome: 'approved' | 'rejected'; reason: string };

/** The statement as signed: one line of canonical JSON. */
export function statementText(s: DecisionStatement): string {
  return canonicalJson(s);
}

/** sha256 of the statement text: a passkey's challenge. */
export function statementHash(s: DecisionStatement): Buffer {
  return createHash('sha256').update(statementText(s)).digest();
}

export interface SshSignature {
  type: 'ssh';
  /** The armored SSHSIG (`-----BEGIN SSH SIGNATURE-----` …). */
  signature: string;
}

export interface WebAuthnSignature {
  type: 'webauthn';
  /** The credential's id (base64url), and the assertion's parts (base64url), as the browser returns them. */
  credentialId: string;
  authenticatorData: string;
  clientDataJSON: string;
  signature: string;
  userHandle?: string;
}

export type PersonalSignature = SshSignature | WebAuthnSignature;

/** A person's registered public key. */
export type PersonalKey =
  | { type: 'ssh'; keyId: string; publicKey: string }
  | {
      type: 'webauthn';
      /** The credential id (base64url). */
      keyId: string;
      /** The COSE public key (base64url). */
      publicKey: string;
      rpId: string;
      origins: string[];
      /** The authenticator's signature counter at enrolment. */
      counter: number;
      transports?: string[];
    };

/** A registered key with whose it is and whether it is revoked (from a store position on). */
export interface RegisteredPersonalKey {
  name: string;
  key: PersonalKey;
  revokedFrom?: number;
}

export type PersonalSignatureProblem = 'bad_signature' | 'unknown_signer' | 'revoked_signer';

/** The key a signature names: an SSH signature's fingerprint, a passkey's credential id. */
export function signatureKeyId(sig: PersonalSignature): string | undefined {
  if (sig.type === 'webauthn') return sig.credentialId;
  return sshKeyFingerprint(sig.signature);
}

export interface WebAuthnVerifier {
  (sig: WebAuthnSignature, challenge: Buffer, key: Extract<PersonalKey, { type: 'webauthn' }>): Promise<boolean>;
}

/**
 * Checks a person's signature on a statement against the keys registered to `name`. The WebAuthn
 * check is given (it lives with the passkey code); SSH is checked here.
 */
export async function personalSignatureProblem(
  sig: PersonalSignature,
  statement: DecisionStatement,
  name: string,
  keys: readonly RegisteredPersonalKey[],
  position: number,
  webauthn: WebAuthnVerifier,
): Promise<PersonalSignatureProblem | undefined> {
  const keyId = signatureKeyId(sig);
  if (keyId === undefined) return 'bad_signature';
  const registered = keys.find((k) => k.name === name && k.key.keyId === keyId && k.key.type === sig.type);
  if (!registered) return 'unknown_signer';
  let ok: boolean;
  if (sig.type === 'ssh' && registered.key.type === 'ssh') ok = sshSignatureProblem(sig.signature, registered.key.publicKey, SSH_NAMESPACE, Buffer.from(statementText(statement))) === undefined;
  else if (sig.type === 'webauthn' && registered.key.type === 'webauthn') ok = await webauthn(sig, statementHash(statement), registered.key);
  else ok = false;
  if (!ok) return 'bad_signature';
  if (registered.revokedFrom !== undefined && position >= registered.revokedFrom) return 'revoked_signer';
  return undefined;
}

export function isPersonalSignature(v: unknown): v is PersonalSignature {
  if (typeof v !== 'object' || v === null) return false;
  const s = v as Record<string, unknown>;
  if (s.type === 'ssh') return typeof s.signature === 'string' && s.signature.length <= 16_384;
  if (s.type === 'webauthn') {
    const parts = [s.credentialId, s.authenticatorData, s.clientDataJSON, s.signature];
    return parts.every((p) => typeof p === 'string' && /^[A-Za-z0-9_-]{1,8192}$/.test(p)) && (s.userHandle === undefined || typeof s.userHandle === 'string');
  }
  return false;
}
