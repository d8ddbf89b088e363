// One file over 400 lines on purpose: every step the driver takes without an effect of its own is
// decided here, as events built from the state, time and ids; split, the driver would ask several
// deciders for one step.
import { approvalIdOf } from './approval-id';
import type { ChatMessage, ModelResponse, RoleName, ToolUseBlock } from '../models/model.port';
import { costOf } from './pricing';
import { ROLE_PROMPTS } from './prompts';
import { breakerAfter, breakerMessage, isTripped } from './resilience/circuit-breaker';
import { SUMMARY_RESERVE_TOKENS, truncatedSummary } from './resilience/context-window';
import { maxAttemptsOf, retryDelayMs, type RetryPolicy, type ToolApprovalPolicy, type ToolRisk } from './resilience/policies';
import { charterVersion } from './charter';
import { loopToolEvents, stageMessage } from './loop-strategy';
import type { NextAction } from './next-action';
import { reviewIdOf } from './review-id';
import { agentIdentity, STATUS_OF_REASON, type ModelCallFailedData, type ModelCallOrigin, type ModelCallStartedData, type FileEffect, type TeamRunEvent, type ToolApprovalDecidedData } from './run-events';
import type { RunState } from './run-state';

/**
 * The events of the driver's steps. `nextAction` says what the run does next; this says what is
 * recorded for it. Pure: time, ids and what only the shell can learn (the workspace's digest, a
 * model's response, a tool's outcome, a random draw) arrive as inputs, so the same state and
 * inputs give the same events.
 *
 * `decideStep` decides the steps that need no effect. The builders after it give the events of the
 * steps that do (a claim, a suspension, a model turn, tool calls, a submission, a compaction) once
 * the shell has performed them.
 */

/** What a step's events are built from besides the run's state. */
export interface StepInputs {
  runId: string;
  /** When the step is taken: every event's `at`. */
  at: string;
  /** The clock in milliseconds, for due dates. */
  nowMs: number;
  newId: () => string;
  /** The workspace's digest (`workspaceDigest`): what the review gate is about. Needed by openReview and waiveGate. */
  artifactHash?: string;
}

/** The steps `decideStep` decides: the ones whose events follow from the state alone. */
export type DecidedStep = Extract<
  NextAction,
  { kind: 'startPhase' | 'startIteration' | 'warnStagnation' | 'submitAnswer' | 'openReview' | 'waiveGate' | 'end' | 'chooseLoop' | 'startStep' | 'failStep' | 'loopTool' }
>;

const DECIDED_KINDS: ReadonlySet<NextAction['kind']> = new Set([
  'startPhase',
  'startIteration',
  'warnStagnation',
  'submitAnswer',
  'openReview',
  'waiveGate',
  'end',
  'chooseLoop',
  'startStep',
  'failStep',
  'loopTool',
]);

export function isDecidedStep(action: NextAction): action is DecidedStep {
  return DECIDED_KINDS.has(action.kind);
}

/** Whether the step's events carry the workspace's digest (the shell computes it first). */
export function needsArtifactHash(step: DecidedStep): boolean {
  return step.kind === 'openReview' || step.kind === 'waiveGate';
}

