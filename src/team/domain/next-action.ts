import type { ChatMessage, ContentBlock, RoleName, ToolSpec, ToolUseBlock } from '../models/model.port';
import { autoChoice, complexityOf, endingToolOf, isLoopTool, loopReminder, modelOfStage, nextStepLoopMove, stageMessage, stageOf, toolsOfStage } from './loop-strategy';
import { renderTaskMessage } from './prompts';
import { breakerMessage, isTripped } from './resilience/circuit-breaker';
import {
  contextBudget,
  contextLimitOf,
  DEFAULT_COMPACT_TO_PERCENT,
  DEFAULT_MARGIN_TOKENS,
  estimateTextTokens,
  estimateTokens,
  planCompaction,
  summaryModelOf,
  type CompactionPlan,
} from './resilience/context-window';
import { correctiveMessage, describeDetection, detectStagnation, type StagnationDetection } from './resilience/stagnation';
import { ROLE_OF_PHASE, SUBMIT_TOOL_OF_ROLE } from './roles';
import type { ChosenStrategy, Complexity, ModelCallStartedData, Phase, TerminationReason } from './run-events';
import { lastAssistantToolUses, newUserMessage, roleTokens, totalTokens, type RunState } from './run-state';

/**
 * What the driver must do next, read off a folded run. Pure: the same events and clock give the
 * same action, which is what lets a crashed run resume exactly where it stopped.
 */
export type NextAction =
  | { kind: 'none' }
  | { kind: 'waitForReview' }
  | { kind: 'startPhase'; phase: Phase; role: RoleName }
  | { kind: 'startIteration'; iteration: number; findings: string[] }
  | {
      kind: 'callModel';
      role: RoleName;
      turn: number;
      /** The call's start is already recorded (a retry or a call in flight at a crash). */
      retry: boolean;
      /** For a new call: results that open the user message, and the other content that follows. */
      toolResultIds: string[];
      content: ContentBlock[];
    }
  /** A tool call of the last response waits for a human; nothing happens until it is decided. */
  | { kind: 'waitForApproval'; approvalIds: string[] }
  | {
      kind: 'runTool';
      role: RoleName;
      /** The first pending work tool call... */
      call: ToolUseBlock;
      alreadyStarted: boolean;
      /** ...and every pending work tool call of the response, in the model's order: dispatched together. */
      batch: Array<{ call: ToolUseBlock; alreadyStarted: boolean }>;
    }
  /** The agent repeats itself: record the corrective message its next call carries. */
  | { kind: 'warnStagnation'; role: RoleName; turn: number; detection: StagnationDetection; message: string }
  /** The conversation does not fit (or the model said so): archive older messages into a summary. */
  | {
      kind: 'compactContext';
      role: RoleName;
      turn: number;
      reason: 'over_budget' | 'context_too_long';
      plan: CompactionPlan;
      budgetTokens: number;
      summaryModel: string;
      /** The provider's count of the request that did not fit (absent: the estimate decided). */
      countedTokens?: number;
    }
  | { kind: 'submit'; role: RoleName; call: ToolUseBlock }
  /** `auto`: record the strategy of the phase that starts (domain/loop-strategy.ts). */
  | { kind: 'chooseLoop'; role: RoleName; strategy: ChosenStrategy; complexity: Complexity; budgetUsedPercent: number; downgraded: boolean }
  /** The next step of the phase's plan begins. */
  | { kind: 'startStep'; role: RoleName; index: number; of: number; text: string }
  /** A hybrid step used up its turns. */
  | { kind: 'failStep'; role: RoleName; index: number; reason: string }
  /** A plan or step tool call (submit_steps, complete_step, fail_step), or a submission before the plan is done. */
  | { kind: 'loopTool'; role: RoleName; call: ToolUseBlock }
  | { kind: 'submitAnswer'; role: RoleName; text: string }
  | { kind: 'openReview' }
  | { kind: 'waiveGate' }
  | { kind: 'end'; reason: TerminationReason; message?: string; budget?: { scope: 'total' | RoleName; used: number; limit: number } };

export const REVIEWER_REMINDER =
  'A verdict is only accepted through the submit_verdict tool. Call submit_verdict with APPROVE, REQUEST_CHANGES or BLOCK.';

/**
 * A provider's count of the input tokens of a role's next request (system prompt and tools
 * included) with these messages, when it is known; undefined: the estimate decides.
 */
export type ContextMeasure = (role: RoleName, messages: readonly ChatMessage[]) => number | undefined;

