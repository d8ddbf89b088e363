import type { RecordedEvent } from '../../../src/events/event-store/event-store.port';
import { nextAction, type NextAction } from '../../../src/team/domain/next-action';
import type { AssistantBlock, ContentBlock, RoleName, Usage } from '../../../src/team/models/model.port';
import { DEFAULT_MAX_TURNS } from '../../../src/team/domain/roles';
import {
  STATUS_OF_REASON,
  type Phase,
  type RoleConfig,
  type RunLaunchedData,
  type RunStatus,
  type TeamRunEvent,
  type TerminationReason,
  type Verdict,
} from '../../../src/team/domain/run-events';
import { foldRun, initialRunState, runStatus, terminationReason, type RunState } from '../../../src/team/domain/run-state';
import { DEFAULT_ROLE_TOOLS } from '../../../src/team/tools/tool-registry';

/**
 * Given / when / then over the team run's fold: `given(past events).when(new event).then(...)`
 * folds the events with `foldRun` (the same fold the driver and replay use) and reads the driver's
 * next move with `nextAction(state, nowMs)`. Events are built with the small factories below; the
 * clock defaults to one second after launch.
 */

export const RUN_ID = 'run_gwt';
export const LAUNCHED_AT = '2025-01-01T00:00:00.000Z';
export const LAUNCHED_AT_MS = Date.parse(LAUNCHED_AT);
const AT = LAUNCHED_AT;

export interface Outcome {
  state: RunState;
  next: NextAction;
  status: RunStatus;
  reason: TerminationReason | undefined;
}

export interface Expectation {
  status?: RunStatus;
  /** `null`: the run has not ended. */
  reason?: TerminationReason | null;
  /** The next action, compared with `toMatchObject` (so a partial action, at any depth, is enough). */
  next?: { kind: NextAction['kind']; [field: string]: unknown };
  /** Team machine state value. */
  team?: string;
  /** Agent loop state value; `null`: no loop. */
  loop?: string | null;
}

export interface Scenario {
  /** Reads the next action at this clock time instead of one second after launch. */
  at(nowMs: number): Scenario;
  when(...events: TeamRunEvent[]): Scenario;
  then(expected: Expectation | ((outcome: Outcome) => void)): Outcome;
}

export function given(events: TeamRunEvent[]): Scenario {
  return scenario([...events], LAUNCHED_AT_MS + 1000);
}

function scenario(events: TeamRunEvent[], nowMs: number): Scenario {
  return {
    at: (ms) => scenario(events, ms),
    when: (...more) => scenario([...events, ...more], nowMs),
    then(expected) {
      const outcome = outcomeOf(events, nowMs);
      if (typeof expected === 'function') {
        expected(outcome);
        return outcome;
      }
      if (expected.status !== undefined) expect(outcome.status).toBe(expected.status);
      if (expected.reason !== undefined) expect(outcome.reason ?? null).toBe(expected.reason);
      if (expected.team !== undefined) expect(String(outcome.state.team.value)).toBe(expected.team);
      if (expected.loop !== undefined) expect(outcome.state.loop ? String(outcome.state.loop.value) : null).toBe(expected.loop);
      if (expected.next !== undefined) expect(outcome.next).toMatchObject(expected.next);
      return outcome;
    },
  };
}

/** Folds events as if recorded at revisions 0..n-1 (positions 1..n). */
export function fold(events: TeamRunEvent[]): RunState {
  return foldRun(
    events.map((e, i) => ({ type: e.type, data: e.data, revision: i, position: i + 1 })),
    initialRunState(RUN_ID),
  );
}

export function outcomeOf(events: TeamRunEvent[], nowMs = LAUNCHED_AT_MS + 1000): Outcome {
  const state = fold(events);
  return { state, next: nextAction(state, nowMs), status: runStatus(state), reason: terminationReason(state) };
}

// ---------------------------------------------------------------------------------------------
// Event factories

export interface LaunchOptions {
  humanGate?: boolean;
  maxIterations?: number;
  timeoutMs?: number;
  totalTokens?: number;
  perRole?: Partial<Record<RoleName, number>>;
  maxTurns?: Partial<Record<RoleName, number>>;
  goal?: string;
  acceptanceCriteria?: string[];
}

export function runLaunched(options: LaunchOptions = {}): TeamRunEvent {
  const role = (r: RoleName): RoleConfig => ({
    model: 'scripted',
    maxTurns: options.maxTurns?.[r] ?? DEFAULT_MAX_TURNS[r],
    tools: [...DEFAULT_ROLE_TOOLS[r]],
    ...(options.perRole?.[r] !== undefined ? { maxTokens: options.perRole[r] } : {}),
  });
  const data: RunLaunchedData = {
    runId: RUN_ID,
    goal: options.goal ?? 'Write hello.txt',
    acceptanceCriteria: options.acceptanceCriteria ?? ['file hello.txt contains "Hello"'],
    team: { architect: role('architect'), executor: role('executor'), reviewer: role('reviewer') },
    maxIterations: options.maxIterations ?? 3,
    timeoutMs: options.timeoutMs ?? 30 * 60 * 1000,
    budget: { totalTokens: options.totalTokens ?? 500_000 },
    reviewPolicy: { humanGate: options.humanGate ?? true, allowLauncherToReview: false, timeout: { policy: 'wait' } },
    launchedBy: 'user:ann',
    launchedAt: LAUNCHED_AT,
    provider: 'scripted',
  };
  return { type: 'RunLaunched', data };
}

