import { isUtf8 } from 'node:buffer';

/**
 * Text in events: every string stored is well-formed Unicode without NUL (PostgreSQL text cannot
 * hold U+0000, SQLite stores UTF-8 and turns an unpaired surrogate into U+FFFD, so either would
 * change what was hashed). Two kinds of text reach the store:
 *
 * - human text (API bodies, query and path values, CLI arguments): refused when ill-formed;
 * - machine text (model output, tool results, file contents): kept losslessly in one escaped form,
 *   converted where it enters the domain. Hand-written because no library has this exact form:
 *
 *   ␛␛      the escape character U+241B itself
 *   ␛uHHHH  one UTF-16 code unit that is NUL (0000) or an unpaired surrogate (D800-DFFF)
 *   ␛xHH    one byte that is not part of well-formed UTF-8 (only from bytes)
 *
 * Everything else is the text as it was. Encoding is reversible (`decodeMachineText`,
 * `decodeMachineBytes`); decoding leaves a ␛ that starts no escape as it is, so human text mixed
 * into a conversation decodes to itself.
 */

export const ESCAPE = '\u241b';

/** A NUL or an unpaired surrogate: one regex test per string (for runtimes without isWellFormed). */
const ILL_FORMED = /[\u0000]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const NEEDS_ESCAPE = /[\u0000\u241b]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

type WellFormedString = string & { isWellFormed?: () => boolean };
const HAS_IS_WELL_FORMED = typeof (String.prototype as WellFormedString).isWellFormed === 'function';

/**
 * Human text that is not blank holds something a reader can see: a letter, a digit, a punctuation
 * mark or a symbol (an emoji). Whitespace, control and format characters alone (a zero-width space,
 * a byte-order mark) are blank: a goal or a decision's reason made of them reads as nothing. So are
 * the few letters and symbols drawn as nothing: the Hangul fillers and the blank Braille pattern.
 */
export const VISIBLE_TEXT = /(?![\u115f\u1160\u3164\uffa0\u2800])[\p{L}\p{N}\p{P}\p{S}]/u;

/** True when the text holds a character a reader can see (`VISIBLE_TEXT`). */
export function hasVisibleText(s: string): boolean {
  return VISIBLE_TEXT.test(s);
}

/** True when the string is well-formed Unicode and holds no NUL. */
export function isWellFormedText(s: string): boolean {
  if (HAS_IS_WELL_FORMED) return !s.includes('\u0000') && (s as WellFormedString).isWellFormed!();
  return !ILL_FORMED.test(s);
}

/** What is wrong with an ill-formed string, for an error message. */
export function describeIllFormed(s: string): string {
  return s.includes('\u0000') ? 'holds a NUL character' : 'holds an unpaired UTF-16 surrogate';
}

export interface IllFormedText {
  /** JSON path of the offending value, or of the object holding the offending key. */
  path: string;
  problem: string;
}

/**
 * The first string (value or key) of a JSON-like value that is not well-formed text, with its
 * path from `root` (`reason`, `team.executor.tools[2]`), or undefined when every string is fine.
 */
