import type { RoleName } from '../models/model.port';
import type { ChosenStrategy, LoopStrategy, TeamRunEvent } from '../domain/run-events';
import type { StepLoopState } from '../domain/loop-strategy';

/**
 * A run summary's `loops`: where each plan-first role stands (its strategy, its plan's size, its
 * current step), from the launch's team and the loop events. Apart from run-summary.ts, which
 * calls it, so that the summary's fold stays under 400 lines and the loop strategies' part of it
 * reads on its own.
 */

export interface LoopSummary {
  /** As launched (`auto` included). */
  strategy: LoopStrategy;
  /** What the role's latest phase runs: the launched strategy, or auto's choice. */
  running?: ChosenStrategy;
  /** Steps of the current plan, and replans in the current phase. */
  steps?: number;
  replans: number;
  currentStep?: { index: number; of: number; text: string; status: 'running' | 'completed' | 'failed' };
}

/** The roles whose loop is not react, by role. */
export type Loops = Partial<Record<RoleName, LoopSummary>>;

/** A launch's loops: every role launched with a loop strategy, no plan yet. */
export function loopsOf(team: Record<RoleName, { loop?: { strategy: LoopStrategy } }>): { loops?: Loops } {
  const loops: Loops = {};
  for (const [role, cfg] of Object.entries(team) as [RoleName, { loop?: { strategy: LoopStrategy } }][]) {
    if (cfg.loop) loops[role] = { strategy: cfg.loop.strategy, replans: 0 };
  }
  return Object.keys(loops).length > 0 ? { loops } : {};
}

/** A fork's loops: the launch's, with the phase's plan where the parent had it at the fork point. */
export function forkedLoops(view: { launched: { team: Record<RoleName, { loop?: { strategy: LoopStrategy } }> }; stepLoop?: unknown; chosenStrategy?: ChosenStrategy }): { loops?: Loops } {
  const { loops } = loopsOf(view.launched.team);
  // The fork recorded the fold's StepLoopState as it stood (session-replay/fork-run.ts).
  const at = view.stepLoop as StepLoopState | undefined;
  const loop = at && loops?.[at.role];
  if (!at || !loop) return loops ? { loops } : {};
  loop.running = view.chosenStrategy ?? at.strategy;
  loop.replans = at.replans;
  if (at.planned) loop.steps = at.steps.length;
  if (at.planned && at.inStep) loop.currentStep = { index: at.current + 1, of: at.steps.length, text: at.steps[at.current], status: 'running' };
  else if (at.failed) loop.currentStep = { index: at.current + 1, of: at.steps.length, text: at.failed.text, status: 'failed' };
  else if (at.current > 0) loop.currentStep = { index: at.current, of: at.steps.length, text: at.steps[at.current - 1], status: 'completed' };
  return { loops };
}

/** Where a plan-first role is: its strategy, its plan's size, its current step. */
export function applyLoopEvent(s: { loops?: Loops }, event: TeamRunEvent): void {
  if (event.type === 'PhaseStarted') {
    const loop = s.loops?.[event.data.role];
    if (loop) s.loops![event.data.role] = { strategy: loop.strategy, replans: 0, ...(loop.strategy !== 'auto' ? { running: loop.strategy as ChosenStrategy } : {}) };
    return;
  }
  if (!event.type.startsWith('Loop')) return;
  const loop = s.loops?.[(event.data as { role: RoleName }).role];
  if (!loop) return;
  switch (event.type) {
    case 'LoopStrategyChosen':
      loop.running = event.data.strategy;
      break;
    case 'LoopPlanRecorded':
    case 'LoopReplanned':
      loop.steps = event.data.steps.length;
      if (event.type === 'LoopReplanned') loop.replans = event.data.replan;
      loop.currentStep = undefined;
      break;
    case 'LoopStepStarted':
      loop.currentStep = { index: event.data.index, of: event.data.of, text: event.data.text, status: 'running' };
      break;
    case 'LoopStepCompleted':
    case 'LoopStepFailed':
      if (loop.currentStep) loop.currentStep.status = event.type === 'LoopStepCompleted' ? 'completed' : 'failed';
      break;
  }
}
