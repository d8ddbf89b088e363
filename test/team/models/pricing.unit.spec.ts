import { CACHE_READ_MULTIPLIER, CACHE_WRITE_5M_MULTIPLIER, contextTokensOf, costOf, MODELS, priceOf, usePriceTable } from '../../../src/team/domain/pricing';

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
    expect(priceOf('llama3.2:3b')).toBeUndefined();
    expect(costOf('llama3.2:3b', { inputTokens: 1000, outputTokens: 1000 })).toBe(0);
  });

  it('adds input, output and cache tokens, rounded to a millionth of a dollar', () => {
    // 1000 × $3 + 500 × $15 + 2000 × $3.75 + 10000 × $0.30, per million tokens
    expect(costOf('claude-sonnet-4-5', { inputTokens: 1000, outputTokens: 500, cacheWriteTokens: 2000, cacheReadTokens: 10000 })).toBe(0.021);
    expect(costOf('claude-3-haiku-20240307', { inputTokens: 1, outputTokens: 0 })).toBe(0); // $0.00000025 rounds away
    expect(costOf('claude-haiku-4-5', { inputTokens: 3, outputTokens: 1 })).toBe(0.000008);
  });

  it('prices every Claude row from its input price with the cache multipliers (writes 1.25x, reads 0.1x)', () => {
    expect([CACHE_WRITE_5M_MULTIPLIER, CACHE_READ_MULTIPLIER]).toEqual([1.25, 0.1]);
    for (const [prefix, info] of MODELS.filter(([p]) => p.startsWith('claude'))) {
      expect({ prefix, cacheWrite: info.price!.cacheWrite, cacheRead: info.price!.cacheRead }).toEqual({
        prefix,
        cacheWrite: Math.round(info.price!.input * 1.25 * 1e6) / 1e6,
        cacheRead: Math.round(info.price!.input * 0.1 * 1e6) / 1e6,
      });
    }
  });

  it('gives context windows from the same table: 200k for Claude (known price or not), none for unknown models', () => {
    expect(contextTokensOf('claude-sonnet-4-6')).toBe(200_000);
    expect(contextTokensOf('anthropic.claude-haiku-4-5-20251001-v1:0')).toBe(200_000);
    expect(contextTokensOf('claude-sonnetx')).toBe(200_000);
    expect(priceOf('claude-sonnetx')).toBeUndefined();
    expect(contextTokensOf('triad-offline-1')).toBeUndefined();
    expect(contextTokensOf('llama3.2:3b')).toBeUndefined();
  });

  it('a cached turn costs less than the same prompt uncached', () => {
    const uncached = costOf('claude-sonnet-4-6', { inputTokens: 10_000, outputTokens: 0 });
    const cached = costOf('claude-sonnet-4-6', { inputTokens: 0, outputTokens: 0, cacheReadTokens: 9_000, cacheWriteTokens: 1_000 });
    expect(uncached).toBe(0.03);
    expect(cached).toBe(0.00645); // 9,000 × $0.30 + 1,000 × $3.75 per million
  });

  it.each([
    ['gpt-4o', 2.5, 10, 1.25, 128_000],
    ['gpt-4o-2024-08-06', 2.5, 10, 1.25, 128_000],
    ['gpt-4o-mini', 0.15, 0.6, 0.075, 128_000],
    ['openai/gpt-4.1-mini', 0.4, 1.6, 0.1, 1_047_576],
    ['gpt-5-mini-2025-08-07', 0.25, 2, 0.025, 400_000],
    ['o4-mini', 1.1, 4.4, 0.275, 200_000],
    // The -pro variants have rows of their own: their family's would price them a tenth of what they cost.
    ['gpt-5-pro', 15, 120, 15, 400_000],
    ['gpt-5-pro-2025-10-06', 15, 120, 15, 400_000],
    ['o3-pro', 20, 80, 20, 200_000],
    ['o1-pro', 150, 600, 150, 200_000],
    ['gpt-5.1', 1.25, 10, 0.125, 400_000],
  ])('%s (OpenAI) costs $%d in / $%d out / $%d cached in per million, with a %d-token window', (model, input, output, cacheRead, window) => {
    expect(priceOf(model)).toEqual({ input, output, cacheWrite: input, cacheRead });
    expect(contextTokensOf(model)).toBe(window);
  });

  it('prices an OpenAI call\'s cached prompt tokens at the cached rate', () => {
    // 2,000 × $2.50 + 8,000 × $1.25 + 100 × $10, per million
    expect(costOf('gpt-4o', { inputTokens: 2_000, outputTokens: 100, cacheReadTokens: 8_000 })).toBe(0.016);
    expect(priceOf('gpt-4oo')).toBeUndefined();
  });
});

describe("the operator's rows (usePriceTable)", () => {
  afterEach(() => usePriceTable({}));

  it('given a row for a model the table lacks, then its calls are priced by it; the cache at the input price unless given', () => {
    expect(priceOf('qwen2.5-coder:7b')).toBeUndefined();
    usePriceTable({ 'qwen2.5-coder': { input: 0.5, output: 2 } });
    // A tag after ':' (as local servers name models) is a name part; a longer word is not.
    expect(priceOf('qwen2.5-coder:7b')).toEqual({ input: 0.5, output: 2, cacheRead: 0.5, cacheWrite: 0.5 });
    expect(priceOf('qwen2.5-coderx')).toBeUndefined();
    // 1,000 × $0.50 + 200 × $2, per million
    expect(costOf('qwen2.5-coder', { inputTokens: 1_000, outputTokens: 200 })).toBe(0.0009);
  });

  it("given a row for a prefix the table has, then the operator's row replaces it, and the window is the operator's", () => {
    usePriceTable({ 'gpt-4o': { input: 1, output: 4, cacheRead: 0.5, contextTokens: 64_000 } });
    expect(priceOf('gpt-4o-2024-08-06')).toEqual({ input: 1, output: 4, cacheRead: 0.5, cacheWrite: 1 });
    expect(contextTokensOf('gpt-4o')).toBe(64_000);
    // The rest of the table is as it was.
    expect(priceOf('gpt-4o-mini')).toEqual({ input: 0.15, output: 0.6, cacheWrite: 0.15, cacheRead: 0.075 });
  });

  it('given no rows again, then the built-in table alone prices', () => {
    usePriceTable({ 'gpt-4o': { input: 1, output: 4 } });
    usePriceTable({});
    expect(priceOf('gpt-4o')).toEqual({ input: 2.5, output: 10, cacheWrite: 2.5, cacheRead: 1.25 });
  });
});
