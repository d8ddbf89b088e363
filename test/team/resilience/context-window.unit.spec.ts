import type { TeamRunEvent } from '../../../src/team/domain/run-events';
import type { ChatMessage } from '../../../src/team/models/model.port';
import {
  applyCompaction,
  contextBudget,
  contextLimitOf,
  estimateMessageTokens,
  estimateTokens,
  isSummaryMessage,
  planCompaction,
  SUMMARY_HEADER,
  SUMMARY_RESERVE_TOKENS,
  summaryModelOf,
  truncatedSummary,
} from '../../../src/team/domain/resilience/context-window';
import { given, modelCallCompleted, modelCallStarted, phaseStarted, planSubmitted, runLaunched, submitTurn, text, toolCallCompleted, toolUse } from '../machines/given-when-then';
import { expectToolPairsIntact } from './resilience-support';

// The context window, given / when / then: token estimates, the budget, the compaction planner,
// and compaction in the fold and the next action.

const user = (t: string): ChatMessage => ({ role: 'user', content: [{ type: 'text', text: t }] });
const results = (id: string, out: string): ChatMessage => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: out }] });
const uses = (id: string, input: Record<string, unknown> = {}): ChatMessage => ({ role: 'assistant', content: [{ type: 'tool_use', id, name: 'read_file', input }] });

/** task, then n tool turns of ~`chars` characters each way. */
function conversation(n: number, chars = 400): ChatMessage[] {
  const m: ChatMessage[] = [user('the task')];
  for (let i = 1; i <= n; i++) {
    m.push(uses(`tu_${i}`, { path: 'x'.repeat(chars) }));
    m.push(results(`tu_${i}`, 'y'.repeat(chars)));
  }
  return m;
}

describe('token estimates and budget', () => {
  it('4 characters per token, 1,000 per image', () => {
    expect(estimateMessageTokens(user('x'.repeat(400)))).toBe(100);
    expect(estimateMessageTokens({ role: 'user', content: 'abcde' })).toBe(2);
    const image = { role: 'user', content: [{ type: 'image', source: {} }, { type: 'text', text: 'x'.repeat(8) }] } as unknown as ChatMessage;
    expect(estimateMessageTokens(image)).toBe(1002);
    expect(estimateMessageTokens(results('t', 'y'.repeat(40)))).toBe(10);
  });

  it('limits per model: 200k for Claude models, the policy overrides, unknown models have none', () => {
    expect(contextLimitOf('claude-sonnet-4-6')).toBe(200_000);
    expect(contextLimitOf('claude-haiku-4-5', { limitTokens: 5000 })).toBe(5000);
    expect(contextLimitOf('triad-offline-1')).toBeUndefined();
    expect(contextBudget(200_000, 1_500)).toBe(178_500);
    expect(contextBudget(10_000, 500, 1_000)).toBe(8_500);
    expect(summaryModelOf('claude-sonnet-4-6')).toBe('claude-haiku-4-5');
    expect(summaryModelOf('claude-sonnet-4-6', { summaryModel: 'claude-3-5-haiku-latest' })).toBe('claude-3-5-haiku-latest');
    expect(summaryModelOf('scripted')).toBe('scripted');
  });
});

