import type { Usage } from '../models/model.port';

/**
 * One table per model: price per million tokens and context window.
 *
 * Source: Anthropic's pricing page (https://docs.claude.com/en/docs/about-claude/pricing) and models
 * overview (context windows), prices as listed there in November 2025; the table was written on
 * 2026-11-24 without re-checking the page, so check it before relying on a figure. Cache multipliers
 * on the input price, from the same page: a 5-minute cache write costs 1.25x, a cache read (hit)
 * 0.1x. triad only writes 5-minute entries (no `ttl`).
 */
export const CACHE_WRITE_5M_MULTIPLIER = 1.25;
export const CACHE_READ_MULTIPLIER = 0.1;

/** Context window of every current Claude model without the long-context beta (which triad does not request). */
export const CLAUDE_CONTEXT_TOKENS = 200_000;

/** USD per million tokens. Cache writes are priced at the 5-minute rate. */
export interface ModelPrice {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
}

export interface ModelInfo {
  /** Undefined: unknown (the cost then counts as 0). */
  price?: ModelPrice;
  /** Context window in tokens; undefined: unknown (no compaction by budget). */
  contextTokens?: number;
}

function claude(input: number, output: number): ModelInfo {
  return {
    price: { input, output, cacheWrite: round6(input * CACHE_WRITE_5M_MULTIPLIER), cacheRead: round6(input * CACHE_READ_MULTIPLIER) },
    contextTokens: CLAUDE_CONTEXT_TOKENS,
  };
}

const FREE: ModelInfo = { price: { input: 0, output: 0, cacheWrite: 0, cacheRead: 0 } };

/**
 * An OpenAI model: input, output and cached-input prices, and its context window. OpenAI bills no
 * cache writes (its prompt cache is automatic), so `cacheWrite` is the input price.
 *
 * Source: OpenAI's pricing page (https://platform.openai.com/docs/pricing) and model pages, as
 * remembered when the rows were written on 2026-12-02 without re-checking the page: check them
 * before relying on a figure. Models served by other Chat Completions servers (Ollama, vLLM,
 * llama.cpp, LM Studio) have no row: they cost 0, and the provider says so once per model.
 */
function openai(input: number, output: number, cachedInput: number, contextTokens: number): ModelInfo {
  return { price: { input, output, cacheWrite: input, cacheRead: cachedInput }, contextTokens };
}

/**
 * The table: a row per model family, Anthropic's and OpenAI's; a model it lacks is added here, as a
 * row with its source. Rows by model-id prefix; the longest matching prefix wins, so dated ids (`claude-sonnet-4-5-20250929`)
 * and aliases (`claude-sonnet-4-5`) share a row. Opus 4 and 4.1 kept the old Opus price; Opus 4.5 and
 * later cost less. Families without a known row (newer names) fall back to their family's latest.
 */
export const MODELS: ReadonlyArray<readonly [prefix: string, info: ModelInfo]> = [
  ['triad-offline', FREE],
  ['offline', FREE],
  ['scripted', FREE],
  ['claude-opus-4-1', claude(15, 75)],
  ['claude-opus-4-0', claude(15, 75)],
  ['claude-opus-4-20250514', claude(15, 75)],
  ['claude-opus-4', claude(5, 25)],
  ['claude-opus', claude(5, 25)],
  ['claude-sonnet-4', claude(3, 15)],
  ['claude-sonnet', claude(3, 15)],
  ['claude-haiku-4', claude(1, 5)],
  ['claude-haiku', claude(1, 5)],
  ['claude-3-7-sonnet', claude(3, 15)],
  ['claude-3-5-sonnet', claude(3, 15)],
  ['claude-3-5-haiku', claude(0.8, 4)],
  ['claude-3-opus', claude(15, 75)],
  ['claude-3-sonnet', claude(3, 15)],
  ['claude-3-haiku', claude(0.25, 1.25)],
  ['gpt-5', openai(1.25, 10, 0.125, 400_000)],
  ['gpt-5.1', openai(1.25, 10, 0.125, 400_000)],
  // The -pro variants cost many times their family's price: a row each, so a budget is not passed
  // tenfold under the family's row (a prefix matches whole name parts, so `gpt-5` would price them).
  ['gpt-5-pro', openai(15, 120, 15, 400_000)],
  ['gpt-5-mini', openai(0.25, 2, 0.025, 400_000)],
  ['gpt-5-nano', openai(0.05, 0.4, 0.005, 400_000)],
  ['gpt-4.1', openai(2, 8, 0.5, 1_047_576)],
  ['gpt-4.1-mini', openai(0.4, 1.6, 0.1, 1_047_576)],
  ['gpt-4.1-nano', openai(0.1, 0.4, 0.025, 1_047_576)],
  ['gpt-4o', openai(2.5, 10, 1.25, 128_000)],
  ['gpt-4o-mini', openai(0.15, 0.6, 0.075, 128_000)],
  ['o3', openai(2, 8, 0.5, 200_000)],
  ['o3-pro', openai(20, 80, 20, 200_000)],
  ['o1', openai(15, 60, 7.5, 200_000)],
  ['o1-pro', openai(150, 600, 150, 200_000)],
  ['o1-mini', openai(1.1, 4.4, 0.55, 128_000)],
  ['o3-mini', openai(1.1, 4.4, 0.55, 200_000)],
  ['o4-mini', openai(1.1, 4.4, 0.275, 200_000)],
];

