import { attestationProblem, InvalidPublicKeyError, keyIdOf, parsePublicKey, type Attestation, type KnownKey } from './attestation';

/**
 * The server keys a verifier trusts, folded from the store's `signing-keys` stream. Pure.
 *
 * A key is trusted when the verifier knows it already (its own, TRIAD_TRUSTED_KEYS, or a key an
 * auditor pinned), or when a trusted key attested its registration. A process registers its own
 * key on first start, attested by itself: a record of which keys signed, not a grant of trust. A
 * revocation attested by a trusted key makes the key's later attestations `revoked_signer`.
 */

export const SIGNING_KEYS_STREAM = 'signing-keys';

export interface SigningKeyRegisteredData {
  keyId: string;
  /** base64 of the SPKI DER (publicKeyText). */
  publicKey: string;
  /** Who registered it: `server` for a process's own key, else `user:<name>`. */
  registeredBy: string;
  /** The host the registering process ran on (for operators; not part of trust). */
  host?: string;
  /**
   * The store's head position when this key first signed in it (a process's own registration):
   * events up to it are from before the store's signing began. Signed, so no store writer moves it.
   */
  storeHead?: number;
  at: string;
  attestation?: Attestation;
}

export interface SigningKeyRevokedData {
  keyId: string;
  reason: string;
  revokedBy: string;
  at: string;
  attestation?: Attestation;
}

export type SigningKeyEvent = { type: 'SigningKeyRegistered'; data: SigningKeyRegisteredData } | { type: 'SigningKeyRevoked'; data: SigningKeyRevokedData };

export interface KeyRing {
  keys: Map<string, KnownKey>;
  /** Registrations seen, trusted or not (for `decisions keys` and bundles). */
  registered: Array<{ keyId: string; publicKey: string; registeredBy: string; trusted: boolean; revokedFrom?: number; position: number; at: string; host?: string }>;
  /**
   * The first position after which every decision must be attested: after the lowest `storeHead`
   * a trusted registration signed (undefined: no trusted key registered one).
   */
  signingSince?: number;
}

/** A known key from its text; undefined when it is not an Ed25519 public key. */
export function knownKey(publicKey: string): KnownKey | undefined {
  try {
    const key = parsePublicKey(publicKey);
    return { keyId: keyIdOf(key), key };
  } catch (err) {
    if (err instanceof InvalidPublicKeyError) return undefined;
    throw err;
  }
}

export function foldKeyRing(anchors: Iterable<KnownKey>, events: Iterable<{ type: string; data: unknown; position: number; revision: number }>): KeyRing {
  const keys = new Map<string, KnownKey>();
  for (const k of anchors) keys.set(k.keyId, { ...k });
  const ring: KeyRing = { keys, registered: [] };
  const list = [...events];
  // Trust spreads in both directions of time: a registration attested by a key registered later
  // (and trusted then) is trusted too, so the stream is folded until nothing more is learnt.
  for (let changed = true; changed; ) {
    changed = false;
    for (const e of list) {
      if (e.type !== 'SigningKeyRegistered') continue;
      const d = e.data as SigningKeyRegisteredData;
      const key = knownKey(d.publicKey);
      if (!key || key.keyId !== d.keyId || keys.has(key.keyId)) continue;
      if (attestationProblem(e.type, e.data, { streamId: SIGNING_KEYS_STREAM, revision: e.revision, position: e.position }, keys) === undefined) {
        keys.set(key.keyId, key);
        changed = true;
      }
    }
  }
  for (const e of list) {
    if (e.type === 'SigningKeyRegistered') {
      const d = e.data as SigningKeyRegisteredData;
      if (keys.has(d.keyId) && Number.isSafeInteger(d.storeHead)) ring.signingSince = Math.min(ring.signingSince ?? Infinity, d.storeHead! + 1);
    }
    if (e.type === 'SigningKeyRevoked') {
      const d = e.data as SigningKeyRevokedData;
      const known = keys.get(d.keyId);
      if (known && attestationProblem(e.type, e.data, { streamId: SIGNING_KEYS_STREAM, revision: e.revision, position: e.position }, keys) === undefined) known.revokedFrom = Math.min(known.revokedFrom ?? e.position, e.position);
    }
  }
  for (const e of list) {
    if (e.type !== 'SigningKeyRegistered') continue;
    const d = e.data as SigningKeyRegisteredData;
    const known = keys.get(d.keyId);
    ring.registered.push({
      keyId: d.keyId,
      publicKey: d.publicKey,
      registeredBy: d.registeredBy,
      trusted: known !== undefined,
      ...(known?.revokedFrom !== undefined ? { revokedFrom: known.revokedFrom } : {}),
      position: e.position,
      at: d.at,
      ...(d.host ? { host: d.host } : {}),
    });
  }
  return ring;
}
