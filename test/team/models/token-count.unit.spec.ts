import { ModelError, type TokenCountRequest } from '../../../src/team/models/model.port';
import { COUNT_FROM_SHARE, estimateRequestTokens, prefixKey, tokenCountTally, TokenCounter, worthCounting } from '../../../src/team/models/token-count';

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

describe('when a token count is worth asking for', () => {
  const long = (chars: number): TokenCountRequest => ({ ...base, messages: [{ role: 'user', content: 'x'.repeat(chars) }] });

  it('given an estimate below half the limit, then no count: the estimate decides alone', () => {
    expect(COUNT_FROM_SHARE).toBe(0.5);
    expect(worthCounting(0, 180_000)).toBe(false);
    expect(worthCounting(89_999, 180_000)).toBe(false);
  });

  it('given an estimate at half the limit or more (over it too), then a count', () => {
    expect(worthCounting(90_000, 180_000)).toBe(true);
    expect(worthCounting(179_999, 180_000)).toBe(true);
    expect(worthCounting(250_000, 180_000)).toBe(true);
  });

  it('estimates the whole request: system prompt, tools and messages at 4 characters a token', () => {
    const bare = estimateRequestTokens({ ...base, system: '', tools: [], messages: [] });
    expect(bare).toBe(1); // "[]", the tools' JSON
    expect(estimateRequestTokens(long(4_000))).toBe(estimateRequestTokens(long(0)) + 1_000);
    expect(estimateRequestTokens({ ...base, system: 'y'.repeat(400) })).toBe(estimateRequestTokens({ ...base, system: '' }) + 100);
    expect(estimateRequestTokens(base)).toBeGreaterThan(estimateRequestTokens({ ...base, tools: [] }));
  });

  it('given a short conversation and a 180k limit, when the driver asks, then no: the skip is tallied and the provider never called', async () => {
    const asked: TokenCountRequest[] = [];
    const counter = new TokenCounter({ countTokens: async (r) => (asked.push(r), 1) });
    const skipped = tokenCountTally.skipped;
    expect(counter.worthAsking(long(4_000), 180_000)).toBe(false);
    expect(tokenCountTally.skipped).toBe(skipped + 1);
    expect(asked).toEqual([]);
  });

  it('given a conversation near the limit, then yes, and the count is tallied as asked', async () => {
    const counter = new TokenCounter({ countTokens: async () => 95_000 });
    const before = { ...tokenCountTally };
    const near = long(4 * 95_000);
    expect(counter.worthAsking(near, 180_000)).toBe(true);
    expect(await counter.count(near)).toBe(95_000);
    expect(tokenCountTally).toEqual({ ...before, ok: before.ok + 1 });
  });

  it('given a prompt counted before, then yes whatever the estimate: the known count is free', async () => {
    const counter = new TokenCounter({ countTokens: async () => 10 });
    await counter.count(long(100));
    expect(counter.worthAsking(long(100), 180_000)).toBe(true);
    expect(counter.worthAsking(long(101), 180_000)).toBe(false);
  });

  it('given a failing count, then it is tallied as failed', async () => {
    const counter = new TokenCounter({ countTokens: async () => Promise.reject(new ModelError('server', 'down')) });
    const failed = tokenCountTally.failed;
    expect(await counter.count(base)).toBeUndefined();
    expect(tokenCountTally.failed).toBe(failed + 1);
  });
});
