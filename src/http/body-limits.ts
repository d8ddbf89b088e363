/**
 * Shape limits on a JSON body, checked before class-transformer and class-validator see it.
 *
 * Why here and hand-written: class-transformer recurses once per level (a few thousand levels
 * overflow the stack: 500), and class-validator's `each` rules visit every item of an array before
 * `ArrayMaxSize` can refuse it (950,000 numbers held the event loop for seconds). JSON.parse does
 * not overflow on deep nesting (V8's parser is iterative), but on a 2 MB body of a million
 * brackets, or of a million numbers, it alone takes a good part of a second. So there are two
 * steps, both single loops with no recursion:
 * - `rawJsonShapeViolation`, over the raw bytes before JSON.parse: nesting depth and a count of
 *   values (commas and containers outside strings), so JSON.parse only ever sees a small tree;
 * - `bodyLimitViolation`, over the parsed value with an explicit stack: arrays, strings, keys,
 *   prototype keys, each refusal naming where in the body it is.
 * A full streaming parser would add a dependency to do what the byte scan does in 30 lines.
 */

export const BODY_LIMITS = {
  /** Nesting of objects and arrays; the deepest DTO is 4 levels. */
  maxDepth: 32,
  /** Items of any one array (the longest DTO array, acceptance criteria, takes 100). */
  maxArrayLength: 1000,
  /** Characters of any one string (the longest DTO strings, prompts and goals, take 20,000). */
  maxStringLength: 100_000,
  /** Keys of any one object, and characters of any one key. */
  maxKeys: 200,
  maxKeyLength: 200,
  /** Values in the whole body (a launch at every documented maximum holds about 500). */
  maxNodes: 5000,
} as const;

export type BodyLimits = { readonly [K in keyof typeof BODY_LIMITS]: number };

/** Keys that would reach an object's prototype once a library copies them onto an object. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Why `value` breaks a limit (`undefined` when it does not), naming where in the body. */
export function bodyLimitViolation(value: unknown, limits: BodyLimits = BODY_LIMITS): string | undefined {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: 'body', depth: 0 }];
  let nodes = 0;
  while (stack.length > 0) {
    const { value: v, path, depth } = stack.pop()!;
    if (++nodes > limits.maxNodes) return `the body holds more than ${limits.maxNodes} values`;
    if (typeof v === 'string') {
      if (v.length > limits.maxStringLength) return `${path} is longer than ${limits.maxStringLength} characters`;
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= limits.maxDepth) return `${path} is nested deeper than ${limits.maxDepth} levels`;
    if (Array.isArray(v)) {
      if (v.length > limits.maxArrayLength) return `${path} has ${v.length} items; at most ${limits.maxArrayLength} are accepted`;
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: `${path}[${i}]`, depth: depth + 1 });
      continue;
    }
    let keys = 0;
    // for-in instead of Object.keys: stops at the limit without listing a huge object first.
    for (const key in v) {
      if (!Object.prototype.hasOwnProperty.call(v, key)) continue;
      if (++keys > limits.maxKeys) return `${path} has more than ${limits.maxKeys} keys`;
      if (key.length > limits.maxKeyLength) return `${path} has a key longer than ${limits.maxKeyLength} characters`;
      if (FORBIDDEN_KEYS.has(key)) return `${path} has the key ${key}, which is not accepted`;
      stack.push({ value: (v as Record<string, unknown>)[key], path: `${path}.${key}`, depth: depth + 1 });
    }
  }
  return undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;

/** Index of the quote that closes the string opened at `open` (native search, not a byte loop). */
function closingQuote(bytes: Uint8Array, open: number): number {
  for (let q = bytes.indexOf(QUOTE, open + 1); q >= 0; q = bytes.indexOf(QUOTE, q + 1)) {
    let backslashes = 0;
    while (bytes[q - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return q;
  }
  return bytes.length;
}

/**
 * Why the raw JSON text `bytes` is too deep or holds too many values (`undefined` when it is not).
 * Counts only; whether it is valid JSON is JSON.parse's to say.
 */
export function rawJsonShapeViolation(bytes: Uint8Array, limits: BodyLimits = BODY_LIMITS): string | undefined {
  let depth = 0;
  let values = 1;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b === QUOTE) {
      i = closingQuote(bytes, i);
      continue;
    }
    if (b === 0x5b || b === 0x7b) {
      if (++depth > limits.maxDepth) return `the body is nested deeper than ${limits.maxDepth} levels`;
      if (++values > limits.maxNodes) return `the body holds more than ${limits.maxNodes} values`;
    } else if (b === 0x5d || b === 0x7d) depth--;
    else if (b === COMMA && ++values > limits.maxNodes) return `the body holds more than ${limits.maxNodes} values`;
  }
  return undefined;
}
