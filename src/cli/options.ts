import { InvalidArgumentError } from 'commander';
import { userInfo } from 'node:os';
import type { HumanRole, Identity } from '../auth/identity';
import { normaliseName } from '../auth/names';
import { CliError, EXIT } from './exit-codes';
import { hasVisibleText } from '../shared/text';

/** A parser for an option that takes a whole number between `min` and `max`. */
export function int(name: string, min: number, max: number) {
  return (raw: string) => {
    if (!/^\d+$/.test(raw)) throw new InvalidArgumentError(`${name} must be a whole number`);
    const n = Number(raw);
    if (n < min || n > max) throw new InvalidArgumentError(`${name} must be between ${min} and ${max}`);
    return n;
  };
}

/** A decision's `--reason`: 1 to 4000 characters, not blank; undefined when optional and not given. */
export function decisionReason(raw: string | undefined, required: true): string;
export function decisionReason(raw: string | undefined, required: false): string | undefined;
export function decisionReason(raw: string | undefined, required: boolean): string | undefined {
  const reason = String(raw ?? '').trim();
  if ((required || raw !== undefined) && (!hasVisibleText(reason) || reason.length > 4000)) throw new CliError('--reason must be 1 to 4000 characters, not blank', EXIT.usage);
  return reason || undefined;
}

/** The CLI acts as a local user: `TRIAD_USER` or the OS account, with every role. */
export function cliIdentity(as?: string): Identity {
  const name = userName(as ?? process.env.TRIAD_USER ?? safeUserName());
  return { id: `user:${name}`, name, roles: ['admin'] as HumanRole[] };
}

/** A user name given at the CLI, normalised (names are case-insensitive: ALICE is alice); bad input (exit 2) when it cannot be a name. */
export function userName(given: string): string {
  if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(given)) throw new CliError(`'${given}' is not a valid user name`, EXIT.usage);
  return normaliseName(given);
}

function safeUserName(): string {
  try {
    return userInfo().username || 'cli';
  } catch {
    return 'cli';
  }
}
