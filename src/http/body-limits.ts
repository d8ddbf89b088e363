/**
 * Shape limits on a parsed JSON body, checked before class-transformer and class-validator see it.
 *
 * Why here and hand-written: JSON.parse itself copes with the 2 MB the body parser lets through
 * (it is iterative in V8 and takes a few ms), but what runs after it does not —
 * class-transformer recurses once per level (a few thousand levels overflow the stack: 500), and
 * class-validator's `each` rules visit every item of an array before `ArrayMaxSize` can refuse it
 * (950,000 numbers held the event loop for seconds). A single iterative walk over the parsed value
 * with an explicit stack has no recursion, stops at the first limit crossed, and visits at most
 * `MAX_NODES` values, so its cost is bounded whatever the body. A streaming parser would only
 * save the parse, which is not the problem, and would add a dependency.
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
  /** Values in the whole body. */
  maxNodes: 20_000,
} as const;

/** Keys that would reach an object's prototype once a library copies them onto an object. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Why `value` breaks a limit (`undefined` when it does not), naming where in the body. */
export function bodyLimitViolation(value: unknown, limits = BODY_LIMITS): string | undefined {
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