export function nextAction(state: RunState, nowMs: number, measure?: ContextMeasure): NextAction {
  const value = String(state.team.value);
  const launched = state.launched;
  if (value === 'ended' || !launched) return { kind: 'none' };
  if (state.suspended) return { kind: 'none' };
  if (value === 'awaitingReview') return { kind: 'waitForReview' };
  // A human decides a tool call: like the review gate, the run's timeout does not end it meanwhile.
  if (state.loop && String(state.loop.value) === 'awaitingApproval') return { kind: 'waitForApproval', approvalIds: [...(state.loop.context.approvalIds ?? [])] };
  if (nowMs >= Date.parse(launched.launchedAt) + launched.timeoutMs) {
    return { kind: 'end', reason: 'TIMEOUT', message: `the run exceeded its timeout of ${launched.timeoutMs} ms` };
  }
  const ctx = state.team.context;
  const task = (role: RoleName) =>
    renderTaskMessage(role, {
      goal: launched.goal,
      acceptanceCriteria: launched.acceptanceCriteria,
      iteration: ctx.iteration,
      plan: role === 'architect' ? undefined : state.plan?.plan,
      workSummary: role === 'reviewer' ? state.work?.summary : undefined,
      findings: role === 'executor' ? ctx.openFindings : undefined,
      humanFeedback: role === 'executor' ? ctx.humanFeedback : undefined,
    });
  const startPhase = (phase: Phase): NextAction => ({ kind: 'startPhase', phase, role: ROLE_OF_PHASE[phase] });

  switch (value) {
    case 'queued':
      return startPhase('planning');
    case 'planned':
    case 'reworking':
      return startPhase('executing');
    case 'worked':
      return startPhase('reviewing');
    case 'changesRequested':
      return { kind: 'startIteration', iteration: ctx.iteration + 1, findings: ctx.openFindings };
    case 'findingsRepeated':
      return {
        kind: 'end',
        reason: 'STAGNATION',
        message: `the reviewer requested the same changes as in the previous iteration (${state.verdict?.findings.length ?? 0} finding(s)); further iterations would not converge`,
      };
    case 'iterationsExhausted':
      return { kind: 'end', reason: 'MAX_ITERATIONS', message: `changes still requested after ${ctx.maxIterations} iteration(s)` };
    case 'blockedByReviewer':
      return { kind: 'end', reason: 'BLOCKED', message: state.verdict?.summary };
    case 'approved':
      return { kind: 'openReview' };
    case 'approvedGateWaived':
      return { kind: 'waiveGate' };
    case 'gateWaived':
      return { kind: 'end', reason: 'COMPLETED', message: 'approved by the reviewer agent; the human gate was waived' };
    case 'planning':
    case 'executing':
    case 'reviewing':
      return loopAction(state, task, measure);
    default:
      throw new Error(`no action defined for team state '${value}'`);
  }
}

