import { hash } from 'node:crypto';

/**
 * Canonical JSON: object keys sorted, no whitespace. Throws on values JSON cannot represent
 * faithfully (undefined, functions, symbols, bigint, non-finite numbers, cycles, non-plain objects),
 * so what is hashed or stored is exactly what is read back.
 */
export function canonicalJson(value: unknown): string {
  try {
    return fast(value, []);
  } catch {
    // Walk again, naming where the value fails (the fast walk keeps no paths).
    return serialise(value, new Set(), '$');
  }
}

/**
 * The hot path: the same output as `serialise`, building strings directly, with the objects on
 * the current path in a stack (for cycles) instead of a Set and no path strings.
 */
function fast(value: unknown, stack: object[]): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('non-finite');
      return JSON.stringify(value);
    case 'object': {
      if (stack.includes(value)) throw new TypeError('cycle');
      stack.push(value);
      let out: string;
      if (Array.isArray(value)) {
        out = '[';
        for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + fast(value[i], stack);
        out += ']';
      } else {
        const proto = Object.getPrototypeOf(value);
        if (proto !== null && Object.getPrototypeOf(proto) !== null) throw new TypeError('not plain');
        const keys = Object.keys(value).sort();
        out = '{';
        let first = true;
        for (const k of keys) {
          const v = (value as Record<string, unknown>)[k];
          if (v === undefined) continue;
          out += (first ? '' : ',') + JSON.stringify(k) + ':' + fast(v, stack);
          first = false;
        }
        out += '}';
      }
      stack.pop();
      return out;
    }
    default:
      throw new TypeError('not JSON');
  }
}

function serialise(value: unknown, seen: Set<object>, path: string): string {
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
      if (seen.has(value)) throw new TypeError(`${path} is a circular reference`);
      seen.add(value);
      try {
        if (Array.isArray(value)) {
          return `[${value.map((item, i) => serialise(item, seen, `${path}[${i}]`)).join(',')}]`;
        }
        // A plain object's prototype is (some realm's) Object.prototype, whose own prototype is null.
        const proto = Object.getPrototypeOf(value);
        if (proto !== null && Object.getPrototypeOf(proto) !== null) {
          throw new TypeError(`${path} is a ${proto?.constructor?.name ?? 'non-plain'} object, not plain JSON`);
        }
        const entries = Object.keys(value)
          .sort()
          .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
          .map((k) => `${JSON.stringify(k)}:${serialise((value as Record<string, unknown>)[k], seen, `${path}.${k}`)}`);
        return `{${entries.join(',')}}`;
      } finally {
        seen.delete(value);
      }
    }
    default:
      throw new TypeError(`${path} is of type ${typeof value}, which JSON cannot represent`);
  }
}

/** sha256 hex, one-shot (`crypto.hash`, Node ≥ 20.12): no Hash object per call. */
export function sha256Hex(text: string | Buffer): string {
  return hash('sha256', text, 'hex');
}

/** sha256 of the canonical JSON of a value. */
export function hashOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