const ROLE_OF: Record<Phase, RoleName> = { planning: 'architect', executing: 'executor', reviewing: 'reviewer' };

export function phaseStarted(phase: Phase, options: { iteration?: number; maxTurns?: number } = {}): TeamRunEvent {
  const role = ROLE_OF[phase];
  return {
    type: 'PhaseStarted',
    data: {
      phase,
      role,
      iteration: options.iteration ?? 1,
      agent: `agent:${role}:${RUN_ID}`,
      system: `You are the ${role}.`,
      tools: [...DEFAULT_ROLE_TOOLS[role]],
      maxTurns: options.maxTurns ?? DEFAULT_MAX_TURNS[role],
      at: AT,
    },
  };
}

export const text = (t: string): { type: 'text'; text: string } => ({ type: 'text', text: t });
export const toolUse = (id: string, name: string, input: Record<string, unknown> = {}): AssistantBlock => ({ type: 'tool_use', id, name, input });

export function modelCallStarted(
  role: RoleName,
  turn: number,
  options: { callId?: string; toolResultIds?: string[]; content?: ContentBlock[] } = {},
): TeamRunEvent {
  return {
    type: 'ModelCallStarted',
    data: {
      role,
      turn,
      callId: options.callId ?? `call_${role}_${turn}`,
      model: 'scripted',
      toolResultIds: options.toolResultIds ?? [],
      content: options.content ?? [],
      at: AT,
    },
  };
}

export function modelCallCompleted(
  role: RoleName,
  turn: number,
  content: AssistantBlock[],
  options: { callId?: string; usage?: Usage } = {},
): TeamRunEvent {
  return {
    type: 'ModelCallCompleted',
    data: {
      role,
      turn,
      callId: options.callId ?? `call_${role}_${turn}`,
      model: 'scripted',
      content,
      stopReason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
      usage: options.usage ?? { inputTokens: 10, outputTokens: 5 },
      costUsd: 0,
      durationMs: 1,
    },
  };
}

export function modelCallFailed(role: RoleName, turn: number, options: { attempt?: number; retryInMs?: number; kind?: string } = {}): TeamRunEvent {
  return {
    type: 'ModelCallFailed',
    data: {
      role,
      turn,
      callId: `call_${role}_${turn}`,
      attempt: options.attempt ?? 1,
      kind: options.kind ?? 'rate_limited',
      message: 'rate limited',
      ...(options.retryInMs !== undefined ? { retryInMs: options.retryInMs } : {}),
    },
  };
}

export function toolCallRequested(role: RoleName, turn: number, toolUseId: string, name: string, input: Record<string, unknown> = {}): TeamRunEvent {
  return { type: 'ToolCallRequested', data: { role, turn, toolUseId, name, input, at: AT } };
}

export function toolCallCompleted(
  role: RoleName,
  turn: number,
  toolUseId: string,
  name: string,
  output: string,
  isError = false,
): TeamRunEvent {
  return { type: 'ToolCallCompleted', data: { role, turn, toolUseId, name, output, isError, durationMs: 1 } };
}

export function planSubmitted(toolUseId = 'tu_plan', plan = '1. write hello.txt'): TeamRunEvent {
  return { type: 'PlanSubmitted', data: { toolUseId, plan, steps: [], at: AT } };
}

export function workSubmitted(toolUseId = 'tu_work', iteration = 1, summary = 'wrote hello.txt'): TeamRunEvent {
  return { type: 'WorkSubmitted', data: { toolUseId, iteration, summary, files: ['hello.txt'], at: AT } };
}

export function verdictSubmitted(verdict: Verdict, options: { toolUseId?: string; iteration?: number; findings?: string[]; summary?: string } = {}): TeamRunEvent {
  return {
    type: 'VerdictSubmitted',
    data: {
      toolUseId: options.toolUseId ?? 'tu_verdict',
      iteration: options.iteration ?? 1,
      verdict,
      findings: options.findings ?? [],
      summary: options.summary ?? `verdict ${verdict}`,
      at: AT,
    },
  };
}

export function iterationStarted(iteration: number, findings: string[], reason: 'changes_requested' | 'human_rejected' = 'changes_requested'): TeamRunEvent {
  return { type: 'IterationStarted', data: { iteration, reason, findings, at: AT } };
}