describe('compaction planner', () => {
  it('given a conversation over budget, then it archives the oldest messages and keeps what fits', () => {
    const m = conversation(10); // 21 messages, ~200 tokens per tool message
    const plan = planCompaction(m, { budgetTokens: 1_000 + 4 * 200, summaryReserveTokens: 0 })!;
    expect(plan.fromIndex).toBe(0);
    expect(m[plan.toIndex].role).toBe('assistant');
    expect(estimateTokens(m.slice(plan.toIndex))).toBeLessThanOrEqual(1_800);
    expect(estimateTokens(m.slice(plan.toIndex - 2))).toBeGreaterThan(1_800);
    expect(plan.tokensBefore).toBe(estimateTokens(m));
  });

  it('keeps at least the last 4 messages, even when they alone are over budget', () => {
    const m = conversation(10);
    const plan = planCompaction(m, { budgetTokens: 10 })!;
    expect(m.length - plan.toIndex).toBeGreaterThanOrEqual(4);
    expect(m.length - plan.toIndex).toBeLessThanOrEqual(5);
  });

  it('never separates a tool_use from its tool_result: the cut is always before an assistant message', () => {
    for (let n = 2; n <= 12; n++) {
      for (const budget of [10, 300, 700, 1500, 3000]) {
        const m = conversation(n, 100);
        const plan = planCompaction(m, { budgetTokens: budget, summaryReserveTokens: 50 });
        if (!plan) continue;
        const compacted = applyCompaction(m, plan.fromIndex, plan.toIndex, 'summary');
        expectToolPairsIntact(compacted);
      }
    }
  });

  it('given too few messages, or only an earlier summary to archive, then there is nothing to compact', () => {
    expect(planCompaction(conversation(1), { budgetTokens: 1 })).toBeUndefined(); // 3 messages
    const once = applyCompaction(conversation(3), 0, 3, 'earlier work'); // summary + 4 messages
    expect(isSummaryMessage(once[0])).toBe(true);
    expect(planCompaction(once, { budgetTokens: 1 })).toBeUndefined();
    // With more messages after it, the summary is archived together with real ones.
    const more = applyCompaction(conversation(6), 0, 3, 'earlier work');
    const plan = planCompaction(more, { budgetTokens: 1 })!;
    expect(plan.toIndex).toBeGreaterThanOrEqual(3);
  });

  it('applyCompaction replaces the range by one summary message; the truncation fallback cuts each message to 150 characters', () => {
    const m = conversation(4);
    const out = applyCompaction(m, 0, 5, 'S');
    expect(out).toHaveLength(m.length - 4);
    expect(out[0]).toEqual({ role: 'user', content: [{ type: 'text', text: `${SUMMARY_HEADER}\nS` }] });
    expect(out.slice(1)).toEqual(m.slice(5));
    expect(() => applyCompaction(m, 0, 99, 'S')).toThrow(/does not fit/);
    const fallback = truncatedSummary(m.slice(0, 5)).split('\n');
    expect(fallback).toHaveLength(5);
    for (const line of fallback) expect(line.length).toBeLessThanOrEqual('assistant: '.length + 150);
  });
});

