import { hostname } from 'node:os';
import { withAppend } from '../events/append-proxy';
import type { EventStore, ExpectedRevision, NewEvent } from '../events/event-store/event-store.port';
import type { SigningSettings } from '../config/config';
import { ATTESTED_EVENT_TYPES, publicKeyText, type Signer, type SignedHead } from './attestation';
import { ConflictError, InvalidRequestError } from '../shared/errors';
import { installDecisionTrust, KeyTrust } from './decision-trust';
import { foldKeyRing, knownKey, SIGNING_KEYS_STREAM, type KeyRing, type SigningKeyRegisteredData, type SigningKeyRevokedData } from './key-ring';
import { loadOrCreateSigningKey, SigningKeyError } from './signing-key';

const DECISION_TYPES = ['ReviewDecided', 'ToolApprovalDecided'];

export class UnknownSigningKeyError extends InvalidRequestError {
  override readonly name = 'UnknownSigningKeyError';
}

/**
 * The process's signing: its key, the keys it trusts, and the trust its folds act on. Opened once
 * per process, before anything folds a run (the event store's provider waits for it).
 */
export class Signing {
  constructor(
    readonly signer: Signer,
    readonly settings: SigningSettings,
    private ring: KeyRing,
    readonly trust: KeyTrust,
    /** Set when the store's record of where signing began was missing while signed decisions exist. */
    readonly warning?: string,
  ) {}

  get keyRing(): KeyRing {
    return this.ring;
  }

  /**
   * Gives each event of an attested type its attestation (in place, so the caller's copy and the
   * stored one agree), bound to its stream and, when the append names the revision it expects, to
   * the revision each event lands at.
   */
  attestEvents(streamId: string, events: readonly NewEvent[], expected?: ExpectedRevision): void {
    attestInPlace(this.signer, streamId, events, expected);
  }

  signHead(head: { seq: number; hash: string }, at: string): SignedHead {
    return this.signer.signHead({ ...head, at });
  }

  /**
   * Registers another server's key (a process of its own sharing the store, or this server's next
   * key when rotating), attested by this server's key: processes trusting this key trust it too.
   */
  async registerKey(store: EventStore, publicKey: string, by: string, now: Date): Promise<string> {
    const key = knownKey(publicKey);
    if (!key) throw new UnknownSigningKeyError('not an Ed25519 public key (base64 of its SPKI DER, as `triad decisions keys` prints it)');
    const ring = await this.refresh(store);
    if (ring.registered.some((r) => r.keyId === key.keyId && r.trusted)) return key.keyId;
    const data: SigningKeyRegisteredData = { keyId: key.keyId, publicKey: publicKeyText(key.key), registeredBy: by, at: now.toISOString() };
    await store.append(SIGNING_KEYS_STREAM, [{ type: 'SigningKeyRegistered', data }]);
    await this.refresh(store);
    return key.keyId;
  }

  /** Revokes a server key from now on: what it attests after this point is `revoked_signer`. */
  async revokeKey(store: EventStore, keyId: string, reason: string, by: string, now: Date): Promise<void> {
    const ring = await this.refresh(store);
    if (!ring.keys.has(keyId)) throw new UnknownSigningKeyError(`no trusted signing key ${keyId} (triad decisions keys lists them)`);
    if (keyId === this.signer.keyId) throw new ConflictError(`${keyId} is this process's own key: revoke it from a process with the next key`);
    const data: SigningKeyRevokedData = { keyId, reason, revokedBy: by, at: now.toISOString() };
    await store.append(SIGNING_KEYS_STREAM, [{ type: 'SigningKeyRevoked', data }]);
    await this.refresh(store);
  }

  /** The keys this store's signing knows, re-read from the store (registrations by other processes included). */
  async refresh(store: EventStore): Promise<KeyRing> {
    this.ring = foldKeyRing(anchorsOf(this.signer, this.settings), await store.readStream(SIGNING_KEYS_STREAM));
    // The process acts on what it now knows: a key registered or revoked since it started.
    this.trust.useKeys(this.ring.keys);
    return this.ring;
  }
}

