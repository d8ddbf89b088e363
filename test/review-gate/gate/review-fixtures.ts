import type { RoleConfig, ReviewTimeoutPolicy, RunLaunchedData, TeamRunEvent } from '../../../src/team/domain/run-events';
import { evolve, foldRun, initialRunState, type RunState } from '../../../src/team/domain/run-state';
import { decideReview, type Decider as ReviewDecider, type ReviewCommand } from '../../../src/review-gate/domain/review-decider';
import { DeciderSpecification, type Decider } from '../../support/decider-specification';

/**
 * Fixtures for the review gate's pure decider: a run built the way the run driver records it, the
 * commands, and `given(events).when(command).then(events)` (test/support/decider-specification.ts)
 * over `decideReview` and the team run's own evolve.
 */

export const RUN_ID = 'run_gate1';
export const LAUNCHED_AT = '2025-03-01T10:00:00.000Z';
export const OPENED_AT = '2025-03-01T10:05:00.000Z';
export const EXECUTOR = `agent:executor:${RUN_ID}`;
export const LAUNCHER = 'user:ann';
export const CRITERIA = ['file a.txt contains "A"'];
export const reviewIdOf = (iteration: number) => `rev_${RUN_ID}_${iteration}`;
export const at = (msAfterOpen: number) => new Date(Date.parse(OPENED_AT) + msAfterOpen).toISOString();

export interface GateOptions {
  maxIterations?: number;
  allowLauncherToReview?: boolean;
  timeout?: { policy: ReviewTimeoutPolicy; afterMs?: number };
  /** The executor identity recorded in ReviewOpened (default `agent:executor:<runId>`). */
  executor?: string;
}

export function runLaunched(o: GateOptions = {}): TeamRunEvent {
  const role = (tools: string[]): RoleConfig => ({ model: 'triad-offline-1', maxTurns: 10, tools });
  const data: RunLaunchedData = {
    runId: RUN_ID,
    goal: 'Write a.txt',
    acceptanceCriteria: CRITERIA,
    team: { architect: role(['read_file']), executor: role(['read_file', 'write_file']), reviewer: role(['read_file']) },
    maxIterations: o.maxIterations ?? 3,
    timeoutMs: 24 * 3600 * 1000,
    budget: { totalTokens: 500_000 },
    reviewPolicy: { humanGate: true, allowLauncherToReview: o.allowLauncherToReview ?? false, timeout: o.timeout ?? { policy: 'wait' } },
    launchedBy: LAUNCHER,
    launchedAt: LAUNCHED_AT,
    provider: 'offline',
  };
  return { type: 'RunLaunched', data };
}

const ROLE_OF = { planning: 'architect', executing: 'executor', reviewing: 'reviewer' } as const;
const SUBMIT = { architect: 'submit_plan', executor: 'submit_work', reviewer: 'submit_verdict' } as const;

/** One phase, as the driver records it: PhaseStarted, one turn whose answer is the submit tool, the submission. */
function phase(p: keyof typeof ROLE_OF, iteration: number, submission: TeamRunEvent, toolResultIds: string[] = []): TeamRunEvent[] {
  const role = ROLE_OF[p];
  const toolUseId = (submission.data as { toolUseId: string }).toolUseId;
  const callId = `call_${role}_${iteration}`;
  return [
    { type: 'PhaseStarted', data: { phase: p, role, iteration, agent: `agent:${role}:${RUN_ID}`, system: `You are the ${role}.`, tools: [], maxTurns: 10, at: LAUNCHED_AT } },
    { type: 'ModelCallStarted', data: { role, turn: 1, callId, model: 'triad-offline-1', toolResultIds, content: [{ type: 'text', text: `task for the ${role}` }], at: LAUNCHED_AT } },
    {
      type: 'ModelCallCompleted',
      data: {
        role,
        turn: 1,
        callId,
        model: 'triad-offline-1',
        content: [{ type: 'tool_use', id: toolUseId, name: SUBMIT[role], input: {} }],
        stopReason: 'tool_use',
        usage: { inputTokens: 10, outputTokens: 5 },
        costUsd: 0,
        durationMs: 1,
      },
    },
    { type: 'ToolCallCompleted', data: { role, turn: 1, toolUseId, name: SUBMIT[role], output: 'Submitted.', isError: false, durationMs: 1 } },
    submission,
  ];
}

