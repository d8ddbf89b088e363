import { ConflictError, NotFoundError } from '../../shared/errors';
import { hashOf } from '../../shared/canonical-json';
import { TERMINAL_STATUSES, type FileEffect, type ModelCallOrigin, type RunLaunchedData, type TeamRunEvent } from './run-events';
import { evolve, initialRunState, runStatus, type RunState } from './run-state';
import { pinOf, repinned, samePin, type PinChange } from './model-pin';
import { decideApproval, type ApprovalCommand } from './approval-decider';
import { decideReview, type ReviewCommand } from '../../review-gate/domain/review-decider';
import {
  committedToolCalls,
  completedCallData,
  contextCompacted,
  decideModelFailure,
  decideStep,
  driverClaimed,
  modelCallCompleted,
  runSuspended,
  submissionEvents,
  toolCallRequested,
  type CallModelStep,
  type CommittedCall,
  type CompactStep,
  type DecidedStep,
  type ModelFailure,
  type ModelFailureInputs,
  type StepInputs,
  type SummaryOutcome,
} from './run-steps';
import type { ContentBlock, ModelResponse, RoleName, ToolUseBlock } from '../models/model.port';
import { subAgentModelCalled, subAgentStarted } from './sub-agents';

/**
 * The run's decider: every command that records something on a run is decided here on the run's
 * folded state, pure, with time given in the command — the launch (and its idempotency), cancel,
 * resume, the human's decisions at the review and tool-approval gates, and the driver's steps.
 * `nextAction` (next-action.ts) stays the process manager: it picks the driver's next step, this
 * decides what that step records. Every handler appends through the command path as
 * `path.handle(stream, (s) => runDecider.decide(command, s))`.
 */
export type RunCommand = LaunchRun | OperatorCommand | ReviewCommand | ApprovalCommand | DriverCommand | SubAgentCommand;

/** The launch, built and checked from the request beforehand (launch.ts `buildRunLaunched`). */
export interface LaunchRun {
  type: 'LaunchRun';
  launched: RunLaunchedData;
}

/** What people and recovery ask of a run from outside its driver. */
export type OperatorCommand =
  | { type: 'CancelRun'; runId: string; by: string; reason?: string; at: string }
  | { type: 'ResumeRun'; runId: string; by: string; at: string; repin?: PinChange };

/**
 * The driver's own records: its claim, its suspension at a shutdown, the steps decided on the
 * state alone, and what its work came to (a model call's answer or failure, a turn's tool calls,
 * a submission, a compaction), the shell's observations given in the command.
 */
export type DriverCommand =
  | { type: 'ClaimDriver'; runId: string; owner: string; at: string }
  | { type: 'SuspendRun'; runId: string; owner: string; at: string }
  | { type: 'TakeStep'; step: DecidedStep; inputs: StepInputs }
  | { type: 'CompleteModelCall'; step: CallModelStep; callId: string; response: ModelResponse; durationMs: number; origin?: ModelCallOrigin }
  /** Its events say whether, and after how long, the call is retried (`retryInMsOf`). */
  | { type: 'FailModelCall'; step: CallModelStep; error: ModelFailure; inputs: ModelFailureInputs }
  /** Tools not safe to repeat, recorded as started before they run. */
  | { type: 'StartToolCalls'; role: RoleName; turn: number; calls: readonly ToolUseBlock[]; at: string }
  | { type: 'CommitToolCalls'; role: RoleName; turn: number; calls: readonly CommittedCall[]; at: string }
  | { type: 'SubmitToolCall'; role: RoleName; call: ToolUseBlock; checked: { ok: true; submission: object } | { ok: false; error: string }; at: string }
  | { type: 'CompactContext'; step: CompactStep; outcome: SummaryOutcome; at: string };

/**
 * What a sub-agent's work records, once spawned (its spawn is decided by `decideSpawn` on the
 * batch's own view of the sub-agents, which grows call by call within a turn; the slots of the
 * pool and the tools are the shell's).
 */
export type SubAgentCommand =
  /** `queue`: no slot yet, it waits at this priority. */
  | { type: 'StartSubAgent'; path: string; queue?: { priority: number }; at: string }
  | { type: 'StartSubAgentTool'; path: string; turn: number; call: ToolUseBlock; at: string }
  | { type: 'CompleteSubAgentTool'; path: string; turn: number; call: ToolUseBlock; outcome: { output: string; isError: boolean }; durationMs: number; outcomeUnknown?: boolean; files?: FileEffect[] }
  | { type: 'RecordSubAgentTurn'; path: string; turn: { turn: number; content: ContentBlock[]; callId: string }; response: ModelResponse; durationMs: number; origin: ModelCallOrigin; at: string }
  | { type: 'FailSubAgent'; path: string; message: string; at: string }
  | { type: 'TimeOutSubAgent'; path: string; at: string };

export class RunNotFoundError extends NotFoundError {
  override name = 'RunNotFoundError';
  constructor(runId: string) {
    super(`run ${runId} not found`);
  }
}

/** The run has ended (cancel) or cannot be driven on (resume): 409. */
export class RunNotActiveError extends ConflictError {
  override name = 'RunNotActiveError';
}

