import type { Usage } from './model.port';

/** USD per million tokens. Cache writes are priced at the 5-minute TTL rate. */
export interface ModelPrice {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
}

const FREE: ModelPrice = { input: 0, output: 0, cacheWrite: 0, cacheRead: 0 };

/** Cache writes cost 1.25x input and cache reads 0.1x input across Anthropic's current models. */
function price(input: number, output: number): ModelPrice {
  return { input, output, cacheWrite: round6(input * 1.25), cacheRead: round6(input * 0.1) };
}

/**
 * Prices by model-id prefix; the first (longest, most specific) match wins, so dated ids
 * (`claude-sonnet-4-5-20250929`) and aliases (`claude-sonnet-4-5`) share a row. Opus 4 and 4.1 kept
 * the old Opus price; Opus 4.5 and later cost less. Families without a known price (newer names)
 * fall back to their family's latest known price.
 */
const PRICES: ReadonlyArray<readonly [prefix: string, price: ModelPrice]> = [
  ['triad-offline', FREE],
  ['offline', FREE],
  ['scripted', FREE],
  ['claude-opus-4-1', price(15, 75)],
  ['claude-opus-4-0', price(15, 75)],
  ['claude-opus-4-20250514', price(15, 75)],
  ['claude-opus-4', price(5, 25)],
  ['claude-opus', price(5, 25)],
  ['claude-sonnet-4', price(3, 15)],
  ['claude-sonnet', price(3, 15)],
  ['claude-haiku-4', price(1, 5)],
  ['claude-haiku', price(1, 5)],
  ['claude-3-7-sonnet', price(3, 15)],
  ['claude-3-5-sonnet', price(3, 15)],
  ['claude-3-5-haiku', price(0.8, 4)],
  ['claude-3-opus', price(15, 75)],
  ['claude-3-sonnet', price(3, 15)],
  ['claude-3-haiku', { input: 0.25, output: 1.25, cacheWrite: 0.3, cacheRead: 0.03 }],
];

const PRICES_LONGEST_FIRST = [...PRICES].sort((a, b) => b[0].length - a[0].length);

/** The price row for a model id, or undefined when it is unknown (its cost then counts as 0). */
export function priceOf(model: string): ModelPrice | undefined {
  const id = model.trim().toLowerCase();
  // Provider-qualified ids (`anthropic/claude-...`, Bedrock's `anthropic.claude-...`) price as the bare id.
  // Vertex writes the date after '@' (`claude-opus-4@20250514`).
  const bare = id.replace(/^(?:[a-z]{2}\.)?anthropic[/.]/, '').replace('@', '-');
  // A prefix matches whole name parts only: `claude-opus-4-1` must not price `claude-opus-4-10`.
  return PRICES_LONGEST_FIRST.find(([prefix]) => bare === prefix || bare.startsWith(`${prefix}-`))?.[1];
}

/** Cost in USD of one model call's usage, rounded to a millionth of a dollar. */
export function costOf(model: string, usage: Usage): number {
  const p = priceOf(model) ?? FREE;
  const micros =
    usage.inputTokens * p.input +
    usage.outputTokens * p.output +
    (usage.cacheWriteTokens ?? 0) * p.cacheWrite +
    (usage.cacheReadTokens ?? 0) * p.cacheRead;
  // tokens × USD-per-million = micro-dollars, so rounding here is rounding to 1e-6 USD.
  return Math.round(micros) / 1e6;
}

function round6(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
