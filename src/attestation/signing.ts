import { hostname } from 'node:os';
import type { EventStore, NewEvent } from '../events/event-store.port';
import type { SigningSettings } from '../config/config';
import { ATTESTED_EVENT_TYPES, publicKeyText, type Signer, type SignedHead } from './attestation';
import { InvalidRequestError } from '../shared/errors';
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

  /** Gives each event of an attested type its attestation (in place, so the caller's copy and the stored one agree). */
  attestEvents(events: readonly NewEvent[]): void {
    for (const e of events) {
      if (!ATTESTED_EVENT_TYPES.has(e.type) || e.data === null || typeof e.data !== 'object') continue;
      const data = e.data as Record<string, unknown>;
      if (data.attestation !== undefined) continue;
      data.attestation = this.signer.attest(e.type, data);
    }
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
    if (keyId === this.signer.keyId) throw new UnknownSigningKeyError(`${keyId} is this process's own key: revoke it from a process with the next key`);
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
  const { signer } = loadOrCreateSigningKey(settings.keyFile);
  const anchors = anchorsOf(signer, settings);
  let events = await store.readStream(SIGNING_KEYS_STREAM);
  let warning: string | undefined;
  let emptied = false;
  if (events.length === 0) emptied = await holdsAttestedDecisions(store);
  if (!events.some((e) => e.type === 'SigningKeyRegistered' && (e.data as SigningKeyRegisteredData).keyId === signer.keyId)) {
    const data: SigningKeyRegisteredData = { keyId: signer.keyId, publicKey: publicKeyText(signer.publicKey), registeredBy: 'server', host: hostname(), at: new Date(now()).toISOString() };
    data.attestation = signer.attest('SigningKeyRegistered', data);
    // Any revision: two processes registering at once both land, and each key is registered once by its holder.
    await store.append(SIGNING_KEYS_STREAM, [{ type: 'SigningKeyRegistered', data }]);
    events = await store.readStream(SIGNING_KEYS_STREAM);
  }
  const ring = foldKeyRing(anchors, events);
  let requiredFrom = ring.signingSince ?? 0;
  if (emptied) {
    requiredFrom = 0;
    warning = `the store holds attested decisions but no record of its signing keys (the ${SIGNING_KEYS_STREAM} stream was removed): no unsigned decision is acted on`;
  }
  const trust = new KeyTrust(ring.keys, requiredFrom);
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

/** The store as the process writes it: every event of an attested type is signed before it is appended. */
export function attestingAppends(store: EventStore, signing: Signing): EventStore {
  const bound = new Map<PropertyKey, unknown>();
  const append: EventStore['append'] = (streamId, events, options) => {
    signing.attestEvents(events);
    return store.append(streamId, events, options);
  };
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'append') return append;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      if (!bound.has(prop)) bound.set(prop, (value as (...args: unknown[]) => unknown).bind(target));
      return bound.get(prop);
    },
  });
}