export function reviewOpened(iteration = 1): TeamRunEvent {
  return {
    type: 'ReviewOpened',
    data: {
      reviewId: `rev_${RUN_ID}_${iteration}`,
      iteration,
      executor: `agent:executor:${RUN_ID}`,
      artifactHash: 'sha256:abc',
      charterVersion: 'sha256:def',
      at: AT,
    },
  };
}

/** A human's decision at the gate (the run's folds act on it: the test process trusts unsigned decisions). */
export function humanDecided(outcome: 'approved' | 'rejected', iteration = 1): TeamRunEvent {
  return {
    type: 'ReviewDecided',
    data: {
      decisionId: `dec_${outcome}_${iteration}`,
      reviewId: `rev_${RUN_ID}_${iteration}`,
      iteration,
      outcome,
      reason: outcome === 'approved' ? 'looks right' : 'greet in French',
      executor: `agent:executor:${RUN_ID}`,
      decider: 'user:bob',
      deciderKind: 'human',
      acceptanceCriteria: [],
      artifactHash: 'sha256:abc',
      charterVersion: 'sha256:def',
      at: AT,
    },
  };
}

/** The waived human gate, recorded as the system's decision (outcome `waived`). */
export function gateWaived(iteration = 1): TeamRunEvent {
  return {
    type: 'ReviewDecided',
    data: {
      decisionId: `dec_waived_${iteration}`,
      reviewId: `rev_${RUN_ID}_${iteration}`,
      iteration,
      outcome: 'waived',
      reason: 'the team config waives the human review gate; the reviewer agent approved',
      executor: `agent:executor:${RUN_ID}`,
      decider: 'system',
      deciderKind: 'system',
      acceptanceCriteria: ['file hello.txt contains "Hello"'],
      artifactHash: 'sha256:abc',
      charterVersion: 'sha256:def',
      at: AT,
    },
  };
}

export function runEnded(reason: TerminationReason, message?: string): TeamRunEvent {
  return { type: 'RunEnded', data: { status: STATUS_OF_REASON[reason], reason, ...(message ? { message } : {}), at: AT } };
}

// ---------------------------------------------------------------------------------------------
// Whole steps, as the driver records them

const SUBMIT_TOOL: Record<RoleName, string> = { architect: 'submit_plan', executor: 'submit_work', reviewer: 'submit_verdict' };

/**
 * One turn whose response is a single submit tool call, recorded like the driver records it: the
 * call (with the given user content), its response, the tool result 'Submitted.' and the submission.
 */
export function submitTurn(
  role: RoleName,
  turn: number,
  submission: TeamRunEvent,
  options: { toolUseId?: string; toolResultIds?: string[]; content?: ContentBlock[]; input?: Record<string, unknown>; usage?: Usage } = {},
): TeamRunEvent[] {
  const id = options.toolUseId ?? (submission.data as { toolUseId: string }).toolUseId;
  return [
    modelCallStarted(role, turn, { toolResultIds: options.toolResultIds, content: options.content ?? [text(`task for ${role}`)] }),
    modelCallCompleted(role, turn, [toolUse(id, SUBMIT_TOOL[role], options.input ?? {})], { usage: options.usage }),
    toolCallCompleted(role, turn, id, SUBMIT_TOOL[role], 'Submitted.'),
    submission,
  ];
}

/** Launch, then the architect plans in one turn. */
export function planned(options: LaunchOptions = {}): TeamRunEvent[] {
  return [runLaunched(options), phaseStarted('planning'), ...submitTurn('architect', 1, planSubmitted())];
}

/** ...then the executor works in one turn. */
export function worked(options: LaunchOptions = {}): TeamRunEvent[] {
  return [...planned(options), phaseStarted('executing'), ...submitTurn('executor', 1, workSubmitted())];
}

/** ...then the reviewer's phase has started. */
export function reviewing(options: LaunchOptions = {}): TeamRunEvent[] {
  return [...worked(options), phaseStarted('reviewing')];
}

/** ...then the reviewer submits the verdict in one turn. */
export function verdictTurn(verdict: Verdict, options: { iteration?: number; findings?: string[]; toolUseId?: string } = {}): TeamRunEvent[] {
  const toolUseId = options.toolUseId ?? `tu_verdict_${options.iteration ?? 1}`;
  return submitTurn('reviewer', 1, verdictSubmitted(verdict, { ...options, toolUseId }));
}

/** A run's events as the store hands them out (stream `run-<RUN_ID>`, positions from 1), all recorded at `at`. */
export function recorded(events: TeamRunEvent[], at = '2025-01-01T00:00:01.000Z'): RecordedEvent[] {
  return events.map((e, i) => ({
    id: `e${i}`,
    type: e.type,
    streamId: `run-${RUN_ID}`,
    revision: i,
    position: i + 1,
    data: e.data,
    metadata: { runId: RUN_ID, correlationId: RUN_ID, causationId: null, actor: 'system', schemaVersion: 1 },
    recordedAt: at,
  }));
}
