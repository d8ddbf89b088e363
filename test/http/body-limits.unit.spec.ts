import fc from 'fast-check';
import { BODY_LIMITS, bodyLimitViolation, rawJsonShapeViolation } from '../../src/http/body-limits';

// The shape limits a parsed body must meet before any DTO library sees it.

const nested = (depth: number, open: string, close: string, leaf = '1') => JSON.parse(open.repeat(depth) + leaf + close.repeat(depth)) as unknown;

describe('body limits', () => {
  it('accepts a launch body of the documented maximum sizes', () => {
    const body = {
      goal: 'g'.repeat(20_000),
      acceptanceCriteria: Array.from({ length: 100 }, () => 'c'.repeat(2000)),
      team: { executor: { model: 'm', tools: Array.from({ length: 50 }, (_, i) => `tool_${i}`), systemPrompt: 'p'.repeat(20_000) } },
      budget: { totalTokens: 1, perRole: { executor: 1 } },
    };
    expect(bodyLimitViolation(body)).toBeUndefined();
  });

  it('refuses nesting far beyond the stack depth without recursing (JSON.parse itself copes)', () => {
    for (const value of [nested(100_000, '[', ']'), nested(50_000, '{"a":', '}')]) {
      expect(bodyLimitViolation({ x: value })).toMatch(/is nested deeper than 32 levels$/);
    }
    expect(bodyLimitViolation(nested(BODY_LIMITS.maxDepth - 1, '[', ']'))).toBeUndefined();
    expect(bodyLimitViolation(nested(BODY_LIMITS.maxDepth, '[', ']', '[]'))).toMatch(/nested deeper/);
  });

  it('refuses a long array by its length, before visiting its items', () => {
    const criteria = new Array<number>(950_000).fill(7);
    expect(bodyLimitViolation({ goal: 'g', acceptanceCriteria: criteria })).toBe('body.acceptanceCriteria has 950000 items; at most 1000 are accepted');
  });

  it('refuses long strings, long keys, many keys, many values, and prototype keys', () => {
    expect(bodyLimitViolation({ goal: 'x'.repeat(100_001) })).toBe('body.goal is longer than 100000 characters');
    expect(bodyLimitViolation({ ['k'.repeat(201)]: 1 })).toBe('body has a key longer than 200 characters');
    expect(bodyLimitViolation(Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`k${i}`, i])))).toBe('body has more than 200 keys');
    const wide = { a: Array.from({ length: 6 }, () => Array.from({ length: 1000 }, () => 0)) };
    expect(bodyLimitViolation(wide)).toBe('the body holds more than 5000 values');
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      expect(bodyLimitViolation(JSON.parse(`{"team":{"${key}":{"x":1}}}`))).toBe(`body.team has the key ${key}, which is not accepted`);
    }
  });

  it('names the first offending place in an array', () => {
    expect(bodyLimitViolation({ acceptanceCriteria: ['ok', 'y'.repeat(100_001)] })).toBe('body.acceptanceCriteria[1] is longer than 100000 characters');
  });
});

describe('raw JSON shape, before JSON.parse', () => {
  const scan = (text: string) => rawJsonShapeViolation(Buffer.from(text));

  it('refuses deep nesting and many values from the bytes alone', () => {
    expect(scan(`{"goal":${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}}`)).toBe('the body is nested deeper than 32 levels');
    expect(scan(JSON.stringify({ goal: 'g', acceptanceCriteria: new Array<number>(950_000).fill(7) }))).toBe('the body holds more than 5000 values');
    expect(scan(`${'['.repeat(32)}${']'.repeat(32)}`)).toBeUndefined();
    expect(scan(`${'['.repeat(33)}${']'.repeat(33)}`)).toBe('the body is nested deeper than 32 levels');
  });

  it('does not count brackets, braces or commas inside strings, escaped quotes included', () => {
    const inside = '[{,'.repeat(10_000);
    expect(scan(JSON.stringify({ goal: inside, acceptanceCriteria: [`say "${inside}\\`, '\\"', '"[[['] }))).toBeUndefined();
    expect(scan(`{"a":"\\\\"${',1'.repeat(5000)}}`)).toBe('the body holds more than 5000 values');
  });

  it('agrees with the walk over the parsed body on what fits', () => {
    const body = { goal: 'g', acceptanceCriteria: Array.from({ length: 100 }, (_, i) => `c${i}`), team: { executor: { tools: ['a', 'b'] } } };
    expect(scan(JSON.stringify(body))).toBeUndefined();
    expect(bodyLimitViolation(body)).toBeUndefined();
  });

  it('sees the same nesting as the parsed value, whatever the strings hold (property)', () => {
    const containers = (v: unknown): number => (typeof v === 'object' && v !== null ? 1 + Math.max(0, ...Object.values(v).map(containers)) : 0);
    const tricky = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('"', '\\', '\\"', '[', ']{', ',', '\\\\"'));
    const limits = { ...BODY_LIMITS, maxDepth: 3, maxNodes: 1e9 };
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5, stringUnit: fc.oneof(tricky, fc.string()) as fc.Arbitrary<string> }), (v) => {
        expect(rawJsonShapeViolation(Buffer.from(JSON.stringify(v)), limits) !== undefined).toBe(containers(v) > 3);
        // Too deep is refused; the walk may name another violation first (a key such as `prototype`).
        const violation = bodyLimitViolation(v, limits);
        if (containers(v) > 3) expect(violation).toBeDefined();
        else expect(violation?.includes('nested deeper') ?? false).toBe(false);
      }),
      { numRuns: 200 },
    );
  });
});
