import { createHash } from 'node:crypto';

/**
 * Canonical JSON: object keys sorted, no whitespace. Throws on values JSON cannot represent
 * faithfully (undefined, functions, symbols, bigint, non-finite numbers, cycles, non-plain objects),
 * so what is hashed or stored is exactly what is read back.
 */
export function canonicalJson(value: unknown): string {
  return serialise(value, new Set(), '$');
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

export function sha256Hex(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

/** sha256 of the canonical JSON of a value. */
export function hashOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