/** Executor works, reviewer approves, the review opens: one iteration at the human gate. */
export function iterationAtGate(iteration: number, o: GateOptions = {}, openedAt = OPENED_AT): TeamRunEvent[] {
  const policy = o.timeout?.policy ?? 'wait';
  const executorResults = iteration === 1 ? [] : [`tu_work_${iteration - 1}`];
  const reviewerResults = iteration === 1 ? [] : [`tu_verdict_${iteration - 1}`];
  return [
    ...phase('executing', iteration, { type: 'WorkSubmitted', data: { toolUseId: `tu_work_${iteration}`, iteration, summary: 'wrote a.txt', files: ['a.txt'], at: LAUNCHED_AT } }, executorResults),
    ...phase(
      'reviewing',
      iteration,
      { type: 'VerdictSubmitted', data: { toolUseId: `tu_verdict_${iteration}`, iteration, verdict: 'APPROVE', findings: [], summary: 'all criteria met', at: LAUNCHED_AT } },
      reviewerResults,
    ),
    {
      type: 'ReviewOpened',
      data: {
        reviewId: reviewIdOf(iteration),
        iteration,
        executor: o.executor ?? EXECUTOR,
        artifactHash: `sha256:artifact${iteration}`,
        charterVersion: 'sha256:charter',
        ...(policy !== 'wait' ? { timeout: { policy, dueAt: new Date(Date.parse(openedAt) + (o.timeout?.afterMs ?? 0)).toISOString() } } : {}),
        at: openedAt,
      },
    },
  ];
}

/** Launch, plan, and the first iteration waiting at the human gate. */
export function awaitingReview(o: GateOptions = {}): TeamRunEvent[] {
  return [
    runLaunched(o),
    ...phase('planning', 1, { type: 'PlanSubmitted', data: { toolUseId: 'tu_plan', plan: '1. write a.txt', steps: ['write a.txt'], at: LAUNCHED_AT } }),
    ...iterationAtGate(1, o),
  ];
}

export function fold(events: TeamRunEvent[]): RunState {
  return foldRun(
    events.map((e, i) => ({ type: e.type, data: e.data, revision: i, position: i + 1 })),
    initialRunState(RUN_ID),
  );
}

// ---------------------------------------------------------------------------------------------
// Commands

export const human = (name: string): ReviewDecider => ({ id: `user:${name}`, kind: 'human' });
export const agent = (id: string): ReviewDecider => ({ id, kind: 'agent' });

export function approve(decider: ReviewDecider = human('bob'), o: { reviewId?: string; reason?: string; at?: string } = {}): ReviewCommand {
  return { type: 'ApproveReview', reviewId: o.reviewId ?? reviewIdOf(1), decider, reason: o.reason ?? 'looks right', decisionId: 'dec_1', at: o.at ?? at(1000) };
}

export function reject(decider: ReviewDecider = human('bob'), o: { reviewId?: string; reason?: string; rework?: boolean; at?: string } = {}): ReviewCommand {
  return {
    type: 'RejectReview',
    reviewId: o.reviewId ?? reviewIdOf(1),
    decider,
    reason: o.reason ?? 'a.txt must end with a newline',
    rework: o.rework ?? true,
    decisionId: 'dec_1',
    at: o.at ?? at(1000),
  };
}

export function fireTimeout(atTime: string, reviewId = reviewIdOf(1)): ReviewCommand {
  return { type: 'FireReviewTimeout', reviewId, decisionId: 'dec_timeout', at: atTime };
}

// ---------------------------------------------------------------------------------------------
// Given / when / then

/** The review gate's decider over the team run's state, for DeciderSpecification. */
export const reviewDecider: Decider<RunState, ReviewCommand, TeamRunEvent> = {
  decide: decideReview,
  evolve,
  initialState: () => initialRunState(RUN_ID),
};

export const given = DeciderSpecification.for(reviewDecider);
