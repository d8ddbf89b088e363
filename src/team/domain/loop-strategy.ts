import type { RoleName, ToolSpec, ToolUseBlock } from '../models/model.port';
import { SUBMIT_TOOL_OF_ROLE } from './roles';
import type {
  ChosenStrategy,
  Complexity,
  LoopSettings,
  LoopStepCompletedData,
  LoopStepFailedData,
  LoopStrategy,
  RunLaunchedData,
  StepStrategy,
  TeamRunEvent,
} from './run-events';

/**
 * Loop strategies: how a role works through its phase. `react` is the plain agent loop (think →
 * act with tools → observe, until the submit tool or the turn limit). `plan_execute` and `hybrid`
 * put a plan first — one call answered with `submit_steps` — then run its steps in order, each a
 * sequence of turns ended by `complete_step` or `fail_step`; a failed step asks for a new plan of
 * the remaining work, up to `maxReplans` times, after which the run ends ERROR. After the last step
 * the role ends as in `react` (submit_plan / submit_work / submit_verdict). `hybrid` adds a turn
 * limit per step (a step that uses it up fails), 3 to `maxPlanSteps` steps, the stagnation window
 * reset at each step and a checkpoint after each. `auto` chooses one of the three when the phase
 * starts (LoopStrategyChosen), from the task's complexity and the budget used.
 *
 * Pure: what the loop does next is read off the folded run (`StepLoopState`, kept in RunState and
 * its checkpoints), so a run resumes in the step it was in and never redoes a finished one.
 */

export const LOOP_DEFAULTS = { maxReplans: 3, maxPlanSteps: 7, maxTurnsPerStep: 5 } as const;
/** A hybrid plan has at least this many steps. */
export const HYBRID_MIN_STEPS = 3;
/** auto: at this share of the run's budget used, hybrid is downgraded to plan_execute. */
export const AUTO_DOWNGRADE_PERCENT = 80;
export const MAX_STEP_TEXT = 500;

export const SUBMIT_STEPS = 'submit_steps';
export const COMPLETE_STEP = 'complete_step';
export const FAIL_STEP = 'fail_step';
const LOOP_TOOLS: ReadonlySet<string> = new Set([SUBMIT_STEPS, COMPLETE_STEP, FAIL_STEP]);

export function isLoopTool(name: string): boolean {
  return LOOP_TOOLS.has(name);
}

/** A launch's `loop` input: the strategy, and the settings it leaves to the defaults or not. */
export type LoopInput = Partial<Omit<LoopSettings, 'strategy'>> & { strategy: LoopStrategy };

/** The settings of a launch's `loop` input, completed from the defaults; undefined for `react` (recorded as nothing). */
export function loopSettingsOf(input: LoopInput): LoopSettings | undefined {
  if (input.strategy === 'react') return undefined;
  return {
    strategy: input.strategy,
    ...(input.plannerModel ? { plannerModel: input.plannerModel } : {}),
    ...(input.executorModel ? { executorModel: input.executorModel } : {}),
    maxReplans: input.maxReplans ?? LOOP_DEFAULTS.maxReplans,
    maxPlanSteps: input.maxPlanSteps ?? LOOP_DEFAULTS.maxPlanSteps,
    maxTurnsPerStep: input.maxTurnsPerStep ?? LOOP_DEFAULTS.maxTurnsPerStep,
  };
}

/**
 * What is wrong with a role's loop settings beyond their shape: a hybrid plan needs room for 3
 * steps, and the role's turn limit room for the plan call and one call per step (the last step's
 * call may close the phase too), else the phase could only end MAX_TURNS.
 */
