import { createHash } from 'node:crypto';
import { estimateTextTokens, estimateTokens } from '../domain/resilience/context-window';
import type { ModelProvider, TokenCountRequest } from './model.port';

/**
 * A count is asked for only once the local estimate (about 4 characters a token) reaches this
 * share of the limit the request must stay under. Code and JSON tokenise nearer 3 characters a
 * token, so a count runs above the estimate, but not twice it: below half the limit the request
 * fits whatever the count says, and asking would cost a round trip (and the provider's rate limit)
 * before every call for nothing.
 */
export const COUNT_FROM_SHARE = 0.5;

/** The rule: whether a request estimated at `estimateTokens` is close enough to `limitTokens` to be counted. */
export function worthCounting(estimateTokens: number, limitTokens: number): boolean {
  return estimateTokens >= limitTokens * COUNT_FROM_SHARE;
}

/** The local estimate of a whole request: system prompt, tools' JSON and messages. */
export function estimateRequestTokens(request: TokenCountRequest): number {
  return estimateTextTokens(request.system) + estimateTextTokens(JSON.stringify(request.tools)) + estimateTokens(request.messages);
}

/**
 * This process's token counts, all runs together (each run has its own TokenCounter): what
 * `/metrics` reports. `ok` and `failed` (the estimate stood in): requests made to the provider;
 * `skipped`: calls whose estimate was far enough from the limit that none was made.
 */
export const tokenCountTally = { ok: 0, failed: 0, skipped: 0 };

/**
 * The provider's token counts (Anthropic's token-counting endpoint), remembered per prompt prefix:
 * the hash of model, system prompt, tools (in name order, as they are sent), thinking and messages.
 * A run decides on the same prefix more than once (a retry, a catch-up after someone else's append,
 * a resume in the same process), and each asks the API only once.
 *
 * `count` never throws: when the provider has no counter or the count fails, it answers undefined
 * (the caller estimates instead), logs why once per prefix, and counts the fallback in `fallbacks`.
 * The cache keeps the last `maxEntries` prefixes (a run's conversation grows by one prefix a turn).
 */
export class TokenCounter {
  private readonly counts = new Map<string, number | null>();
  /** Counts that failed, so the estimate was used. */
  fallbacks = 0;
  /** Counts the provider was asked for (cache misses). */
  calls = 0;

  constructor(
    private readonly provider: Pick<ModelProvider, 'countTokens'>,
    private readonly logger?: { warn(message: string): void },
    private readonly maxEntries = 64,
  ) {}

  /** Whether the provider counts at all. */
  get available(): boolean {
    return typeof this.provider.countTokens === 'function';
  }

  /** The remembered count of this prompt, without asking the provider; undefined when unknown or failed. */
  lookup(request: TokenCountRequest): number | undefined {
    // Most runs never come near their limit and count nothing: no hash of their conversation then.
    if (this.counts.size === 0) return undefined;
    return this.counts.get(prefixKey(request)) ?? undefined;
  }

  /**
   * Whether this request, which must stay under `limitTokens`, is worth a count (`worthCounting`
   * on its local estimate, or a count of it is known already); a request that is not is tallied
   * as skipped.
   */
  worthAsking(request: TokenCountRequest, limitTokens: number): boolean {
    if (worthCounting(estimateRequestTokens(request), limitTokens) || this.lookup(request) !== undefined) return true;
    tokenCountTally.skipped += 1;
    return false;
  }

  /** The provider's count of this prompt (remembered), or undefined when it cannot count it. */
  async count(request: TokenCountRequest): Promise<number | undefined> {
    const key = prefixKey(request);
    if (this.counts.has(key)) {
      const known = this.counts.get(key)!;
      // Most recently used last: the oldest prefix is the one evicted.
      this.counts.delete(key);
      this.counts.set(key, known);
      return known ?? undefined;
    }
    if (!this.provider.countTokens) return undefined;
    this.calls += 1;
    let counted: number | null;
    try {
      counted = await this.provider.countTokens(request);
      tokenCountTally.ok += 1;
    } catch (err) {
      if (request.signal?.aborted) return undefined;
      this.fallbacks += 1;
      tokenCountTally.failed += 1;
      this.logger?.warn(`token count failed, using the estimate: ${(err as Error)?.message ?? String(err)}`);
      counted = null;
    }
    this.counts.set(key, counted);
    while (this.counts.size > this.maxEntries) this.counts.delete(this.counts.keys().next().value!);
    return counted ?? undefined;
  }
}

/** The cache key of a prompt: what the count depends on, tools in the order they are sent. */
export function prefixKey(request: TokenCountRequest): string {
  const tools = [...request.tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const hash = createHash('sha256');
  hash.update(JSON.stringify([request.model, request.system, tools, request.thinking ?? null]));
  for (const message of request.messages) hash.update('\u0000').update(JSON.stringify(message));
  return hash.digest('hex');
}
