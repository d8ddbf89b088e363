import { ConflictError, InvalidRequestError } from '../../shared/errors';
import { VALID_ROLES } from '../../config/config';
import type { HumanRole } from '../identity';
import { normaliseName } from '../names';
import type { StreamModel } from '../../events/command-handling';
import { decisionTrust, type DecisionTrust } from '../../attestation/decision-trust';
import type { PersonalKey, RegisteredPersonalKey } from '../../attestation/personal-signature';

/**
 * API keys added at run time (`triad keys add`), kept in the event store so every triad process
 * sharing the store accepts them. Pure: events, the fold and the decider. Only the sha256 of a
 * secret is ever recorded; the secret itself is shown once to whoever added the key.
 */

export const API_KEYS_STREAM = 'apikeys';

export interface ApiKeyData {
  name: string;
  roles: HumanRole[];
  /** sha256 of the secret, lowercase hex. */
  secretHash: string;
  /** `user:<name>` who added the key. */
  addedBy: string;
  at: string;
}

/** A person's public key for signing their own decisions (an SSH key, a passkey), registered to their name. */
export interface PublicKeyRegisteredData {
  name: string;
  key: PersonalKey;
  /** `user:<name>` who registered it (the person, or an admin for them). */
  registeredBy: string;
  at: string;
}

export interface PublicKeyRevokedData {
  name: string;
  keyId: string;
  revokedBy: string;
  reason: string;
  at: string;
}

export type ApiKeyEvent =
  | { type: 'ApiKeyAdded'; data: ApiKeyData }
  | { type: 'ApiKeyReplaced'; data: ApiKeyData }
  | { type: 'PublicKeyRegistered'; data: PublicKeyRegisteredData }
  | { type: 'PublicKeyRevoked'; data: PublicKeyRevokedData };

export const API_KEY_EVENT_TYPES: ReadonlySet<string> = new Set<ApiKeyEvent['type']>(['ApiKeyAdded', 'ApiKeyReplaced', 'PublicKeyRegistered', 'PublicKeyRevoked']);

export interface ApiKeysState {
  revision: number;
  /**
   * The current key of each name, by normalised name (keys stored before names were normalised
   * keep their spelling in `data.name`): a replacement supersedes the earlier one.
   */
  keys: Map<string, ApiKeyData>;
  /** People's registered public keys, revoked ones included (with the position they were revoked at). */
  publicKeys: RegisteredPersonalKey[];
}

export const initialApiKeysState = (): ApiKeysState => ({ revision: -1, keys: new Map(), publicKeys: [] });

export function evolveApiKeys(state: ApiKeysState, event: ApiKeyEvent, revision: number, position = 0): ApiKeysState {
  state.revision = revision;
  switch (event.type) {
    case 'ApiKeyAdded':
    case 'ApiKeyReplaced':
      state.keys.set(normaliseName(event.data.name), event.data);
      return state;
    case 'PublicKeyRegistered': {
      const name = normaliseName(event.data.name);
      if (!state.publicKeys.some((k) => k.key.keyId === event.data.key.keyId && k.revokedFrom === undefined)) state.publicKeys.push({ name, key: event.data.key });
      return state;
    }
    case 'PublicKeyRevoked':
      for (const k of state.publicKeys) if (k.key.keyId === event.data.keyId && k.name === normaliseName(event.data.name)) k.revokedFrom ??= position;
      return state;
    default:
      return assertNever(event);
  }
}

/** The `apikeys` stream for the command path. */
export function apiKeysStream(read: () => Promise<Iterable<{ type: string; data: unknown; revision: number }>>): StreamModel<ApiKeysState, ApiKeyEvent> {
  return {
    streamId: API_KEYS_STREAM,
    load: async () => foldApiKeys(await read()),
    initial: initialApiKeysState,
    evolve: (state, event) => evolveApiKeys(state, event, event.revision, event.position),
  };
}

/**
 * The stream's keys. Unknown types (a later version's events) are skipped rather than guessed at,
 * and so is an event without a valid attestation: a store writer cannot add a key or a signer.
 */
export function foldApiKeys(events: Iterable<{ type: string; data: unknown; revision: number; position?: number }>, trust: DecisionTrust = decisionTrust()): ApiKeysState {
  const state = initialApiKeysState();
  for (const e of events) {
    if (API_KEY_EVENT_TYPES.has(e.type) && keyEventTrusted(e, trust)) evolveApiKeys(state, e as unknown as ApiKeyEvent, e.revision, e.position);
    else state.revision = e.revision;
  }
  return state;
}

/** Whether the process may act on a key event: attested by a trusted key (or recorded before the store's signing began). */
export function keyEventTrusted(e: { type: string; data: unknown; revision: number; position?: number }, trust: DecisionTrust = decisionTrust()): boolean {
  return trust.refusal(e.type, e.data, { streamId: API_KEYS_STREAM, revision: e.revision, position: e.position ?? 0 }) === undefined;
}

/** A key name or role list that cannot be accepted. Nothing is written. */
export class InvalidApiKeyError extends InvalidRequestError {
  override readonly name = 'InvalidApiKeyError';
}

/**
 * The name differs only in case from a stored key's: it would be that identity. Replacing a key
 * takes its name as stored (`triad keys list`), so a slip of case never replaces someone's key.
 */
