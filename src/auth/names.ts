/**
 * Human names are case-insensitive: `user:ALICE` and `user:alice` are one identity. A name is
 * normalised once where it enters triad (API keys, TRIAD_USER, `--as`) to its Unicode NFC form in
 * lower case (String#toLowerCase, locale-independent), and identities are compared through the same
 * normalisation, so events recorded before names were normalised still compare correctly. Agent
 * identities (`agent:<role>:<runId>…`) and `system` are compared exactly.
 */

export function normaliseName(name: string): string {
  return name.normalize('NFC').toLowerCase();
}

const USER_PREFIX = 'user:';

/** `user:<name>` with its name normalised; any other identity unchanged. */
export function normaliseIdentity(id: string): string {
  return id.slice(0, USER_PREFIX.length).toLowerCase() === USER_PREFIX ? USER_PREFIX + normaliseName(id.slice(USER_PREFIX.length)) : id;
}

export function sameIdentity(a: string, b: string): boolean {
  return a === b || normaliseIdentity(a) === normaliseIdentity(b);
}
