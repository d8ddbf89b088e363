import { costOf, priceOf } from '../../../src/team/models/pricing';

describe('pricing', () => {
  it.each([
    ['claude-opus-4-5-20251101', 5, 25],
    ['claude-opus-4-6', 5, 25],
    ['claude-opus-4-1-20250805', 15, 75],
    ['claude-opus-4-20250514', 15, 75],
    ['claude-opus-4-0', 15, 75],
    ['claude-sonnet-4-5', 3, 15],
    ['claude-sonnet-4-20250514', 3, 15],
    ['claude-haiku-4-5-20251001', 1, 5],
    ['claude-3-5-haiku-20241022', 0.8, 4],
    ['claude-3-7-sonnet-latest', 3, 15],
    ['anthropic.claude-sonnet-4-5-20250929-v1:0', 3, 15],
    ['claude-opus-4@20250514', 15, 75],
  ])('%s costs $%d in / $%d out per million', (model, input, output) => {
    expect(priceOf(model)).toMatchObject({ input, output, cacheWrite: input * 1.25, cacheRead: input / 10 });
  });

  it('matches whole name parts only', () => {
    expect(priceOf('claude-opus-4-10')).toMatchObject({ input: 5 });
    expect(priceOf('claude-sonnetx')).toBeUndefined();
  });

  it('is free for the offline and scripted models, and 0 for unknown models', () => {
    expect(costOf('triad-offline-1', { inputTokens: 1e6, outputTokens: 1e6 })).toBe(0);
    expect(costOf('scripted', { inputTokens: 1e6, outputTokens: 1e6 })).toBe(0);
    expect(priceOf('gpt-4o')).toBeUndefined();
    expect(costOf('gpt-4o', { inputTokens: 1000, outputTokens: 1000 })).toBe(0);
  });

  it('adds input, output and cache tokens, rounded to a millionth of a dollar', () => {
    // 1000 × $3 + 500 × $15 + 2000 × $3.75 + 10000 × $0.30, per million tokens
    expect(costOf('claude-sonnet-4-5', { inputTokens: 1000, outputTokens: 500, cacheWriteTokens: 2000, cacheReadTokens: 10000 })).toBe(0.021);
    expect(costOf('claude-3-haiku-20240307', { inputTokens: 1, outputTokens: 0 })).toBe(0); // $0.00000025 rounds away
    expect(costOf('claude-haiku-4-5', { inputTokens: 3, outputTokens: 1 })).toBe(0.000008);
  });
});