describe('compaction in the fold and the next action', () => {
  const launched = (limitTokens: number, more: Record<string, number> = {}): TeamRunEvent => {
    const e = runLaunched();
    (e.data as { contextWindow?: unknown }).contextWindow = { limitTokens, marginTokens: 0, keepRecentMessages: 4, ...more };
    return e;
  };
  const big = 'z'.repeat(2_000); // 500 tokens
  const turn = (n: number): TeamRunEvent[] => [
    modelCallStarted('executor', n, { toolResultIds: n === 1 ? [] : [`tu_${n - 1}`], content: n === 1 ? [text('task')] : [] }),
    modelCallCompleted('executor', n, [toolUse(`tu_${n}`, 'read_file', { path: `f${n}.txt` })]),
    toolCallCompleted('executor', n, `tu_${n}`, 'read_file', big),
  ];
  const executing = (limit: number, more: Record<string, number> = {}) => [launched(limit, more), phaseStarted('planning'), ...submitTurn('architect', 1, planSubmitted()), phaseStarted('executing')];
  /** Tokens of the messages a plan keeps (the upcoming user message included), the summary aside. */
  const keptTokens = (state: { conversations: { executor: { messages: ChatMessage[] } } }, toIndex: number, upcoming: number) =>
    estimateTokens(state.conversations.executor.messages.slice(toIndex)) + upcoming;

  it('given a conversation over the budget, when the next call is due, then the next action compacts first', () => {
    given([...executing(2_500), ...[1, 2, 3, 4, 5, 6].flatMap(turn)]).then(({ next, state }) => {
      expect(next).toMatchObject({ kind: 'compactContext', role: 'executor', turn: 7, reason: 'over_budget', summaryModel: 'scripted', plan: { fromIndex: 0 } });
      const budget = 2_500 - Math.ceil(state.phase!.system.length / 4);
      expect((next as { budgetTokens: number }).budgetTokens).toBe(budget);
    });
  });

  it('given a conversation over the budget, then the compaction keeps at most half the budget, so the next one is far away', () => {
    const limit = 6_000;
    given([...executing(limit), ...Array.from({ length: 14 }, (_, i) => i + 1).flatMap(turn)]).then(({ next, state }) => {
      expect(next).toMatchObject({ kind: 'compactContext', reason: 'over_budget' });
      const { plan, budgetTokens } = next as unknown as { plan: { toIndex: number; tokensAfter: number }; budgetTokens: number };
      const upcoming = estimateMessageTokens(results('tu_14', big));
      // What is kept, with room for the summary, fits half the budget; one more turn kept would not.
      expect(keptTokens(state, plan.toIndex, upcoming) + SUMMARY_RESERVE_TOKENS).toBeLessThanOrEqual(budgetTokens / 2);
      expect(keptTokens(state, plan.toIndex - 2, upcoming) + SUMMARY_RESERVE_TOKENS).toBeGreaterThan(budgetTokens / 2);
    });
  });

  it('given compactToPercent 100, then the compaction keeps as much as fits the whole budget', () => {
    const limit = 6_000;
    given([...executing(limit, { compactToPercent: 100 }), ...Array.from({ length: 14 }, (_, i) => i + 1).flatMap(turn)]).then(({ next, state }) => {
      const { plan, budgetTokens } = next as unknown as { plan: { toIndex: number }; budgetTokens: number };
      const upcoming = estimateMessageTokens(results('tu_14', big));
      expect(keptTokens(state, plan.toIndex, upcoming)).toBeGreaterThan(budgetTokens / 2);
      expect(keptTokens(state, plan.toIndex, upcoming) + SUMMARY_RESERVE_TOKENS).toBeLessThanOrEqual(budgetTokens);
    });
  });

  it('given the same conversation under a large limit, then the call goes out as is', () => {
    given([...executing(1_000_000), ...[1, 2, 3, 4, 5, 6].flatMap(turn)]).then({ next: { kind: 'callModel', turn: 7 } });
  });

  it('given ContextCompacted, then the fold replaces the archived messages with the summary', () => {
    const events = [...executing(2_500), ...[1, 2, 3, 4, 5, 6].flatMap(turn)];
    const before = given(events).then(() => undefined).state.conversations.executor.messages;
    const compacted: TeamRunEvent = {
      type: 'ContextCompacted',
      data: {
        role: 'executor',
        turn: 7,
        fromIndex: 0,
        toIndex: 7,
        summary: 'read f1..f3',
        method: 'model',
        reason: 'over_budget',
        model: 'scripted',
        usage: { inputTokens: 100, outputTokens: 20 },
        costUsd: 0,
        tokensBefore: 3_000,
        tokensAfter: 1_500,
        budgetTokens: 2_000,
        at: '2025-01-01T00:00:00.000Z',
      },
    };
    given([...events, compacted]).then(({ state, next }) => {
      const after = state.conversations.executor.messages;
      expect(after).toEqual([{ role: 'user', content: [{ type: 'text', text: `${SUMMARY_HEADER}\nread f1..f3` }] }, ...before.slice(7)]);
      expect(state.usage.executor.inputTokens).toBe(6 * 10 + 100);
      expect(state.resilience.compactions).toBe(1);
      expect(next).toMatchObject({ kind: 'callModel', turn: 7, toolResultIds: ['tu_6'] });
    });
  });

  it('given the model refused the call as too long, then the next action compacts harder, then retries', () => {
    const failed: TeamRunEvent = {
      type: 'ModelCallFailed',
      data: { role: 'executor', turn: 7, callId: 'call_executor_7', attempt: 1, kind: 'context_too_long', message: 'prompt is too long', status: 400, compactBeforeRetry: true },
    };
    const events = [...executing(1_000_000), ...[1, 2, 3, 4, 5, 6].flatMap(turn), modelCallStarted('executor', 7, { toolResultIds: ['tu_6'] }), failed];
    given(events).then(({ next, state }) => {
      expect(next).toMatchObject({ kind: 'compactContext', reason: 'context_too_long', turn: 7 });
      expect((next as { budgetTokens: number }).budgetTokens).toBe(Math.floor(state.conversations.executor.messages.reduce((n, m) => n + estimateMessageTokens(m), 0) / 2));
    });
  });

  it('given the model refused a first turn as too long, then there is nothing to compact and the run ends ERROR', () => {
    const failed: TeamRunEvent = {
      type: 'ModelCallFailed',
      data: { role: 'architect', turn: 1, callId: 'call_architect_1', attempt: 1, kind: 'context_too_long', message: 'prompt is too long', compactBeforeRetry: true },
    };
    given([runLaunched(), phaseStarted('planning'), modelCallStarted('architect', 1, { content: [text('task')] }), failed]).then({
      next: { kind: 'end', reason: 'ERROR', message: "the architect's conversation is too long for the model and nothing is left to compact" },
    });
  });
});
