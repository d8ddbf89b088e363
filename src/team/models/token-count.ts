import { createHash } from 'node:crypto';
import type { ModelProvider, TokenCountRequest } from './model.port';

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
    return this.counts.get(prefixKey(request)) ?? undefined;
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
    } catch (err) {
      if (request.signal?.aborted) return undefined;
      this.fallbacks += 1;
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