function loopAction(state: RunState, task: (role: RoleName) => string, measure?: ContextMeasure): NextAction {
  const loop = state.loop;
  const phase = state.phase;
  if (!loop || !phase) throw new Error('an active phase has no agent loop');
  const role = phase.role;
  const loopState = String(loop.value);
  const launched = state.launched!;
  if (launched.team[role].loop?.strategy === 'auto' && state.chosenStrategy === undefined) return chooseLoop(state, role);
  const stepLoop = state.stepLoop;
  const settings = launched.team[role].loop;
  switch (loopState) {
    case 'maxTurnsReached':
      return { kind: 'end', reason: 'MAX_TURNS', message: `the ${role} reached its limit of ${phase.maxTurns} turns` };
    case 'ready':
    case 'answered': {
      const over = budgetExceeded(state, role);
      if (over) return { kind: 'end', reason: 'BUDGET_EXHAUSTED', message: `token budget exhausted (${over.scope}: ${over.used} of ${over.limit})`, budget: over };
      const turn = loop.context.turn + 1;
      if (stepLoop && settings) {
        const move = nextStepLoopMove(stepLoop, settings, loop.context.turn);
        if (move?.kind === 'end') return { kind: 'end', reason: 'ERROR', message: move.message };
        if (move) return { ...move, role };
        if (loopState === 'answered' && stageOf(stepLoop) !== 'finish') {
          // A prose answer where a plan or a step's end was expected: say so (the close is today's).
          if (loop.context.turn >= phase.maxTurns) return { kind: 'end', reason: 'MAX_TURNS', message: `the ${role} reached its limit of ${phase.maxTurns} turns` };
          const text = loop.context.turn === stepLoop.markTurn ? stageMessage(stepLoop, settings) : loopReminder(stepLoop);
          return newCall(state, role, turn, [], [{ type: 'text', text }], measure);
        }
      }
      if (loopState === 'answered') {
        if (role !== 'reviewer') return { kind: 'submitAnswer', role, text: loop.context.answer ?? '' };
        return newCall(state, role, turn, [], [{ type: 'text', text: REVIEWER_REMINDER }], measure);
      }
      const stagnation = stagnationAction(state, role, loop.context.turn);
      if (stagnation) return stagnation;
      // The new user message answers every tool use of the role's last response (in a new phase,
      // that is the previous submission) and, on a phase's first turn, carries the task.
      const toolResultIds = lastAssistantToolUses(state.conversations[role].messages).map((u) => u.id);
      const content: ContentBlock[] = turn === 1 ? [{ type: 'text', text: task(role) }] : [];
      // The first call after a loop event carries what the role is to do now: plan, a step, the close.
      if (stepLoop && settings && loop.context.turn === stepLoop.markTurn) content.push({ type: 'text', text: stageMessage(stepLoop, settings) });
      return newCall(state, role, turn, toolResultIds, content, measure);
    }
    case 'awaitingResponse': {
      // Three identical failures in a row: the driver records the run's end with the third; this
      // only guards a fold that has the failures without it.
      if (isTripped(state.resilience.breaker)) return { kind: 'end', reason: 'ERROR', message: breakerMessage(state.resilience.breaker) };
      if (state.resilience.compactBeforeRetry?.role === role) return forcedCompaction(state, role, loop.context.turn);
      // The call's start is recorded but not its response: it was in flight when the driver
      // stopped (or failed and awaits a retry). Call again; the request is rebuilt from the log.
      return { kind: 'callModel', role, turn: loop.context.turn, retry: true, toolResultIds: [], content: [] };
    }
    case 'runningTools': {
      const uses = lastAssistantToolUses(state.conversations[role].messages);
      const pending = new Set(loop.context.pendingToolUseIds);
      const submitName = SUBMIT_TOOL_OF_ROLE[role];
      const started = new Set(loop.context.startedToolUseIds);
      // Work tools first, in the model's order; the submission last, after their results exist.
      // In a plan-first phase the loop's tools, a submission before the close, and any other call
      // while a plan is asked for (only submit_steps is offered then) are the loop's to answer.
      const loopsCall = (u: ToolUseBlock) => {
        if (!stepLoop) return false;
        const stage = stageOf(stepLoop);
        return isLoopTool(u.name) || stage === 'plan' || stage === 'replan' || (u.name === submitName && stage !== 'finish');
      };
      const work = uses.filter((u) => pending.has(u.id) && u.name !== submitName && !loopsCall(u));
      if (work.length > 0) {
        const batch = work.map((call) => ({ call, alreadyStarted: started.has(call.id) }));
        return { kind: 'runTool', role, call: work[0], alreadyStarted: batch[0].alreadyStarted, batch };
      }
      const loopCall = uses.find((u) => pending.has(u.id) && loopsCall(u));
      if (loopCall) return { kind: 'loopTool', role, call: loopCall };
      const submit = uses.find((u) => pending.has(u.id));
      if (submit) return { kind: 'submit', role, call: submit };
      throw new Error('the agent loop waits for tools that are not in the last response');
    }
    case 'submitted':
      throw new Error('a submitted phase must have moved the team run on');
    default:
      throw new Error(`no action defined for agent loop state '${loopState}'`);
  }
}

/** `auto`'s choice for the phase that starts: by the task's complexity, downgraded when the budget is mostly used. */
function chooseLoop(state: RunState, role: RoleName): NextAction {
  const launched = state.launched!;
  const complexity = complexityOf(launched.goal, launched.acceptanceCriteria);
  const budgetUsedPercent = Math.floor((totalTokens(state) * 100) / launched.budget.totalTokens);
  return { kind: 'chooseLoop', role, complexity, budgetUsedPercent, ...autoChoice(complexity, budgetUsedPercent) };
}

/** The model of the role's next call: its loop's planner or executor model, else the role's. */
export function modelOfCall(state: RunState, role: RoleName): string {
  const cfg = state.launched!.team[role];
  return modelOfStage(state.stepLoop?.role === role ? state.stepLoop : undefined, cfg.loop, cfg.model);
}

/** The tools offered with the role's next call (`roleTools`: the registry's specs for the role). */
export function toolsOfCall(state: RunState, role: RoleName, roleTools: readonly ToolSpec[]): readonly ToolSpec[] {
  return toolsOfStage(state.stepLoop?.role === role ? state.stepLoop : undefined, state.launched!.team[role].loop, roleTools);
}