export function decideStep(state: RunState, step: DecidedStep, inputs: StepInputs): TeamRunEvent[] {
  const { at, runId } = inputs;
  switch (step.kind) {
    case 'startPhase': {
      const role = step.role;
      const cfg = state.launched!.team[role];
      return [
        {
          type: 'PhaseStarted',
          data: {
            phase: step.phase,
            role,
            iteration: state.team.context.iteration,
            agent: agentIdentity(role, runId),
            system: cfg.systemPrompt ?? ROLE_PROMPTS[role],
            tools: cfg.tools,
            maxTurns: cfg.maxTurns,
            at,
          },
        },
      ];
    }
    case 'startIteration':
      return [{ type: 'IterationStarted', data: { iteration: step.iteration, reason: 'changes_requested', findings: step.findings, at } }];
    case 'warnStagnation': {
      const d = step.detection;
      return [
        {
          type: 'StagnationWarned',
          data: {
            role: step.role,
            turn: step.turn,
            signal: d.signal,
            ...(d.signal === 'repetition' ? { ratio: d.ratio } : { cycleLength: d.cycleLength }),
            fingerprints: d.signal === 'repetition' ? d.repeated.map((r) => r.fingerprint) : [...new Set(d.cycle.flatMap((t) => t.split(' + ')))],
            message: step.message,
            at,
          },
        },
      ];
    }
    case 'submitAnswer':
      // A role that answers in prose instead of its submit tool: the prose is its submission.
      return [submissionEvent(state, step.role, '', step.role === 'architect' ? { plan: step.text } : { summary: step.text }, at)];
    case 'openReview': {
      const launched = state.launched!;
      const iteration = state.team.context.iteration;
      const timeout = launched.reviewPolicy.timeout;
      return [
        {
          type: 'ReviewOpened',
          data: {
            reviewId: reviewIdOf(runId, iteration),
            iteration,
            executor: agentIdentity('executor', runId),
            artifactHash: artifactHashOf(step, inputs),
            charterVersion: executorCharter(state),
            ...(timeout.policy !== 'wait' ? { timeout: { policy: timeout.policy, dueAt: new Date(inputs.nowMs + (timeout.afterMs ?? 0)).toISOString() } } : {}),
            at,
          },
        },
      ];
    }
    case 'waiveGate': {
      const iteration = state.team.context.iteration;
      return [
        {
          type: 'ReviewDecided',
          data: {
            decisionId: inputs.newId(),
            reviewId: reviewIdOf(runId, iteration),
            iteration,
            outcome: 'waived',
            reason: 'the team config waives the human review gate; the reviewer agent approved',
            executor: agentIdentity('executor', runId),
            decider: 'system',
            deciderKind: 'system',
            acceptanceCriteria: state.launched!.acceptanceCriteria,
            artifactHash: artifactHashOf(step, inputs),
            charterVersion: executorCharter(state),
            at,
          },
        },
      ];
    }
    case 'chooseLoop': {
      const { role, strategy, complexity, budgetUsedPercent, downgraded } = step;
      return [{ type: 'LoopStrategyChosen', data: { role, phase: state.phase!.phase, iteration: state.team.context.iteration, strategy, complexity, budgetUsedPercent, downgraded, at } }];
    }
    case 'startStep':
      return [{ type: 'LoopStepStarted', data: { role: step.role, index: step.index, of: step.of, text: step.text, at } }];
    case 'failStep':
      return [{ type: 'LoopStepFailed', data: { role: step.role, index: step.index, cause: 'turn_limit', reason: step.reason, at } }];
    case 'loopTool':
      return loopToolEvents(state.stepLoop, state.launched!.team[step.role].loop, step.role, state.loop!.context.turn, step.call, at);
    case 'end': {
      const events: TeamRunEvent[] = [];
      if (step.budget) events.push({ type: 'BudgetExceeded', data: { scope: step.budget.scope, usedTokens: step.budget.used, limitTokens: step.budget.limit, at } });
      events.push({ type: 'RunEnded', data: { status: STATUS_OF_REASON[step.reason], reason: step.reason, message: step.message, at } });
      return events;
    }
    default: {
      const never: never = step;
      throw new Error(`no events defined for step ${(never as NextAction).kind}`);
    }
  }
}

function artifactHashOf(step: DecidedStep, inputs: StepInputs): string {
  if (inputs.artifactHash === undefined) throw new Error(`step ${step.kind} needs the workspace's digest (artifactHash)`);
  return inputs.artifactHash;
}

/** The charter the executor worked under: its role prompt and model config. */
function executorCharter(state: RunState): string {
  const executor = state.launched!.team.executor;
  return charterVersion(executor.systemPrompt ?? ROLE_PROMPTS.executor, executor);
}

// ---------------------------------------------------------------------------------------------
// The driver's claim and suspension

export function driverClaimed(owner: string, at: string): TeamRunEvent {
  return { type: 'DriverClaimed', data: { owner, at } };
}