/** A row the operator adds (TRIAD_MODEL_PRICES): USD per million tokens, and the context window when known. */
export interface OperatorPriceRow {
  input: number;
  output: number;
  /** Default: the input price (no discount assumed for a cache read). */
  cacheRead?: number;
  /** Default: the input price. */
  cacheWrite?: number;
  contextTokens?: number;
}

const longestFirst = (rows: ReadonlyArray<readonly [string, ModelInfo]>) => [...rows].sort((a, b) => b[0].length - a[0].length);

let MODELS_LONGEST_FIRST = longestFirst(MODELS);

/**
 * The process's table: the operator's rows (a model a server of their own serves, a price they
 * negotiated) before the built-in ones, so an operator's row for a prefix the table has replaces
 * it. Set once when the process starts (createModelProvider), before any run is driven: a turn's
 * cost is recorded in its event, so replay never prices again.
 */
export function usePriceTable(operatorRows: Readonly<Record<string, OperatorPriceRow>>): void {
  const own = Object.entries(operatorRows).map(([prefix, row]): readonly [string, ModelInfo] => [
    bareId(prefix),
    {
      price: { input: row.input, output: row.output, cacheRead: row.cacheRead ?? row.input, cacheWrite: row.cacheWrite ?? row.input },
      ...(row.contextTokens === undefined ? {} : { contextTokens: row.contextTokens }),
    },
  ]);
  const ownPrefixes = new Set(own.map(([prefix]) => prefix));
  MODELS_LONGEST_FIRST = longestFirst([...own, ...MODELS.filter(([prefix]) => !ownPrefixes.has(prefix))]);
}

/**
 * A model id as the table reads it: lower case; provider-qualified ids (`anthropic/claude-...`,
 * Bedrock's `anthropic.claude-...`, `openai/gpt-4o` as routers write it) as the bare id; Vertex's
 * date after '@' (`claude-opus-4@20250514`) as a part.
 */
function bareId(model: string): string {
  return model.trim().toLowerCase().replace(/^(?:(?:[a-z]{2}\.)?anthropic[/.]|openai\/)/, '').replace('@', '-');
}

/**
 * A prefix matches whole name parts only (`claude-opus-4-1` must not match `claude-opus-4-10`):
 * parts end at `-`, or at `:` before a tag as local servers name models (`qwen2.5-coder:7b`).
 */
function matches(bare: string, prefix: string): boolean {
  return bare === prefix || bare.startsWith(`${prefix}-`) || bare.startsWith(`${prefix}:`);
}

/** The table's row for a model id, or undefined when it is unknown. */
export function modelInfoOf(model: string): ModelInfo | undefined {
  const bare = bareId(model);
  const row = MODELS_LONGEST_FIRST.find(([prefix]) => matches(bare, prefix))?.[1];
  if (row) return row;
  // Any other Claude id: the context window is known even when the price is not.
  return /^claude-/.test(bare) ? { contextTokens: CLAUDE_CONTEXT_TOKENS } : undefined;
}

/** The price row for a model id, or undefined when it is unknown (its cost then counts as 0). */
export function priceOf(model: string): ModelPrice | undefined {
  return modelInfoOf(model)?.price;
}

/** The model's context window in tokens, or undefined when unknown. */
export function contextTokensOf(model: string): number | undefined {
  return modelInfoOf(model)?.contextTokens;
}

/** Cost in USD of one model call's usage (cache writes and reads included), rounded to a millionth of a dollar. */
export function costOf(model: string, usage: Usage): number {
  const p = priceOf(model) ?? FREE.price!;
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

/**
 * A model id as a metrics label, from a bounded set whatever ids runs are launched with: a known
 * row's prefix with at most one version part (`claude-sonnet-4-5`, `triad-offline-1`), a date part
 * dropped (`claude-sonnet-4-5-20250929` is `claude-sonnet-4-5`); any other suffix is the row's
 * prefix; a model outside the table is `other`.
 */
export function modelLabelOf(model: string): string {
  const bare = bareId(model);
  const prefix = MODELS_LONGEST_FIRST.find(([p]) => matches(bare, p))?.[0];
  if (prefix === undefined) return 'other';
  const rest = bare.slice(prefix.length).replace(/-\d{8}$/, '');
  return /^(-\d{1,2})?$/.test(rest) ? `${prefix}${rest}` : prefix;
}