export function findIllFormedText(value: unknown, root: string): IllFormedText | undefined {
  if (typeof value === 'string') return isWellFormedText(value) ? undefined : { path: root, problem: describeIllFormed(value) };
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findIllFormedText(value[i], `${root}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, v] of Object.entries(value)) {
    if (!isWellFormedText(key)) return { path: root, problem: `has a key that ${describeIllFormed(key)}` };
    const found = findIllFormedText(v, joinPath(root, key));
    if (found) return found;
  }
  return undefined;
}

function joinPath(root: string, key: string): string {
  const segment = /^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key);
  if (root === '') return segment;
  return segment.startsWith('"') ? `${root}[${segment}]` : `${root}.${segment}`;
}

// ---------------------------------------------------------------------------------------------
// Machine text

/** A string in machine-text form: well-formed, no NUL, every ␛ starting an escape. */
export function encodeMachineText(s: string): string {
  if (!NEEDS_ESCAPE.test(s)) return s;
  let out = '';
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let escaped: string | undefined;
    if (c === 0x241b) escaped = ESCAPE + ESCAPE;
    else if (c === 0) escaped = `${ESCAPE}u0000`;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i += 1;
      else escaped = `${ESCAPE}u${hex(c, 4)}`;
    } else if (c >= 0xdc00 && c <= 0xdfff) escaped = `${ESCAPE}u${hex(c, 4)}`;
    if (escaped !== undefined) {
      out += s.slice(from, i) + escaped;
      from = i + 1;
    }
  }
  return out + s.slice(from);
}

/** Bytes (a file, a command's output) in machine-text form: UTF-8 where well-formed, ␛xHH otherwise. */
export function encodeMachineBytes(bytes: Uint8Array): string {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isUtf8(buf)) return encodeMachineText(buf.toString('utf8'));
  let out = '';
  let runStart = 0;
  let i = 0;
  while (i < buf.length) {
    const n = utf8SequenceLength(buf, i);
    if (n > 0) {
      i += n;
      continue;
    }
    if (runStart < i) out += encodeMachineText(buf.toString('utf8', runStart, i));
    out += `${ESCAPE}x${hex(buf[i]!, 2)}`;
    i += 1;
    runStart = i;
  }
  if (runStart < buf.length) out += encodeMachineText(buf.toString('utf8', runStart));
  return out;
}

const ESCAPES = /\u241b(?:\u241b|u(0000|D[89A-F][0-9A-F]{2})|x([0-9A-F]{2}))/g;

/** The string a machine text was encoded from (a ␛xHH byte escape has no string form and stays as it is). */
export function decodeMachineText(s: string): string {
  if (!s.includes(ESCAPE)) return s;
  return s.replace(ESCAPES, (whole, unit: string | undefined, byte: string | undefined) => {
    if (unit !== undefined) return String.fromCharCode(parseInt(unit, 16));
    if (byte !== undefined) return whole;
    return ESCAPE;
  });
}

/** The bytes a machine text stands for: UTF-8 of its text, ␛xHH as the byte (WTF-8 for a lone surrogate). */
export function decodeMachineBytes(s: string): Buffer {
  const parts: Buffer[] = [];
  let from = 0;
  for (const m of s.matchAll(ESCAPES)) {
    const at = m.index!;
    if (from < at) parts.push(Buffer.from(s.slice(from, at), 'utf8'));
    if (m[2] !== undefined) parts.push(Buffer.of(parseInt(m[2], 16)));
    else if (m[1] !== undefined) parts.push(codeUnitBytes(parseInt(m[1], 16)));
    else parts.push(Buffer.from(ESCAPE, 'utf8'));
    from = at + m[0].length;
  }
  if (from < s.length) parts.push(Buffer.from(s.slice(from), 'utf8'));
  return Buffer.concat(parts);
}

/** Every string of a JSON-like value (keys too) in machine-text form; a new value, the input is not changed. */
export function toMachineText<T>(value: T): T {
  return mapStrings(value, encodeMachineText) as T;
}

/** The inverse of `toMachineText`. */
export function fromMachineText<T>(value: T): T {
  return mapStrings(value, decodeMachineText) as T;
}

function mapStrings(value: unknown, f: (s: string) => string): unknown {
  if (typeof value === 'string') return f(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, f));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[f(k)] = mapStrings(v, f);
  return out;
}

function hex(n: number, width: number): string {
  return n.toString(16).toUpperCase().padStart(width, '0');
}

/** UTF-8 (WTF-8 for a surrogate) of one code unit given by an escape. */
function codeUnitBytes(unit: number): Buffer {
  if (unit === 0) return Buffer.of(0);
  return Buffer.of(0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f));
}

/** Length of the well-formed UTF-8 sequence starting at `i` (Unicode Table 3-7), 0 when there is none. */
function utf8SequenceLength(b: Buffer, i: number): number {
  const b0 = b[i]!;
  if (b0 < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf) => i + k < b.length && b[i + k]! >= lo && b[i + k]! <= hi;
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const lo = b0 === 0xe0 ? 0xa0 : 0x80;
    const hi = b0 === 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const lo = b0 === 0xf0 ? 0x90 : 0x80;
    const hi = b0 === 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}