export class ApiKeyNameConflictError extends ConflictError {
  override readonly name = 'ApiKeyNameConflictError';
  constructor(given: string, stored: string) {
    super(`key name '${given}' is the stored key '${stored}' (names are case-insensitive); give '${stored}' to replace that key`);
  }
}

const KEY_NAME = /^[A-Za-z0-9_.@-]{1,64}$/;
const SECRET_HASH = /^[0-9a-f]{64}$/;

export function validateKeyName(name: string): string {
  if (!KEY_NAME.test(name)) throw new InvalidApiKeyError(`key name '${name}' is not valid: 1-64 characters of [A-Za-z0-9_.@-]`);
  return name;
}

/** `operator+reviewer` or `operator,reviewer`: known roles, at least one, duplicates dropped. */
export function parseKeyRoles(text: string): HumanRole[] {
  const parts = text.split(/[+,]/).map((r) => r.trim());
  if (parts.length === 0 || parts.some((r) => r === '')) {
    throw new InvalidApiKeyError(`roles '${text}' are not valid: give one or more of ${VALID_ROLES.join(', ')}, joined by + or ,`);
  }
  for (const r of parts) {
    if (!(VALID_ROLES as readonly string[]).includes(r)) throw new InvalidApiKeyError(`unknown role '${r}' (roles: ${VALID_ROLES.join(', ')})`);
  }
  return [...new Set(parts)] as HumanRole[];
}

export interface AddApiKey {
  name: string;
  roles: HumanRole[];
  secretHash: string;
  addedBy: string;
  /** ISO time; arrives with the command. */
  at: string;
  /** The person's public keys for signing their own decisions, registered with the key. */
  publicKeys?: PersonalKey[];
}

/**
 * Adding a name that already has a stored key replaces that key (the old secret stops working).
 * The name is stored normalised (NFC, lower case); a name that matches a stored key only when case
 * is ignored is refused (ApiKeyNameConflictError).
 */
export function decideAddApiKey(command: AddApiKey, state: ApiKeysState): ApiKeyEvent[] {
  validateKeyName(command.name);
  const name = normaliseName(command.name);
  const existing = state.keys.get(name);
  if (existing && existing.name !== command.name) throw new ApiKeyNameConflictError(command.name, existing.name);
  if (command.roles.length === 0) throw new InvalidApiKeyError('a key needs at least one role');
  parseKeyRoles(command.roles.join('+'));
  if (!SECRET_HASH.test(command.secretHash)) throw new InvalidApiKeyError('secretHash must be a sha256 hex digest');
  const data: ApiKeyData = { name, roles: [...command.roles], secretHash: command.secretHash, addedBy: command.addedBy, at: command.at };
  const events: ApiKeyEvent[] = [{ type: existing ? 'ApiKeyReplaced' : 'ApiKeyAdded', data }];
  for (const key of command.publicKeys ?? []) events.push(...decideRegisterPublicKey({ name, key, registeredBy: command.addedBy, at: command.at }, state, true));
  return events;
}

export interface RegisterPublicKey {
  name: string;
  key: PersonalKey;
  registeredBy: string;
  at: string;
}

/** A public key that cannot be registered (already someone's). Nothing is written. */
export class PublicKeyConflictError extends ConflictError {
  override readonly name = 'PublicKeyConflictError';
}

/**
 * Registers a person's public key to their name. The name must have an API key: a stored one, one
 * added in the same append, or the one its holder signed in with (`holderKnown`: a key of
 * TRIAD_API_KEYS enrolling a passkey). A key is one person's.
 */
export function decideRegisterPublicKey(command: RegisterPublicKey, state: ApiKeysState, holderKnown = false): ApiKeyEvent[] {
  const name = normaliseName(command.name);
  if (!holderKnown && !state.keys.has(name)) throw new InvalidApiKeyError(`${command.name} has no API key: a public key is registered with one (triad keys add ${command.name} --roles … --public-key …)`);
  const held = state.publicKeys.find((k) => k.key.keyId === command.key.keyId && k.revokedFrom === undefined);
  if (held && held.name !== name) throw new PublicKeyConflictError(`the key ${command.key.keyId} is registered to ${held.name} already`);
  if (held) return [];
  return [{ type: 'PublicKeyRegistered', data: { name, key: command.key, registeredBy: command.registeredBy, at: command.at } }];
}

/** Revokes a registered key: its signatures on decisions made from now on are `revoked_signer`. */
export function decideRevokePublicKey(command: { name: string; keyId: string; revokedBy: string; reason: string; at: string }, state: ApiKeysState): ApiKeyEvent[] {
  const name = normaliseName(command.name);
  if (!state.publicKeys.some((k) => k.name === name && k.key.keyId === command.keyId && k.revokedFrom === undefined)) {
    throw new InvalidApiKeyError(`${command.name} has no registered key ${command.keyId} that is not revoked`);
  }
  return [{ type: 'PublicKeyRevoked', data: { name, keyId: command.keyId, revokedBy: command.revokedBy, reason: command.reason, at: command.at } }];
}

function assertNever(x: never): never {
  throw new Error(`unhandled api key event ${JSON.stringify(x)}`);
}