export function runSuspended(owner: string, at: string): TeamRunEvent {
  return { type: 'RunSuspended', data: { reason: 'SHUTDOWN', owner, at } };
}

// ---------------------------------------------------------------------------------------------
// Model turns

export type CallModelStep = Extract<NextAction, { kind: 'callModel' }>;

/** A new call's start (not recorded until its outcome is: see the model turn). */
export function modelCallStarted(step: CallModelStep, call: { callId: string; model: string; at: string }): { type: 'ModelCallStarted'; data: ModelCallStartedData } {
  return {
    type: 'ModelCallStarted',
    data: { role: step.role, turn: step.turn, callId: call.callId, model: call.model, toolResultIds: step.toolResultIds, content: step.content, at: call.at },
  };
}

export function modelCallCompleted(step: CallModelStep, callId: string, response: ModelResponse, durationMs: number, origin: ModelCallOrigin = {}): TeamRunEvent {
  return {
    type: 'ModelCallCompleted',
    data: {
      role: step.role,
      turn: step.turn,
      callId,
      model: response.model,
      ...origin,
      content: response.content,
      stopReason: response.stopReason,
      usage: response.usage,
      costUsd: costOf(response.model, response.usage),
      durationMs,
    },
  };
}

/** A failed attempt, as the shell observed it. */
export interface ModelFailure {
  kind: string;
  message: string;
  status?: number;
  /** Rate limits and overloads, timeouts, 5xx: worth another attempt. */
  transient: boolean;
  /** The server's `retry-after`. */
  retryAfterMs?: number;
}

export interface ModelFailureInputs {
  attempt: number;
  callId: string;
  /** The run's retry policy (recorded at launch) or the driver's. */
  retry: RetryPolicy;
  at: string;
  /** In [0, 1): the retry delay's jitter. */
  random: () => number;
}

/**
 * What a failed model call records: ModelCallFailed, and the run's end when the breaker trips
 * (the same error three times in a row) or no attempt is left for it; otherwise the wait before
 * the retry (`retryInMs`), or a compaction first when the context was too long.
 */
export function decideModelFailure(state: RunState, step: CallModelStep, error: ModelFailure, inputs: ModelFailureInputs): { events: TeamRunEvent[]; retryInMs?: number } {
  const failure: ModelCallFailedData = {
    role: step.role,
    turn: step.turn,
    callId: inputs.callId,
    attempt: inputs.attempt,
    kind: error.kind,
    message: error.message,
    ...(error.status !== undefined ? { status: error.status } : {}),
  };
  const ended = (message: string): TeamRunEvent[] => [
    { type: 'ModelCallFailed', data: failure },
    { type: 'RunEnded', data: { status: 'failed', reason: 'ERROR', message, at: inputs.at } },
  ];
  // The same error three times in a row: stop retrying whatever attempts are left.
  const breaker = breakerAfter(state.resilience.breaker, failure);
  if (isTripped(breaker)) return { events: ended(breakerMessage(breaker)) };
  const attemptsLeft = inputs.attempt < maxAttemptsOf(inputs.retry);
  // The next action compacts the conversation (ContextCompacted), then makes this call again.
  if (error.kind === 'context_too_long' && attemptsLeft) return { events: [{ type: 'ModelCallFailed', data: { ...failure, compactBeforeRetry: true } }] };
  if (!(error.transient && attemptsLeft)) return { events: ended(`model call failed (${error.kind}) after ${inputs.attempt} attempt(s): ${error.message}`) };
  const retryInMs = retryDelayMs(inputs.retry, inputs.attempt, error.retryAfterMs, inputs.random)!;
  return { events: [{ type: 'ModelCallFailed', data: { ...failure, retryInMs } }], retryInMs };
}

/** The wait before the retry a failed call's events decided, if any (ModelCallFailed `retryInMs`). */
export function retryInMsOf(events: readonly TeamRunEvent[]): number | undefined {
  const failed = events.find((e) => e.type === 'ModelCallFailed');
  return failed?.type === 'ModelCallFailed' ? failed.data.retryInMs : undefined;
}

// ---------------------------------------------------------------------------------------------
// Tool calls and submissions

