import { hash } from 'node:crypto';

/**
 * Canonical JSON: object keys sorted, no whitespace. Throws on values JSON cannot represent
 * faithfully (undefined, functions, symbols, bigint, non-finite numbers, cycles, non-plain objects),
 * so what is hashed or stored is exactly what is read back.
 *
 * It is RFC 8785 (JCS) for every value it accepts whose strings are well-formed: keys sorted by
 * UTF-16 code units (`Array.prototype.sort`'s default order), numbers as ECMAScript serialises
 * them, strings escaped as `JSON.stringify` escapes them (JCS's own definition), no whitespace.
 * One case lies outside JCS, whose input must be I-JSON: a string with an unpaired surrogate is
 * written with `JSON.stringify`'s `\udXXX` escape instead of being refused. The event store
 * refuses such strings before they are serialised (src/events/prepare.ts), so no stored text or
 * hash depends on it. Property-tested against a reference in test/shared/canonical-json.unit.spec.ts.
 */
export function canonicalJson(value: unknown): string {
  try {
    return walk(value, [], undefined);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    // Walk again, naming where the value fails: the first walk builds no path strings.
    return walk(value, [], '$');
  }
}

/**
 * Strings are built directly; the objects on the current path are kept in a stack (for cycles).
 * `path` is undefined on the hot path and only tracked when a failure must say where it is.
 */
function walk(value: unknown, stack: object[], path: string | undefined): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`${path} is a non-finite number`);
      return JSON.stringify(value);
    case 'object': {
      if (stack.includes(value)) throw new TypeError(`${path} is a circular reference`);
      let out: string;
      if (Array.isArray(value)) {
        stack.push(value);
        out = '[';
        for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + walk(value[i], stack, path === undefined ? undefined : `${path}[${i}]`);
        out += ']';
      } else {
        // A plain object's prototype is (some realm's) Object.prototype, whose own prototype is null.
        const proto = Object.getPrototypeOf(value);
        if (proto !== null && Object.getPrototypeOf(proto) !== null) {
          throw new TypeError(`${path} is a ${proto?.constructor?.name ?? 'non-plain'} object, not plain JSON`);
        }
        stack.push(value);
        out = '{';
        let first = true;
        for (const k of sortedKeys(value)) {
          const v = (value as Record<string, unknown>)[k];
          if (v === undefined) continue;
          out += (first ? '' : ',') + quotedKey(k) + ':' + walk(v, stack, path === undefined ? undefined : `${path}.${k}`);
          first = false;
        }
        out += '}';
      }
      stack.pop();
      return out;
    }
    default:
      throw new TypeError(`${path} is of type ${typeof value}, which JSON cannot represent`);
  }
}

/**
 * An object's keys in UTF-16 code unit order (what `Array.prototype.sort` and `<` on strings both
 * use). Events' objects have a handful of keys: sorted in place by insertion, they cost less than
 * `sort()`, which copies them into a work array first (a sixth of the bytes an append allocated).
 */
const INSERTION_SORT_MAX = 16;

function sortedKeys(value: object): string[] {
  const keys = Object.keys(value);
  if (keys.length > INSERTION_SORT_MAX) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i];
    let j = i - 1;
    for (; j >= 0 && keys[j] > key; j--) keys[j + 1] = keys[j];
    keys[j + 1] = key;
  }
  return keys;
}

/**
 * A key as JSON text. Events reuse a small vocabulary of keys, so their quoted forms are kept
 * rather than made again for every object; keys that are data (ids, paths) can be many, so the
 * cache stops growing at a bound and such keys are quoted each time.
 */
const QUOTED_KEYS_MAX = 4096;
/** Longer keys are data, not vocabulary: quoted each time, never kept. */
const QUOTED_KEY_MAX_LENGTH = 64;
const quotedKeys = new Map<string, string>();

function quotedKey(key: string): string {
  if (key.length > QUOTED_KEY_MAX_LENGTH) return JSON.stringify(key);
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (quotedKeys.size < QUOTED_KEYS_MAX) quotedKeys.set(key, quoted);
  }
  return quoted;
}

/** sha256 hex, one-shot (`crypto.hash`, Node ≥ 20.12): no Hash object per call. */
export function sha256Hex(text: string | Buffer): string {
  return hash('sha256', text, 'hex');
}

/** sha256 of the canonical JSON of a value. */
export function hashOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
