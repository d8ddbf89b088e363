import type { ModelRequest } from '../models/model.port';
import type { NextAction } from '../domain/next-action';
import { archivedMessages, type SummaryOutcome } from '../domain/run-steps';
import { runDecider } from '../domain/run-decider';
import { callOrigin, pinOf } from '../domain/model-pin';
import { roleRoute } from '../models/model-roster';
import { renderForSummary, SUMMARY_MAX_OUTPUT_TOKENS, SUMMARY_SYSTEM_PROMPT } from '../domain/resilience/context-window';
import { deadlineOf, isoNow, underRunSignal, type StepContext } from './step-context';

/**
 * Archives older messages of a role's conversation into a summary written by the summary model
 * (or, when that fails, each message cut to 150 characters) and records it: ContextCompacted.
 */
export async function compactContext(ctx: StepContext, step: Extract<NextAction, { kind: 'compactContext' }>): Promise<void> {
  const { deps } = ctx;
  const archived = archivedMessages(ctx.state, step);
  // The summary is written on the role's own provider, the one its pin names.
  const route = roleRoute(deps.model, pinOf(ctx.state.launched!)[step.role].provider);
  const request: Omit<ModelRequest, 'signal'> = {
    ...route.request,
    runId: ctx.runId,
    role: step.role,
    model: step.summaryModel,
    system: SUMMARY_SYSTEM_PROMPT,
    messages: [{ role: 'user', content: `Conversation to summarise (${archived.length} messages):\n\n${renderForSummary(archived)}` }],
    tools: [],
    maxTokens: SUMMARY_MAX_OUTPUT_TOKENS,
    purpose: 'summary',
  };
  const outcome = await underRunSignal(ctx, async (signal): Promise<SummaryOutcome> => {
    try {
      const response = await deps.model.complete({ ...request, signal });
      const text = response.content
        .filter((b) => b.type === 'text')
        .map((b) => (b as { text: string }).text)
        .join('\n')
        .trim();
      if (text === '') return { ok: false, error: 'the summary model returned no text' };
      return { ok: true, text, response, origin: callOrigin(route.provider, request.model, response) };
    } catch (err) {
      return { ok: false, error: (err as Error)?.message ?? String(err) };
    }
  });
  if (ctx.runSignal.aborted) return;
  if (deps.clock.now() >= deadlineOf(ctx.state)) return;
  await ctx.append(runDecider.decide({ type: 'CompactContext', step, outcome, at: isoNow(deps.clock) }, ctx.state));
}