export const UNKNOWN_OUTCOME_MESSAGE =
  'The outcome of this tool call is unknown: the run was interrupted while it ran, and the tool is not safe to repeat. Inspect the workspace before trying again.';

/** The tool result a rejected call gets: the human's reason, or the timeout policy's. */
export function rejectionMessage(decision: ToolApprovalDecidedData): string {
  return decision.deciderKind === 'human'
    ? `rejected by user: ${decision.reason}`
    : `rejected: no human approved this call in time (timeout policy ${decision.policy ?? 'auto_deny'}): ${decision.reason}`;
}

export function toolApprovalRequested(
  runId: string,
  role: RoleName,
  turn: number,
  call: ToolUseBlock,
  risk: ToolRisk,
  policy: ToolApprovalPolicy,
  time: { nowMs: number; at: string },
): TeamRunEvent {
  const timeout = policy.timeout;
  return {
    type: 'ToolApprovalRequested',
    data: {
      approvalId: approvalIdOf(runId, call.id),
      role,
      turn,
      toolUseId: call.id,
      name: call.name,
      input: call.input,
      risk,
      threshold: policy.threshold,
      ...(timeout.policy !== 'wait' ? { timeout: { policy: timeout.policy, dueAt: new Date(time.nowMs + (timeout.afterMs ?? 0)).toISOString() } } : {}),
      at: time.at,
    },
  };
}

export function toolCallRequested(role: RoleName, turn: number, call: ToolUseBlock, at: string): TeamRunEvent {
  return { type: 'ToolCallRequested', data: { role, turn, toolUseId: call.id, name: call.name, input: call.input, at } };
}

/** What a completed tool call records, whoever made it (a role: ToolCallCompleted; a sub-agent: SubAgentToolCompleted). */
export function completedCallData(turn: number, call: ToolUseBlock, outcome: { output: string; isError: boolean }, durationMs: number, outcomeUnknown = false) {
  return {
    turn,
    toolUseId: call.id,
    name: call.name,
    output: outcome.output,
    isError: outcome.isError,
    durationMs,
    ...(outcomeUnknown ? { outcomeUnknown: true } : {}),
  };
}

export function toolCallCompleted(
  role: RoleName,
  turn: number,
  call: ToolUseBlock,
  outcome: { output: string; isError: boolean },
  durationMs: number,
  outcomeUnknown = false,
): TeamRunEvent {
  return { type: 'ToolCallCompleted', data: { role, ...completedCallData(turn, call, outcome, durationMs, outcomeUnknown) } };
}

/** A tool call of a turn as the turn is committed: its outcome, what it changed, what is still to record. */
export interface CommittedCall {
  call: ToolUseBlock;
  /** Its ToolCallRequested is still to be recorded (a repeatable tool's is recorded with its result). */
  record: boolean;
  outcome: { output: string; isError: boolean };
  outcomeUnknown?: boolean;
  durationMs?: number;
  /** A spawn call's approval was rejected: its sub-agent is cancelled with the result. */
  cancelSubAgent?: string;
  /** What the call changed in the workspace. */
  files?: FileEffect[];
}

/** A turn's tool calls committed in the model's order, whatever order they finished in. */
export function committedToolCalls(role: RoleName, turn: number, calls: readonly CommittedCall[], at: string): TeamRunEvent[] {
  return calls.flatMap((p): TeamRunEvent[] => {
    const done = toolCallCompleted(role, turn, p.call, p.outcome, p.durationMs ?? 0, p.outcomeUnknown);
    return [
      ...(p.cancelSubAgent ? [{ type: 'SubAgentCancelled' as const, data: { path: p.cancelSubAgent, reason: 'the spawn was rejected by a human', at } }] : []),
      ...(p.record ? [toolCallRequested(role, turn, p.call, at)] : []),
      p.files && done.type === 'ToolCallCompleted' ? { ...done, data: { ...done.data, files: p.files } } : done,
    ];
  });
}

