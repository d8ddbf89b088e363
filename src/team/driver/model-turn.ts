import { inChatSpan } from '../../observability/tracing';
import { pause } from '../../events/store-retry';
import { ModelError, type ModelResponse } from '../models/model.port';
import { modelOfCall, toolsOfCall, type NextAction } from '../domain/next-action';
import { decideModelFailure, modelCallCompleted, modelCallStarted } from '../domain/run-steps';
import type { TeamRunEvent } from '../domain/run-events';
import { newUserMessage } from '../domain/run-state';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../resilience/policies';
import { deadlineOf, isoNow, type StepContext } from './step-context';

/**
 * One model turn: the call (its text streamed to the observer), retried on the run's schedule
 * while the failures are transient, and its outcome recorded — ModelCallCompleted, or
 * ModelCallFailed with the retry's wait, a compaction first, or the run's end.
 */
export async function takeModelTurn(ctx: StepContext, step: Extract<NextAction, { kind: 'callModel' }>): Promise<void> {
  const { deps, runId } = ctx;
  const role = step.role;
  const state = ctx.state;
  const launched = state.launched!;
  // A plan-first phase plans with its planner model and works with its executor model.
  const model = modelOfCall(state, role);
  // A new call's start is recorded together with its outcome: if the process dies during the
  // call nothing is recorded and the same decision is taken again on resume.
  const pending: TeamRunEvent[] = [];
  let callId = state.conversations[role].openCallId;
  let messages = state.conversations[role].messages;
  if (!step.retry) {
    callId = deps.ids.newId();
    const started = modelCallStarted(step, { callId, model, at: isoNow(deps.clock) });
    pending.push(started);
    messages = [...messages, newUserMessage(state, started.data)];
  }
  const deadline = deadlineOf(state);
  let attempt = state.failedAttempts;
  for (;;) {
    attempt += 1;
    const started = deps.clock.now();
    const call = new AbortController();
    ctx.track(call);
    const stopOnRunAbort = () => call.abort();
    ctx.runSignal.addEventListener('abort', stopOnRunAbort, { once: true });
    const timer = setTimeout(() => call.abort(new Error('timeout')), Math.max(0, deadline - deps.clock.now()));
    let response: ModelResponse;
    try {
      const system = ctx.state.phase!.system;
      const maxTokens = deps.maxOutputTokens ?? 8192;
      response = await inChatSpan({ runId, role, turn: step.turn, provider: deps.model.name, model, maxTokens, system, messages }, () =>
        deps.model.complete({
          runId,
          role,
          model,
          system,
          messages,
          tools: toolsOfCall(ctx.state, role, deps.tools.specsFor(role, ctx.state.phase!.tools)),
          maxTokens,
          ...(launched.team[role].thinking ? { thinking: launched.team[role].thinking } : {}),
          signal: call.signal,
          onTextDelta: (text) => deps.observer?.onTextDelta?.(runId, role, step.turn, text),
        }),
      );
    } catch (err) {
      const error = err instanceof ModelError ? err : new ModelError('server', `model provider failed: ${(err as Error)?.message ?? String(err)}`);
      if (ctx.runSignal.aborted) return;
      // The run's timeout aborted the call: the next decision ends the run TIMEOUT.
      if (deps.clock.now() >= deadline) return;
      const { events, retryInMs } = decideModelFailure(
        ctx.state,
        step,
        { kind: error.kind, message: error.message, status: error.details.status, transient: error.transient, retryAfterMs: error.details.retryAfterMs },
        { attempt, callId: callId!, retry: retryPolicy(ctx), at: isoNow(deps.clock), random: Math.random },
      );
      // The call's start goes with its first recorded outcome.
      await ctx.append([...pending.splice(0), ...events]);
      if (retryInMs === undefined) return;
      // A wait past the run's deadline ends with it: the next decision ends the run TIMEOUT.
      await (deps.sleep ?? pause)(Math.min(retryInMs, Math.max(0, deadline - deps.clock.now())), ctx.runSignal);
      if (ctx.runSignal.aborted) return;
      continue;
    } finally {
      clearTimeout(timer);
      ctx.runSignal.removeEventListener('abort', stopOnRunAbort);
    }
    const durationMs = deps.clock.now() - started;
    // Recorded even if the driver is stopped meanwhile: a recorded response is never asked for again.
    await deps.fairShare?.turn();
    await ctx.append([...pending, modelCallCompleted(step, callId!, response, durationMs)]);
    return;
  }
}

/** The run's own retry policy (recorded at launch), else the driver's. */
function retryPolicy(ctx: StepContext): RetryPolicy {
  return ctx.state.launched?.retry ?? ctx.deps.retry ?? DEFAULT_RETRY_POLICY;
}
