import type { ChatMessage, ContentBlock } from '../../models/model.port';
import type { ContextWindowPolicy } from './policies';
import { contextTokensOf } from '../pricing';

/**
 * Keeping a conversation inside the model's context window. Pure: token estimates, the budget, and
 * the compaction plan — which older messages are replaced by one summary message. The driver asks
 * a (small) model for the summary and records it in a ContextCompacted event; the fold applies the
 * recorded plan with `applyCompaction`, so replay rebuilds exactly the conversation the model saw.
 */

export const CHARS_PER_TOKEN = 4;
export const IMAGE_TOKENS = 1000;
export const DEFAULT_MARGIN_TOKENS = 20_000;
export const DEFAULT_KEEP_RECENT_MESSAGES = 4;
/** A compaction for being over budget keeps messages worth this share of the budget. */
export const DEFAULT_COMPACT_TO_PERCENT = 50;
/** Room kept for the summary message itself when planning. */
export const SUMMARY_RESERVE_TOKENS = 1_000;
export const SUMMARY_MAX_OUTPUT_TOKENS = 1_024;
/** Fallback when no summary can be had: each archived message cut to this many characters. */
export const TRUNCATE_CHARS = 150;
export const DEFAULT_CLAUDE_SUMMARY_MODEL = 'claude-haiku-4-5';

export const SUMMARY_HEADER = '[Summary of the earlier conversation: older messages were archived to fit the context window]';

export const SUMMARY_SYSTEM_PROMPT =
  'You compact the history of an agent working on a task so it can continue with less context. Summarise the ' +
  'conversation below in at most 300 words: the task, goal and acceptance criteria; what was done (files read, ' +
  'written, commands run) and what each result showed; decisions and open problems. Keep file names, paths, ' +
  'identifiers and error messages exact. Write the summary only.';

const isClaude = (model: string) => /^claude-/i.test(model);

/** The model's context limit: the run's policy, else the model table's (Claude: 200k); undefined if unknown. */
export function contextLimitOf(model: string, policy?: ContextWindowPolicy): number | undefined {
  if (policy?.limitTokens !== undefined) return policy.limitTokens;
  return contextTokensOf(model);
}

export function summaryModelOf(roleModel: string, policy?: ContextWindowPolicy): string {
  return policy?.summaryModel ?? (isClaude(roleModel) ? DEFAULT_CLAUDE_SUMMARY_MODEL : roleModel);
}

/** Tokens the conversation may use: limit − system prompt − margin. */
export function contextBudget(limitTokens: number, systemTokens: number, marginTokens = DEFAULT_MARGIN_TOKENS): number {
  return limitTokens - systemTokens - marginTokens;
}

export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

/** About 4 characters per token; an image counts 1,000 tokens. */
export function estimateMessageTokens(message: ChatMessage): number {
  if (typeof message.content === 'string') return estimateTextTokens(message.content);
  let chars = 0;
  let images = 0;
  for (const block of message.content as Array<ContentBlock | { type: string }>) {
    switch (block.type) {
      case 'text':
        chars += (block as { text: string }).text.length;
        break;
      case 'tool_use': {
        const b = block as { name: string; input: unknown };
        chars += b.name.length + JSON.stringify(b.input ?? {}).length;
        break;
      }
      case 'tool_result': {
        const content = (block as { content: unknown }).content;
        chars += typeof content === 'string' ? content.length : JSON.stringify(content ?? '').length;
        break;
      }
      case 'image':
        images += 1;
        break;
      default:
        chars += JSON.stringify(block).length;
    }
  }
  return Math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS;
}

export function estimateTokens(messages: readonly ChatMessage[]): number {
  let total = 0;
  for (const m of messages) total += estimateMessageTokens(m);
  return total;
}

export interface CompactionPlan {
  /** Archived: messages[fromIndex, toIndex) are replaced by one summary message. */
  fromIndex: number;
  toIndex: number;
  tokensBefore: number;
  /** Estimate after compaction, the summary's reserve included. */
  tokensAfter: number;
}

export interface PlanOptions {
  budgetTokens: number;
  keepRecentMessages?: number;
  summaryReserveTokens?: number;
}

