import { DomainError } from '../shared/errors';
import { CliError, EXIT } from './exit-codes';

/**
 * The API's refusals of a body in a CLI verb's words: the body's field paths
 * (`acceptanceCriteria is required`, `overrides.team.coder: unknown role`) become the flags that set
 * them (`--criteria is required (one or more acceptance criteria)`, `--role-model coder=…: unknown
 * role`). The verbs validate with the routes' DTOs through src/cli/validate-body.ts, and pass the
 * domain's own refusals of their input through `refusedInFlags`.
 */

/** One field of the body and the flag (or argument) that sets it; `hint` follows "is required". */
export interface FlagOfField {
  field: RegExp;
  /** The flag as the user writes it, from the field path's match (`--loop executor=<strategy>`). */
  flag: (match: RegExpExecArray) => string;
  hint?: string;
}

/** `<path> …`, `<path>: …`, `each value in <path> …` or `property <path> should not exist`: the path is the message's first word after those. */
const MESSAGE = /^(each value in |property )?([A-Za-z0-9_.]+)((?::|\s).*)$/s;

/** One message with its field path put in the verb's words; a message naming no mapped field is left as it is. */
export function inFlagTerms(message: string, flags: readonly FlagOfField[]): string {
  const parts = MESSAGE.exec(message);
  if (!parts) return message;
  const [, lead = '', path, rest] = parts;
  for (const f of flags) {
    const match = f.field.exec(path);
    if (!match) continue;
    const hint = f.hint !== undefined && rest === ' is required' ? ` (${f.hint})` : '';
    return `${lead}${f.flag(match)}${rest}${hint}`;
  }
  return message;
}

/** A field that a flag sets as it is. */
export function flagFor(field: string, flag: string, hint?: string): FlagOfField {
  return { field: new RegExp(`^${field.replace(/\./g, '\\.')}$`), flag: () => flag, ...(hint !== undefined ? { hint } : {}) };
}

/** What `fn` returns; its refusal of the input (a domain error of kind `invalid`, exit 2) said in the verb's flags. */
export async function refusedInFlags<T>(flags: readonly FlagOfField[], fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof DomainError && err.kind === 'invalid') throw new CliError(inFlagTerms(err.message, flags), EXIT.usage);
    throw err;
  }
}
