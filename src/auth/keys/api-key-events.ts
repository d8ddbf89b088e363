import { ConflictError, InvalidRequestError } from '../../shared/errors';
import { VALID_ROLES } from '../../config/config';
import type { HumanRole } from '../identity';
import { normaliseName } from '../names';
import type { StreamModel } from '../../events/command-handling';

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

export type ApiKeyEvent = { type: 'ApiKeyAdded'; data: ApiKeyData } | { type: 'ApiKeyReplaced'; data: ApiKeyData };

export const API_KEY_EVENT_TYPES: ReadonlySet<string> = new Set<ApiKeyEvent['type']>(['ApiKeyAdded', 'ApiKeyReplaced']);

export interface ApiKeysState {
  revision: number;
  /**
   * The current key of each name, by normalised name (keys stored before names were normalised
   * keep their spelling in `data.name`): a replacement supersedes the earlier one.
   */
  keys: Map<string, ApiKeyData>;
}

export const initialApiKeysState = (): ApiKeysState => ({ revision: -1, keys: new Map() });

export function evolveApiKeys(state: ApiKeysState, event: ApiKeyEvent, revision: number): ApiKeysState {
  state.revision = revision;
  switch (event.type) {
    case 'ApiKeyAdded':
    case 'ApiKeyReplaced':
      state.keys.set(normaliseName(event.data.name), event.data);
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
    evolve: (state, event) => evolveApiKeys(state, event, event.revision),
  };
}

export function foldApiKeys(events: Iterable<{ type: string; data: unknown; revision: number }>): ApiKeysState {
  const state = initialApiKeysState();
  for (const e of events) {
    // Unknown types (a later version's events) are skipped rather than guessed at.
    if (API_KEY_EVENT_TYPES.has(e.type)) evolveApiKeys(state, e as unknown as ApiKeyEvent, e.revision);
    else state.revision = e.revision;
  }
  return state;
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
  return [{ type: existing ? 'ApiKeyReplaced' : 'ApiKeyAdded', data }];
}

function assertNever(x: never): never {
  throw new Error(`unhandled api key event ${JSON.stringify(x)}`);
}