function anchorsOf(signer: Signer, settings: SigningSettings) {
  const anchors = [{ keyId: signer.keyId, key: signer.publicKey }];
  for (const text of settings.trustedKeys) {
    const k = knownKey(text);
    if (!k) throw new SigningKeyError(`TRIAD_TRUSTED_KEYS holds a value that is not an Ed25519 public key`);
    anchors.push(k);
  }
  return anchors;
}

/**
 * Loads (or makes) the key, registers it in the store when it is not yet, and installs the trust:
 * decisions attested by a trusted key are acted on, and so are unsigned ones recorded before the
 * store's signing began. When that beginning is missing but the store holds attested decisions,
 * someone removed the registrations: then no unsigned decision is acted on at all.
 */
export async function openSigning(store: EventStore, settings: SigningSettings, now: () => number): Promise<Signing> {
  const { signer, created } = loadOrCreateSigningKey(settings.keyFile);
  const anchors = anchorsOf(signer, settings);
  let events = await store.readStream(SIGNING_KEYS_STREAM);
  let warning: string | undefined;
  let strict = false;
  if (!events.some((e) => e.type === 'SigningKeyRegistered' && (e.data as SigningKeyRegisteredData).keyId === signer.keyId)) {
    const head = await store.headPosition();
    // A key that signed before meets a store holding events but no record of it, or a store whose
    // decisions are signed but whose record of signing is gone: someone removed that record to make
    // unsigned events pass as ones from before signing. Then nothing unsigned is acted on.
    if (head > 0 && (events.length === 0 ? !created || (await holdsAttestedDecisions(store)) : false)) {
      strict = true;
      warning = `the store holds events but no record of this server's signing key ${signer.keyId} (the ${SIGNING_KEYS_STREAM} stream was removed, or the key signed another store): no unsigned decision or key is acted on`;
    }
    // The store's head when signing began is signed: events after it must be attested.
    const data: SigningKeyRegisteredData = { keyId: signer.keyId, publicKey: publicKeyText(signer.publicKey), registeredBy: 'server', host: hostname(), storeHead: strict ? 0 : head, at: new Date(now()).toISOString() };
    data.attestation = signer.attest('SigningKeyRegistered', data, { streamId: SIGNING_KEYS_STREAM });
    // Any revision: two processes registering at once both land, and each key is registered once by its holder.
    await store.append(SIGNING_KEYS_STREAM, [{ type: 'SigningKeyRegistered', data }]);
    events = await store.readStream(SIGNING_KEYS_STREAM);
  }
  const ring = foldKeyRing(anchors, events);
  const trust = new KeyTrust(ring.keys, strict ? 0 : (ring.signingSince ?? 0));
  installDecisionTrust(trust);
  return new Signing(signer, settings, ring, trust, warning);
}

async function holdsAttestedDecisions(store: EventStore): Promise<boolean> {
  for (let after = 0; ; ) {
    const page = await store.readAll({ after, maxCount: 1000, filter: { types: DECISION_TYPES } });
    if (page.some((e) => (e.data as { attestation?: unknown }).attestation !== undefined)) return true;
    if (page.length < 1000) return false;
    after = page[page.length - 1].position;
  }
}

/** Signs each event of an attested type that has no attestation yet, for its stream and (when known) revision. */
export function attestInPlace(signer: Signer, streamId: string, events: readonly NewEvent[], expected?: ExpectedRevision): void {
  const first = typeof expected === 'number' ? expected + 1 : expected === 'no_stream' ? 0 : undefined;
  events.forEach((e, i) => {
    if (!ATTESTED_EVENT_TYPES.has(e.type) || e.data === null || typeof e.data !== 'object') return;
    const data = e.data as Record<string, unknown>;
    if (data.attestation !== undefined) return;
    data.attestation = signer.attest(e.type, data, { streamId, revision: first === undefined ? undefined : first + i });
  });
}

/** The store as the process writes it: every event of an attested type is signed before it is appended. */
export function attestingAppends(store: EventStore, signing: Signing): EventStore {
  return withAppend(store, (streamId, events, options) => {
    signing.attestEvents(streamId, events, options?.expectedRevision);
    return store.append(streamId, events, options);
  });
}
