import { inChatSpan } from '../../observability/tracing';
import { pause } from '../../events/store-retry';
import { EventTooLargeError } from '../../events/errors';
import { ModelError, type ModelResponse } from '../models/model.port';
import { modelOfCall, toolsOfCall, type NextAction } from '../domain/next-action';
import { redactAnswer } from '../tools/tool-registry';
import { modelCallStarted, retryInMsOf } from '../domain/run-steps';
import { runDecider } from '../domain/run-decider';
import type { TeamRunEvent } from '../domain/run-events';
import { newUserMessage } from '../domain/run-state';
import { callOrigin, pinOf } from '../domain/model-pin';
import { roleRoute } from '../models/model-roster';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../domain/resilience/policies';
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
  // The provider the run's pin names for the role (a process may have several).
  const route = roleRoute(deps.model, pinOf(launched)[role].provider);
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
      response = await inChatSpan({ runId, role, turn: step.turn, provider: route.provider.name, model, maxTokens, system, messages }, () =>
        deps.model.complete({
          ...route.request,
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
      // An answer that cannot be recorded as it is is a failed call, retried on the same schedule.
      const unusable = unusableAnswer(response);
      if (unusable) throw new ModelError('malformed_response', `malformed model response: ${unusable}`);
      response = redactAnswer(response, deps.tools.secrets);
    } catch (err) {
      if ((await failed(err instanceof ModelError ? err : new ModelError('server', `model provider failed: ${(err as Error)?.message ?? String(err)}`))) === 'stop') return;
      continue;
    } finally {
      clearTimeout(timer);
      ctx.runSignal.removeEventListener('abort', stopOnRunAbort);
    }
    const durationMs = deps.clock.now() - started;
    // Recorded even if the driver is stopped meanwhile: a recorded response is never asked for again.
    await deps.fairShare?.turn();
    try {
      await ctx.append([...pending, ...runDecider.decide({ type: 'CompleteModelCall', step, callId: callId!, response, durationMs, origin: callOrigin(route.provider, model, response) }, ctx.state)]);
      return;
    } catch (err) {
      // Nothing was written: the call's start goes with the failure recorded instead.
      const error = answerTooLarge(err, 'ModelCallCompleted');
      if (!error) throw err;
      if ((await failed(error)) === 'stop') return;
    }
  }

  /** Records a failed call: 'retry' after the wait its decision gives, else 'stop'. */
  async function failed(error: ModelError): Promise<'retry' | 'stop'> {
    if (ctx.runSignal.aborted) return 'stop';
    // The run's timeout aborted the call: the next decision ends the run TIMEOUT.
    if (deps.clock.now() >= deadline) return 'stop';
    const events = runDecider.decide(
      {
        type: 'FailModelCall',
        step,
        error: { kind: error.kind, message: error.message, status: error.details.status, transient: error.transient, retryAfterMs: error.details.retryAfterMs },
        inputs: { attempt, callId: callId!, retry: retryPolicy(ctx), at: isoNow(deps.clock), random: Math.random },
      },
      ctx.state,
    );
    const retryInMs = retryInMsOf(events);
    // The call's start goes with its first recorded outcome.
    await ctx.append([...pending.splice(0), ...events]);
    if (retryInMs === undefined) return 'stop';
    // A wait past the run's deadline ends with it: the next decision ends the run TIMEOUT.
    await (deps.sleep ?? pause)(Math.min(retryInMs, Math.max(0, deadline - deps.clock.now())), ctx.runSignal);
    return ctx.runSignal.aborted ? 'stop' : 'retry';
  }
}

const USAGE_FIELDS = ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens'] as const;

/**
 * The store's refusal of the event that records a model's answer (`eventType`), as the failed call
 * it is: the answer is too large to record, and asking again may bring a smaller one. Undefined for
 * any other error, which is not the answer's.
 */
export function answerTooLarge(err: unknown, eventType: string): ModelError | undefined {
  if (!(err instanceof EventTooLargeError) || err.eventType !== eventType) return undefined;
  return new ModelError('malformed_response', `the model's answer takes ${err.bytes} bytes, over the store's limit of ${err.limit} bytes per event`);
}

/**
 * Why an answer cannot be recorded as it is, or undefined: token usage that is not a count (it would
 * corrupt the run's budget and cost), or two tool calls with one id (their results could not be told
 * apart, and the API refuses such a conversation on the next call).
 */
export function unusableAnswer(response: ModelResponse): string | undefined {
  for (const field of USAGE_FIELDS) {
    const value: unknown = response.usage?.[field];
    if (value === undefined && field.startsWith('cache')) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) return `usage ${field} is not a count of tokens`;
  }
  const ids = new Set<string>();
  for (const block of response.content) {
    if (block.type !== 'tool_use') continue;
    if (ids.has(block.id)) return `two tool calls share the id ${JSON.stringify(block.id)}`;
    ids.add(block.id);
  }
  return undefined;
}

/** The run's own retry policy (recorded at launch), else the driver's. */
function retryPolicy(ctx: StepContext): RetryPolicy {
  return ctx.state.launched?.retry ?? ctx.deps.retry ?? DEFAULT_RETRY_POLICY;
}