export function loopSettingsProblem(role: RoleName, s: LoopSettings, maxTurns: number): string | undefined {
  const hybridPossible = s.strategy === 'hybrid' || s.strategy === 'auto';
  if (hybridPossible && s.maxPlanSteps < HYBRID_MIN_STEPS) {
    return `team.${role}.loop.maxPlanSteps must be at least ${HYBRID_MIN_STEPS} for the ${s.strategy} strategy`;
  }
  const minTurns = 1 + (hybridPossible ? HYBRID_MIN_STEPS : 1);
  if (maxTurns < minTurns) {
    return `team.${role}.maxTurns must be at least ${minTurns} for the ${s.strategy} strategy (a plan call and one call per step), got ${maxTurns}`;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// auto: the choice

/**
 * The task's complexity, from what the launch says about it: complex with 4 or more acceptance
 * criteria or a goal over 1,000 characters; simple with one criterion and a goal of at most 200
 * characters; medium otherwise.
 */
export function complexityOf(goal: string, acceptanceCriteria: readonly string[]): Complexity {
  if (acceptanceCriteria.length >= 4 || goal.length > 1000) return 'complex';
  if (acceptanceCriteria.length <= 1 && goal.length <= 200) return 'simple';
  return 'medium';
}

/** simple → react, medium → plan_execute, complex → hybrid (plan_execute once ≥ 80% of the budget is used). */
export function autoChoice(complexity: Complexity, budgetUsedPercent: number): { strategy: ChosenStrategy; downgraded: boolean } {
  if (complexity === 'simple') return { strategy: 'react', downgraded: false };
  if (complexity === 'medium') return { strategy: 'plan_execute', downgraded: false };
  if (budgetUsedPercent >= AUTO_DOWNGRADE_PERCENT) return { strategy: 'plan_execute', downgraded: true };
  return { strategy: 'hybrid', downgraded: false };
}

// ---------------------------------------------------------------------------------------------
// The fold

/** A plan-first phase as folded from its loop events (plain JSON: checkpointed as is). */
export interface StepLoopState {
  role: RoleName;
  strategy: StepStrategy;
  /** The current plan ([] until the first one is recorded). */
  steps: string[];
  /** A plan is in force: false before the first and after a failed step, until a new one. */
  planned: boolean;
  /** 0-based index of the step in progress, or of the next to start. */
  current: number;
  inStep: boolean;
  /** The role's turn count when the current step started. */
  stepStartTurn: number;
  /** The role's turn count at the last loop event: the next call carries that event's message. */
  markTurn: number;
  replans: number;
  /** Steps completed in this phase, across plans. */
  done: { text: string; summary: string }[];
  /** The last failed step, until a new plan replaces it. */
  failed?: { text: string; reason: string };
}

/** The strategy a phase runs, when the fold knows it: the launch's, or auto's recorded choice. */
export function phaseStrategy(launched: RunLaunchedData, role: RoleName, chosen: ChosenStrategy | undefined): ChosenStrategy | undefined {
  const configured = launched.team[role].loop?.strategy ?? 'react';
  return configured === 'auto' ? chosen : configured;
}

export function newStepLoop(role: RoleName, strategy: StepStrategy): StepLoopState {
  return { role, strategy, steps: [], planned: false, current: 0, inStep: false, stepStartTurn: 0, markTurn: 0, replans: 0, done: [] };
}

type LoopEvent = Extract<TeamRunEvent, { type: 'LoopPlanRecorded' | 'LoopReplanned' | 'LoopStepStarted' | 'LoopStepCompleted' | 'LoopStepFailed' }>;

/** Folds a loop event into the phase's step loop (mutating it); `turn` is the role's turn count now. */
export function evolveStepLoop(loop: StepLoopState, event: LoopEvent, turn: number): void {
  loop.markTurn = turn;
  switch (event.type) {
    case 'LoopPlanRecorded':
    case 'LoopReplanned':
      loop.steps = [...event.data.steps];
      loop.planned = true;
      loop.current = 0;
      loop.inStep = false;
      loop.failed = undefined;
      if (event.type === 'LoopReplanned') loop.replans = event.data.replan;
      break;
    case 'LoopStepStarted':
      loop.inStep = true;
      loop.stepStartTurn = turn;
      break;
    case 'LoopStepCompleted':
      loop.done.push({ text: loop.steps[loop.current], summary: event.data.summary });
      loop.current += 1;
      loop.inStep = false;
      break;
    case 'LoopStepFailed':
      loop.failed = { text: loop.steps[loop.current], reason: event.data.reason };
      loop.planned = false;
      loop.inStep = false;
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// Decisions: where the loop is, and what it does next

export type LoopStage = 'plan' | 'replan' | 'startStep' | 'step' | 'finish';

export function stageOf(loop: StepLoopState): LoopStage {
  if (!loop.planned) return loop.failed ? 'replan' : 'plan';
  if (loop.current >= loop.steps.length) return 'finish';
  return loop.inStep ? 'step' : 'startStep';
}

/** The plan's bounds for this strategy. */
export function planBounds(loop: StepLoopState, settings: LoopSettings): { min: number; max: number } {
  return { min: loop.strategy === 'hybrid' ? HYBRID_MIN_STEPS : 1, max: settings.maxPlanSteps };
}

/** What the loop does next in a ready agent loop, before the role's next call; undefined: a model call. */
export type StepLoopMove =
  | { kind: 'end'; message: string }
  | { kind: 'startStep'; index: number; of: number; text: string }
  | { kind: 'failStep'; index: number; reason: string };

export function nextStepLoopMove(loop: StepLoopState, settings: LoopSettings, turn: number): StepLoopMove | undefined {
  const stage = stageOf(loop);
  if (stage === 'replan' && loop.replans >= settings.maxReplans) {
    return {
      kind: 'end',
      message: `the ${loop.role}'s step "${loop.failed!.text}" failed (${loop.failed!.reason}) and no replan is left (${loop.replans} of ${settings.maxReplans} used)`,
    };
  }
  if (stage === 'startStep') return { kind: 'startStep', index: loop.current + 1, of: loop.steps.length, text: loop.steps[loop.current] };
  if (stage === 'step' && loop.strategy === 'hybrid' && turn - loop.stepStartTurn >= settings.maxTurnsPerStep) {
    return { kind: 'failStep', index: loop.current + 1, reason: `the step used its ${settings.maxTurnsPerStep} turns without complete_step` };
  }
  return undefined;
}

/** The message the first call after a loop event carries: what the role is to do now. */
export function stageMessage(loop: StepLoopState, settings: LoopSettings): string {
  const { min, max } = planBounds(loop, settings);
  const bounds = `in ${min} to ${max} steps`;
  switch (stageOf(loop)) {
    case 'plan':
      return `Before you act, make a plan ${bounds}: call ${SUBMIT_STEPS} with short, concrete steps in order. You will then carry them out one at a time.`;
    case 'replan':
      return [
        `Step "${loop.failed!.text}" failed: ${loop.failed!.reason}`,
        progressText(loop.done),
        `Make a new plan for the remaining work ${bounds}: call ${SUBMIT_STEPS}. (Replan ${loop.replans + 1} of at most ${settings.maxReplans}.)`,
      ].join('\n\n');
    case 'step':
    case 'startStep': {
      const limit = loop.strategy === 'hybrid' ? ` You have at most ${settings.maxTurnsPerStep} turns for it.` : '';
      return [
        `Step ${loop.current + 1} of ${loop.steps.length}: ${loop.steps[loop.current]}`,
        progressText(loop.done),
        `Work on this step only, with your tools.${limit} When it is done call ${COMPLETE_STEP} with a short summary; if it cannot be done call ${FAIL_STEP} with the reason.`,
      ].join('\n\n');
    }
    case 'finish':
      return [`All ${loop.steps.length} steps of the plan are complete.`, progressText(loop.done), `Now end your phase: call ${SUBMIT_TOOL_OF_ROLE[loop.role]}.`].join('\n\n');
  }
}

/** The call that ends what the role is doing now: the plan, the step, or the phase (for corrective messages). */
export function endingToolOf(loop: StepLoopState | undefined, role: RoleName): string {
  const stage = loop ? stageOf(loop) : 'finish';
  if (stage === 'plan' || stage === 'replan') return SUBMIT_STEPS;
  if (stage === 'finish') return SUBMIT_TOOL_OF_ROLE[role];
  return `${COMPLETE_STEP} (or ${FAIL_STEP})`;
}

/** The reminder after a prose answer where a loop tool was expected. */
export function loopReminder(loop: StepLoopState): string {
  return stageOf(loop) === 'step'
    ? `A step ends only through ${COMPLETE_STEP} or ${FAIL_STEP}. Continue the step, then call one of them.`
    : `A plan is only accepted through ${SUBMIT_STEPS}. Call it with the steps of your plan.`;
}

function progressText(done: StepLoopState['done']): string {
  if (done.length === 0) return 'Progress: no step completed yet.';
  return `Progress:\n${progressLines(done)}`;
}

function progressLines(done: StepLoopState['done']): string {
  return done.map((d, i) => `${i + 1}. ${d.text} — ${d.summary}`).join('\n');
}

/** The model of the role's next call: the planner's for a plan, the executor's otherwise. */
export function modelOfStage(loop: StepLoopState | undefined, settings: LoopSettings | undefined, roleModel: string): string {
  if (!loop || !settings) return roleModel;
  const stage = stageOf(loop);
  if (stage === 'plan' || stage === 'replan') return settings.plannerModel ?? roleModel;
  return settings.executorModel ?? roleModel;
}

/**
 * The tools of the role's next call: `submit_steps` alone for a plan; the role's tools with
 * `complete_step` and `fail_step` instead of its submit tool in a step; the role's own for the close.
 */
export function toolsOfStage(loop: StepLoopState | undefined, settings: LoopSettings | undefined, roleTools: readonly ToolSpec[]): readonly ToolSpec[] {
  if (!loop || !settings) return roleTools;
  const stage = stageOf(loop);
  if (stage === 'plan' || stage === 'replan') return [submitStepsSpec(planBounds(loop, settings))];
  if (stage === 'finish') return roleTools;
  const submit = SUBMIT_TOOL_OF_ROLE[loop.role];
  return [...roleTools.filter((t) => t.name !== submit), COMPLETE_STEP_SPEC, FAIL_STEP_SPEC];
}

function submitStepsSpec(bounds: { min: number; max: number }): ToolSpec {
  return {
    name: SUBMIT_STEPS,
    description: `Submit your plan: ${bounds.min} to ${bounds.max} short steps, in the order you will carry them out.`,
    input_schema: {
      type: 'object',
      properties: {
        steps: { type: 'array', minItems: bounds.min, maxItems: bounds.max, items: { type: 'string', minLength: 1, maxLength: MAX_STEP_TEXT } },
      },
      required: ['steps'],
      additionalProperties: false,
    },
  };
}

const COMPLETE_STEP_SPEC: ToolSpec = {
  name: COMPLETE_STEP,
  description: 'The current step is done: say in one or two sentences what it achieved.',
  input_schema: { type: 'object', properties: { summary: { type: 'string', minLength: 1, maxLength: 2000 } }, required: ['summary'], additionalProperties: false },
};

const FAIL_STEP_SPEC: ToolSpec = {
  name: FAIL_STEP,
  description: 'The current step cannot be done as planned: say why. A new plan for the remaining work is asked for.',
  input_schema: { type: 'object', properties: { reason: { type: 'string', minLength: 1, maxLength: 2000 } }, required: ['reason'], additionalProperties: false },
};

// ---------------------------------------------------------------------------------------------
// The loop tools' events

/** The events of a loop tool call: its result, and the loop event when the call is valid now. */
export function loopToolEvents(loop: StepLoopState | undefined, settings: LoopSettings | undefined, role: RoleName, turn: number, call: ToolUseBlock, at: string): TeamRunEvent[] {
  const result = (output: string, isError = false): TeamRunEvent => ({
    type: 'ToolCallCompleted',
    data: { role, turn, toolUseId: call.id, name: call.name, output, isError, durationMs: 0 },
  });
  if (!loop || !settings) return [result(`${call.name} is not part of this phase: it runs without a plan`, true)];
  const stage = stageOf(loop);
  const input = call.input ?? {};
  switch (call.name) {
    case SUBMIT_STEPS: {
      if (stage !== 'plan' && stage !== 'replan') return [result(`no plan is asked for now: ${whatNow(loop, role)}`, true)];
      const steps = validSteps(input.steps, planBounds(loop, settings));
      if (typeof steps === 'string') return [result(`invalid plan: ${steps}`, true)];
      const recorded: TeamRunEvent =
        stage === 'plan'
          ? { type: 'LoopPlanRecorded', data: { role, toolUseId: call.id, steps, at } }
          : { type: 'LoopReplanned', data: { role, toolUseId: call.id, replan: loop.replans + 1, steps, at } };
      return [result(`Plan recorded: ${steps.length} step(s).`), recorded];
    }
    case COMPLETE_STEP:
    case FAIL_STEP: {
      if (stage !== 'step') return [result(`there is no step in progress: ${whatNow(loop, role)}`, true)];
      const key = call.name === COMPLETE_STEP ? 'summary' : 'reason';
      const text = typeof input[key] === 'string' ? (input[key] as string).trim() : '';
      if (text === '') return [result(`invalid input for ${call.name}: ${key} must be a non-empty text`, true)];
      const index = loop.current + 1;
      if (call.name === FAIL_STEP) {
        const failed: LoopStepFailedData = { role, index, cause: 'fail_step', reason: text, toolUseId: call.id, at };
        return [result(`Step ${index} failed.`), { type: 'LoopStepFailed', data: failed }];
      }
      const progress = progressLines([...loop.done, { text: loop.steps[loop.current], summary: text }]);
      const completed: LoopStepCompletedData = { role, index, toolUseId: call.id, summary: text, progress, at };
      return [result(`Step ${index} of ${loop.steps.length} done.`), { type: 'LoopStepCompleted', data: completed }];
    }
    default:
      // The role's submit tool before the plan's steps are done, or a work tool while a plan is asked for.
      return [result(`${call.name} is not available yet: ${whatNow(loop, role)}`, true)];
  }
}

/** What the role is to do in its stage, for a refused loop call (several calls of one response may meet any stage). */
function whatNow(loop: StepLoopState, role: RoleName): string {
  switch (stageOf(loop)) {
    case 'plan':
    case 'replan':
      return `make a plan with ${SUBMIT_STEPS} first`;
    case 'startStep':
      return `step ${loop.current + 1} of ${loop.steps.length} starts with your next turn`;
    case 'step':
      return `finish the current step with ${COMPLETE_STEP} or ${FAIL_STEP} first`;
    case 'finish':
      return `every step is done: call ${SUBMIT_TOOL_OF_ROLE[role]}`;
  }
}

function validSteps(value: unknown, bounds: { min: number; max: number }): string[] | string {
  if (!Array.isArray(value)) return 'steps must be a list of texts';
  const steps = value.map((s) => (typeof s === 'string' ? s.trim() : ''));
  if (steps.some((s) => s === '' || s.length > MAX_STEP_TEXT)) return `every step must be a non-empty text of at most ${MAX_STEP_TEXT} characters`;
  if (steps.length < bounds.min || steps.length > bounds.max) return `a plan has ${bounds.min} to ${bounds.max} steps, this one has ${steps.length}`;
  return steps;
}