/**
 * Which older messages to archive so the rest fits the budget. Walks back from the newest message,
 * keeping at least `keepRecentMessages`, and keeps as many more as fit. The cut is always right
 * before an assistant message: the archived part ends with the user message answering the previous
 * assistant's tool uses, so a tool_use is never separated from its tool_result, and the compacted
 * conversation (summary, assistant, user, ...) still alternates. Undefined when nothing can be
 * archived (too few messages, or only an earlier summary).
 */
export function planCompaction(messages: readonly ChatMessage[], options: PlanOptions): CompactionPlan | undefined {
  const keep = Math.max(1, options.keepRecentMessages ?? DEFAULT_KEEP_RECENT_MESSAGES);
  const reserve = options.summaryReserveTokens ?? SUMMARY_RESERVE_TOKENS;
  const n = messages.length;
  const suffix = new Array<number>(n + 1).fill(0);
  for (let i = n - 1; i >= 0; i--) suffix[i] = suffix[i + 1] + estimateMessageTokens(messages[i]);
  // Archiving only an earlier summary would replace it by another: archive at least one real message.
  const minTo = n > 0 && isSummaryMessage(messages[0]) ? 2 : 1;
  let chosen: number | undefined;
  for (let k = n - keep; k >= minTo; k--) {
    if (messages[k].role !== 'assistant') continue;
    // The first cut found archives the most allowed (chosen even if the rest still does not fit);
    // each earlier cut keeps more, while it fits.
    if (chosen === undefined) chosen = k;
    else if (suffix[k] + reserve <= options.budgetTokens) chosen = k;
    else break;
  }
  if (chosen === undefined) return undefined;
  return { fromIndex: 0, toIndex: chosen, tokensBefore: suffix[0], tokensAfter: suffix[chosen] + reserve };
}

export function summaryMessage(summary: string): ChatMessage {
  return { role: 'user', content: [{ type: 'text', text: `${SUMMARY_HEADER}\n${summary}` }] };
}

export function isSummaryMessage(message: ChatMessage): boolean {
  const first = typeof message.content === 'string' ? message.content : message.content[0]?.type === 'text' ? (message.content[0] as { text: string }).text : '';
  return message.role === 'user' && first.startsWith(SUMMARY_HEADER);
}

/** The conversation with messages[fromIndex, toIndex) replaced by the summary (a new array). */
export function applyCompaction(messages: readonly ChatMessage[], fromIndex: number, toIndex: number, summary: string): ChatMessage[] {
  if (fromIndex < 0 || toIndex <= fromIndex || toIndex > messages.length) {
    throw new Error(`compaction range [${fromIndex}, ${toIndex}) does not fit a conversation of ${messages.length} messages`);
  }
  return [...messages.slice(0, fromIndex), summaryMessage(summary), ...messages.slice(toIndex)];
}

/** One message as plain text, for the summariser and the truncation fallback. */
export function messageText(message: ChatMessage, blockChars = 2_000): string {
  if (typeof message.content === 'string') return clip(message.content, blockChars);
  const parts: string[] = [];
  for (const block of message.content) {
    switch (block.type) {
      case 'text':
        parts.push(clip(block.text, blockChars));
        break;
      case 'tool_use':
        parts.push(`called ${block.name}(${clip(JSON.stringify(block.input), blockChars)})`);
        break;
      case 'tool_result':
        parts.push(`result${block.is_error ? ' (error)' : ''}: ${clip(block.content, blockChars)}`);
        break;
    }
  }
  return parts.join(' | ');
}

/** The archived messages as a transcript for the summarising model. */
export function renderForSummary(messages: readonly ChatMessage[]): string {
  return messages.map((m, i) => `#${i + 1} ${m.role}: ${messageText(m)}`).join('\n\n');
}

/** The fallback summary: each archived message cut to 150 characters. */
export function truncatedSummary(messages: readonly ChatMessage[], maxChars = TRUNCATE_CHARS): string {
  return messages.map((m) => `${m.role}: ${clip(messageText(m, maxChars).replace(/\s+/g, ' '), maxChars)}`).join('\n');
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
