import { BODY_LIMITS, bodyLimitViolation } from '../../src/http/body-limits';

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
    const wide = { a: Array.from({ length: 30 }, () => Array.from({ length: 1000 }, () => 0)) };
    expect(bodyLimitViolation(wide)).toBe('the body holds more than 20000 values');
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      expect(bodyLimitViolation(JSON.parse(`{"team":{"${key}":{"x":1}}}`))).toBe(`body.team has the key ${key}, which is not accepted`);
    }
  });

  it('names the first offending place in an array', () => {
    expect(bodyLimitViolation({ acceptanceCriteria: ['ok', 'y'.repeat(100_001)] })).toBe('body.acceptanceCriteria[1] is longer than 100000 characters');
  });
});
