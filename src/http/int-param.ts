import { InvalidRequestError } from '../shared/errors';

/**
 * An integer query or path value, read one way on every route (docs/API.md "Query parameters"):
 * decimal digits only — no sign, exponent, fraction, hex, space or blank (`?x=` is malformed, not
 * the default) — leading zeros read as written, and a range whose bounds the 400 names. Absent: the
 * default (`undefined` for a parameter whose absence means something of its own). A domain
 * error, not Nest's: the error filter answers it 400 like any invalid request, and it stays pure.
 */
export function parseIntParam(name: string, raw: string | undefined, def: number, min: number, max: number): number;
export function parseIntParam(name: string, raw: string | undefined, def: undefined, min: number, max: number): number | undefined;
export function parseIntParam(name: string, raw: string | undefined, def: number | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return def;
  if (!/^\d+$/.test(raw)) throw new InvalidRequestError(`${name} must be a non-negative integer`);
  const n = Number(raw);
  if (n < min || n > max) throw new InvalidRequestError(`${name} must be between ${min} and ${max}`);
  return n;
}