/** After a tool-bearing turn: the stagnation policy's corrective message, or the end of the run. */
function stagnationAction(state: RunState, role: RoleName, lastTurn: number): NextAction | undefined {
  const policy = state.launched!.stagnation;
  if (!policy?.enabled) return undefined;
  const window = state.resilience.stagnation;
  const detection = detectStagnation(window, policy);
  if (!detection) return undefined;
  if (window.warnings >= policy.maxWarnings) {
    const after = window.warnings > 0 ? ` after ${window.warnings} corrective message(s)` : '';
    return { kind: 'end', reason: 'STAGNATION', message: `the ${role} is stuck${after}: ${describeDetection(detection)}` };
  }
  const stepLoop = state.stepLoop?.role === role ? state.stepLoop : undefined;
  return { kind: 'warnStagnation', role, turn: lastTurn, detection, message: correctiveMessage(detection, endingToolOf(stepLoop, role)) };
}

/** A new model call, with a pending corrective message, once the conversation fits the context window. */
function newCall(state: RunState, role: RoleName, turn: number, toolResultIds: string[], content: ContentBlock[], measure?: ContextMeasure): NextAction {
  const warning = state.resilience.stagnation.pendingWarning;
  const all: ContentBlock[] = warning?.role === role ? [...content, { type: 'text', text: warning.message }] : content;
  const compaction = overBudgetCompaction(state, role, turn, toolResultIds, all, measure);
  if (compaction) return compaction;
  return { kind: 'callModel', role, turn, retry: false, toolResultIds, content: all };
}

function contextSettings(state: RunState, role: RoleName) {
  const launched = state.launched!;
  const model = modelOfCall(state, role);
  const policy = launched.contextWindow;
  const limit = contextLimitOf(model, policy);
  const margin = policy?.marginTokens ?? DEFAULT_MARGIN_TOKENS;
  const budget = limit === undefined ? undefined : contextBudget(limit, estimateTextTokens(state.phase!.system), margin);
  const compactTo = budget === undefined ? undefined : Math.floor((budget * (policy?.compactToPercent ?? DEFAULT_COMPACT_TO_PERCENT)) / 100);
  return { limit, margin, budget, compactTo, keep: policy?.keepRecentMessages, summaryModel: summaryModelOf(model, policy) };
}

/** Compaction before a new call whose conversation (with its new user message) exceeds the budget. */
function overBudgetCompaction(
  state: RunState,
  role: RoleName,
  turn: number,
  toolResultIds: string[],
  content: ContentBlock[],
  measure?: ContextMeasure,
): NextAction | undefined {
  const { limit, margin, budget, compactTo, keep, summaryModel } = contextSettings(state, role);
  if (limit === undefined || budget === undefined || compactTo === undefined) return undefined;
  const upcoming: ChatMessage = newUserMessage(state, { toolResultIds, content } as unknown as ModelCallStartedData);
  const all = [...state.conversations[role].messages, upcoming];
  // The provider's count, when known, covers the whole request (system prompt and tools too).
  const counted = measure?.(role, all);
  if (counted !== undefined ? counted <= limit - margin : estimateTokens(all) <= budget) return undefined;
  // The upcoming message is last, so it is never in the archived range (which ends before it).
  // Archive down to the target share of the budget, so that compactions are far apart.
  const plan = planCompaction(all, { budgetTokens: compactTo, keepRecentMessages: keep });
  // Nothing left to archive: the call goes out as is, and a model that refuses it says so.
  if (!plan) return undefined;
  return {
    kind: 'compactContext',
    role,
    turn,
    reason: 'over_budget',
    plan,
    budgetTokens: budget,
    summaryModel,
    ...(counted !== undefined ? { countedTokens: counted } : {}),
  };
}

/** The model refused the open call as too long: halve the estimate (it was wrong), then retry. */
function forcedCompaction(state: RunState, role: RoleName, turn: number): NextAction {
  const { budget, keep, summaryModel } = contextSettings(state, role);
  const messages = state.conversations[role].messages;
  const target = Math.floor(estimateTokens(messages) / 2);
  const budgetTokens = budget === undefined ? target : Math.min(budget, target);
  const plan = planCompaction(messages, { budgetTokens, keepRecentMessages: keep });
  if (!plan) return { kind: 'end', reason: 'ERROR', message: `the ${role}'s conversation is too long for the model and nothing is left to compact` };
  return { kind: 'compactContext', role, turn, reason: 'context_too_long', plan, budgetTokens, summaryModel };
}

export function budgetExceeded(state: RunState, role: RoleName): { scope: 'total' | RoleName; used: number; limit: number } | undefined {
  const launched = state.launched!;
  const used = totalTokens(state);
  if (used >= launched.budget.totalTokens) return { scope: 'total', used, limit: launched.budget.totalTokens };
  const roleLimit = launched.team[role].maxTokens;
  const roleUsed = roleTokens(state.usage[role]);
  if (roleLimit !== undefined && roleUsed >= roleLimit) return { scope: role, used: roleUsed, limit: roleLimit };
  return undefined;
}