/** An idempotency key reused with a different request. Maps to 409. */
export class IdempotencyKeyConflictError extends ConflictError {
  override readonly name = 'IdempotencyKeyConflictError';
  constructor() {
    super('this idempotency key was already used for a different launch request');
  }
}

export const runDecider = {
  decide: decideRun,
  evolve: (state: RunState, event: TeamRunEvent, recorded: { revision: number; position: number }): RunState => evolve(state, event, recorded),
  initialState: (): RunState => initialRunState(),
};

function decideRun(command: RunCommand, state: RunState): TeamRunEvent[] {
  switch (command.type) {
    case 'LaunchRun':
      return decideLaunch(command, state);
    case 'ApproveReview':
    case 'RejectReview':
    case 'FireReviewTimeout':
      return decideReview(command, state);
    case 'ApproveToolCall':
    case 'RejectToolCall':
    case 'FireApprovalTimeout':
      return decideApproval(command, state);
    case 'ClaimDriver':
      return [driverClaimed(command.owner, command.at)];
    case 'SuspendRun':
      return [runSuspended(command.owner, command.at)];
    case 'TakeStep':
      return decideStep(state, command.step, command.inputs);
    case 'CompleteModelCall':
      return [modelCallCompleted(command.step, command.callId, command.response, command.durationMs, command.origin)];
    case 'FailModelCall':
      return decideModelFailure(state, command.step, command.error, command.inputs).events;
    case 'StartToolCalls':
      return command.calls.map((call) => toolCallRequested(command.role, command.turn, call, command.at));
    case 'CommitToolCalls':
      return committedToolCalls(command.role, command.turn, command.calls, command.at);
    case 'SubmitToolCall':
      return submissionEvents(state, command.role, command.call, command.checked, command.at);
    case 'CompactContext':
      return [contextCompacted(state, command.step, command.outcome, command.at)];
    case 'CancelRun':
    case 'ResumeRun':
      return decideOperator(command, state);
    case 'StartSubAgent':
      return [subAgentStarted(command.path, command.queue, command.at)];
    case 'StartSubAgentTool':
      return [{ type: 'SubAgentToolStarted', data: { path: command.path, turn: command.turn, toolUseId: command.call.id, name: command.call.name, at: command.at } }];
    case 'CompleteSubAgentTool': {
      const done = completedCallData(command.turn, command.call, command.outcome, command.durationMs, command.outcomeUnknown);
      return [{ type: 'SubAgentToolCompleted', data: { path: command.path, ...done, ...(command.files ? { files: command.files } : {}) } }];
    }
    case 'RecordSubAgentTurn':
      return [subAgentModelCalled(command.path, command.turn, command.response, command.durationMs, command.origin, command.at)];
    case 'FailSubAgent':
      return [{ type: 'SubAgentFailed', data: { path: command.path, reason: 'ERROR', message: command.message, at: command.at } }];
    case 'TimeOutSubAgent':
      return [{ type: 'SubAgentTimedOut', data: { path: command.path, message: 'the sub-agent exceeded its timeout', at: command.at } }];
    default: {
      const never: never = command;
      throw new Error(`unknown run command ${(never as { type: string }).type}`);
    }
  }
}

/**
 * A new run records its launch. A retried launch (the same launcher, key and request: the same
 * run id) finds it recorded and records nothing; the same key with another request is a conflict.
 */
function decideLaunch(command: LaunchRun, state: RunState): TeamRunEvent[] {
  if (!state.launched) return [{ type: 'RunLaunched', data: command.launched }];
  if (requestFingerprint(state.launched) !== requestFingerprint(command.launched)) throw new IdempotencyKeyConflictError();
  return [];
}

/** What makes two launches "the same request" for idempotency: everything but time and id. */
function requestFingerprint(d: RunLaunchedData): string {
  const { runId: _r, launchedAt: _t, ...rest } = d;
  return hashOf(rest);
}

function decideOperator(command: OperatorCommand, state: RunState): TeamRunEvent[] {
  if (!state.launched) throw new RunNotFoundError(command.runId);
  const status = runStatus(state);
  switch (command.type) {
    case 'CancelRun': {
      if (TERMINAL_STATUSES.has(status)) throw new RunNotActiveError(`run ${command.runId} has already ended (${status})`);
      const message = command.reason ? `cancelled by ${command.by}: ${command.reason}` : `cancelled by ${command.by}`;
      return [{ type: 'RunEnded', data: { status: 'cancelled', reason: 'CANCELLED', message, at: command.at } }];
    }
    case 'ResumeRun': {
      if (TERMINAL_STATUSES.has(status)) throw new RunNotActiveError(`run ${command.runId} has ended (${status}); fork it to continue from a turn`);
      if (status === 'awaiting_review') throw new RunNotActiveError(`run ${command.runId} waits for a human review, not for a driver`);
      // An operator's re-pin is recorded first (when it changes anything); only a suspended run
      // records its resumption, any other is driven on as it stands.
      const events: TeamRunEvent[] = [];
      if (command.repin) {
        const from = structuredClone(pinOf(state.launched));
        const to = repinned(from, command.repin);
        if (!samePin(from, to)) events.push({ type: 'RunRepinned', data: { by: command.by, from, to, at: command.at } });
      }
      if (state.suspended) events.push({ type: 'RunResumed', data: { by: command.by, at: command.at } });
      return events;
    }
  }
}