/** A submit tool call, checked by the shell (`validateSubmission`): its result, and the submission when valid. */
export function submissionEvents(
  state: RunState,
  role: RoleName,
  call: ToolUseBlock,
  checked: { ok: true; submission: object } | { ok: false; error: string },
  at: string,
): TeamRunEvent[] {
  const turn = state.loop!.context.turn;
  if (!checked.ok) return [toolCallCompleted(role, turn, call, { output: `invalid submission: ${checked.error}`, isError: true }, 0)];
  return [
    toolCallCompleted(role, turn, call, { output: 'Submitted.', isError: false }, 0),
    submissionEvent(state, role, call.id, checked.submission as Record<string, unknown>, at),
  ];
}

function submissionEvent(state: RunState, role: RoleName, toolUseId: string, input: Record<string, unknown>, at: string): TeamRunEvent {
  const iteration = state.team.context.iteration;
  switch (role) {
    case 'architect':
      return { type: 'PlanSubmitted', data: { toolUseId, plan: String(input.plan ?? ''), steps: (input.steps as string[]) ?? [], at } };
    case 'executor':
      return { type: 'WorkSubmitted', data: { toolUseId, iteration, summary: String(input.summary ?? ''), files: (input.files as string[]) ?? [], at } };
    case 'reviewer':
      return {
        type: 'VerdictSubmitted',
        data: {
          toolUseId,
          iteration,
          verdict: input.verdict as 'APPROVE' | 'REQUEST_CHANGES' | 'BLOCK',
          findings: (input.findings as string[]) ?? [],
          summary: String(input.summary ?? ''),
          at,
        },
      };
  }
}

// ---------------------------------------------------------------------------------------------
// Context compaction

export type CompactStep = Extract<NextAction, { kind: 'compactContext' }>;

/**
 * In a plan-first phase the summary ends with where the plan stands (the plan, the step in progress
 * and the progress so far): the message that named the step may be among the archived ones, and a
 * summariser may leave it out, yet the role's next calls must still know which step it is in.
 */
function withLoopStage(state: RunState, role: RoleName, summary: string): string {
  const loop = state.stepLoop?.role === role ? state.stepLoop : undefined;
  const settings = state.launched?.team[role].loop;
  if (!loop || !settings) return summary;
  const plan = loop.planned ? `\n\nThe plan in force:\n${loop.steps.map((s, i) => `${i + 1}. ${s}`).join('\n')}` : '';
  return `${summary}${plan}\n\nWhere you are now:\n${stageMessage(loop, settings)}`;
}

/** The messages a compaction archives. */
export function archivedMessages(state: RunState, step: CompactStep): ChatMessage[] {
  return state.conversations[step.role].messages.slice(step.plan.fromIndex, step.plan.toIndex);
}

/** The summary model's answer, or why there is none. */
export type SummaryOutcome = { ok: true; text: string; response: ModelResponse; origin?: ModelCallOrigin } | { ok: false; error: string };

/** The compaction, with the model's summary or, when summarising failed, each archived message cut short. */
export function contextCompacted(state: RunState, step: CompactStep, outcome: SummaryOutcome, at: string): TeamRunEvent {
  const { role, plan } = step;
  const summary = withLoopStage(state, role, outcome.ok ? outcome.text : truncatedSummary(archivedMessages(state, step)));
  const summaryTokens = Math.ceil(summary.length / 4);
  return {
    type: 'ContextCompacted',
    data: {
      role,
      turn: step.turn,
      fromIndex: plan.fromIndex,
      toIndex: plan.toIndex,
      summary,
      method: outcome.ok ? 'model' : 'truncate',
      reason: step.reason,
      ...(outcome.ok
        ? { model: outcome.response.model, ...outcome.origin, usage: outcome.response.usage, costUsd: costOf(outcome.response.model, outcome.response.usage) }
        : { error: outcome.error }),
      tokensBefore: plan.tokensBefore,
      tokensAfter: plan.tokensAfter - SUMMARY_RESERVE_TOKENS + summaryTokens,
      budgetTokens: step.budgetTokens,
      ...(step.countedTokens !== undefined ? { countedTokens: step.countedTokens } : {}),
      at,
    },
  };
}
