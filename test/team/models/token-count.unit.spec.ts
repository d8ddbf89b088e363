import { ModelError, type TokenCountRequest } from '../../../src/team/models/model.port';
import { prefixKey, TokenCounter } from '../../../src/team/models/token-count';

const base: TokenCountRequest = {
  model: 'claude-sonnet-4-6',
  system: 'sys',
  tools: [
    { name: 'b', description: 'B', input_schema: { type: 'object' } },
    { name: 'a', description: 'A', input_schema: { type: 'object' } },
  ],
  messages: [{ role: 'user', content: 'hello' }],
};

const withMessage = (text: string): TokenCountRequest => ({ ...base, messages: [...base.messages, { role: 'assistant', content: text }] });

describe('token counter', () => {
  it('given a prefix counted once, when asked again, then the provider is not asked again', async () => {
    const asked: TokenCountRequest[] = [];
    const counter = new TokenCounter({ countTokens: async (r) => (asked.push(r), 100 + r.messages.length) });
    expect(await counter.count(base)).toBe(101);
    expect(await counter.count({ ...base, tools: [...base.tools].reverse() })).toBe(101); // same prompt as sent
    expect(counter.lookup(base)).toBe(101);
    expect(await counter.count(withMessage('x'))).toBe(102);
    expect(asked).toHaveLength(2);
    expect(counter.calls).toBe(2);
    expect(counter.lookup(withMessage('y'))).toBeUndefined();
  });

  it('given a failing count, then undefined (the estimate), one warning, a fallback counted, and no retry for that prefix', async () => {
    const warnings: string[] = [];
    let calls = 0;
    const counter = new TokenCounter(
      {
        countTokens: async () => {
          calls += 1;
          throw new ModelError('server', 'Anthropic API HTTP 500 api_error: boom');
        },
      },
      { warn: (m) => warnings.push(m) },
    );
    expect(await counter.count(base)).toBeUndefined();
    expect(await counter.count(base)).toBeUndefined();
    expect(counter.lookup(base)).toBeUndefined();
    expect(calls).toBe(1);
    expect(counter.fallbacks).toBe(1);
    expect(warnings).toEqual(['token count failed, using the estimate: Anthropic API HTTP 500 api_error: boom']);
  });

  it('given a provider without a counter, then undefined and nothing logged', async () => {
    const counter = new TokenCounter({});
    expect(counter.available).toBe(false);
    expect(await counter.count(base)).toBeUndefined();
    expect(counter.fallbacks).toBe(0);
  });

  it('keeps the most recently used prefixes only', async () => {
    const counter = new TokenCounter({ countTokens: async (r) => r.messages.length }, undefined, 2);
    await counter.count(withMessage('1'));
    await counter.count(withMessage('2'));
    await counter.count(withMessage('1')); // used again: now the newest
    await counter.count(withMessage('3'));
    expect(counter.lookup(withMessage('1'))).toBe(2);
    expect(counter.lookup(withMessage('2'))).toBeUndefined();
    expect(counter.lookup(withMessage('3'))).toBe(2);
  });

  it('keys on model, system, tools, thinking and every message', () => {
    const keys = new Set([
      prefixKey(base),
      prefixKey({ ...base, model: 'claude-opus-4-6' }),
      prefixKey({ ...base, system: 'other' }),
      prefixKey({ ...base, tools: base.tools.slice(1) }),
      prefixKey({ ...base, thinking: { budgetTokens: 1024 } }),
      prefixKey(withMessage('x')),
    ]);
    expect(keys.size).toBe(6);
  });
});
