import { ConflictError, NotFoundError } from '../../shared/errors';
import type { RunState } from '../../team/domain/run-state';
import type { DecisionCredential, ReviewDecidedData, TeamRunEvent } from '../../team/domain/run-events';
import type { DecisionStatement, PersonalSignature } from '../../attestation/personal-signature';
import { parseReviewId } from '../../team/domain/review-id';
import { SelfReviewError, selfReviewRule } from './self-review';

/**
 * The review gate's decider: `decideReview(command, runState) → events`, pure. The decision and the
 * run's transition come out as one list, appended in one go at the run's expected revision, so two
 * concurrent decisions cannot both land.
 */

export interface Decider {
  /** `user:<name>`, `system`, or an agent identity. */
  id: string;
  kind: 'human' | 'system' | 'agent';
  /** A human's proof of who they are, recorded with the decision. */
  proof?: DecisionProof;
}

export interface DecisionProof {
  via: DecisionCredential;
  /** Their own signature on the decision's statement, checked by the handler before it decides. */
  signature?: PersonalSignature;
}

/** The recorded fields of a decider's proof (none for a decider without one). */
export function proofFields(decider: { proof?: DecisionProof }): { authenticatedBy?: DecisionCredential; signature?: PersonalSignature } {
  const p = decider.proof;
  if (!p) return {};
  return { authenticatedBy: p.via, ...(p.signature ? { signature: p.signature } : {}) };
}

/** What a person signs to decide this review (attestation/personal-signature.ts). */
export function reviewStatement(state: RunState, reviewId: string, outcome: 'approved' | 'rejected', reason: string): DecisionStatement {
  const review = pendingReview(state, reviewId);
  return { kind: 'review', runId: state.runId, reviewId, iteration: review.iteration, artifactHash: review.artifactHash, outcome, reason };
}

interface DecisionBase {
  reviewId: string;
  decisionId: string;
  /** ISO time of the decision (time arrives with the command; the decider never reads a clock). */
  at: string;
}

export type ReviewCommand =
  | (DecisionBase & { type: 'ApproveReview'; decider: Decider; reason: string })
  | (DecisionBase & { type: 'RejectReview'; decider: Decider; reason: string; rework: boolean })
  | (DecisionBase & { type: 'FireReviewTimeout' });

export class ReviewNotFoundError extends NotFoundError {
  override readonly name = 'ReviewNotFoundError';
  constructor(reviewId: string) {
    super(`review ${reviewId} not found`);
  }
}

/** The review is not waiting for a decision (already decided, or superseded). */
export class ReviewNotPendingError extends ConflictError {
  override readonly name = 'ReviewNotPendingError';
  constructor(reviewId: string) {
    super(`review ${reviewId} is not waiting for a decision`);
  }
}

export class ReviewTimeoutNotDueError extends ConflictError {
  override readonly name = 'ReviewTimeoutNotDueError';
  constructor(reviewId: string) {
    super(`review ${reviewId} has no timeout due`);
  }
}

/** Throws when the review does not exist in this run or is not pending; returns the open review. */
export function pendingReview(state: RunState, reviewId: string) {
  const parsed = parseReviewId(reviewId);
  if (!parsed || !state.launched || parsed.runId !== state.runId) throw new ReviewNotFoundError(reviewId);
  const review = state.review;
  if (!review || parsed.iteration > review.iteration) throw new ReviewNotFoundError(reviewId);
  if (review.reviewId !== reviewId || String(state.team.value) !== 'awaitingReview') throw new ReviewNotPendingError(reviewId);
  return review;
}

/** The self-review rule that refuses this decider, if any (used by handler preflights too). */
export function refusedDecider(state: RunState, reviewId: string, decider: Decider) {
  const review = pendingReview(state, reviewId);
  return selfReviewRule(decider.id, {
    executor: review.executor,
    launchedBy: state.launched!.launchedBy,
    allowLauncherToReview: state.launched!.reviewPolicy.allowLauncherToReview,
  });
}

export function decideReview(command: ReviewCommand, state: RunState): TeamRunEvent[] {
  const review = pendingReview(state, command.reviewId);
  const launched = state.launched!;
  const ctx = state.team.context;
  const base = {
    decisionId: command.decisionId,
    reviewId: review.reviewId,
    iteration: review.iteration,
    executor: review.executor,
    acceptanceCriteria: launched.acceptanceCriteria,
    artifactHash: review.artifactHash,
    charterVersion: review.charterVersion,
    at: command.at,
  };
  const approve = (decided: ReviewDecidedData): TeamRunEvent[] => [
    { type: 'ReviewDecided', data: decided },
    { type: 'RunEnded', data: { status: 'completed', reason: 'COMPLETED', message: `approved by ${decided.decider}: ${decided.reason}`, at: command.at } },
  ];
  const reject = (decided: ReviewDecidedData): TeamRunEvent[] => {
    const events: TeamRunEvent[] = [{ type: 'ReviewDecided', data: decided }];
    if (decided.rework && ctx.iteration < ctx.maxIterations) {
      events.push({
        type: 'IterationStarted',
        data: { iteration: ctx.iteration + 1, reason: 'human_rejected', findings: [decided.reason], feedback: decided.reason, at: command.at },
      });
    } else {
      const why = decided.rework ? `no iteration left (${ctx.maxIterations} used)` : 'no rework requested';
      events.push({ type: 'RunEnded', data: { status: 'failed', reason: 'REJECTED', message: `rejected by ${decided.decider} (${why}): ${decided.reason}`, at: command.at } });
    }
    return events;
  };

  switch (command.type) {
    case 'ApproveReview':
    case 'RejectReview': {
      const rule = selfReviewRule(command.decider.id, {
        executor: review.executor,
        launchedBy: launched.launchedBy,
        allowLauncherToReview: launched.reviewPolicy.allowLauncherToReview,
      });
      if (rule) throw new SelfReviewError(rule);
      const who = { decider: command.decider.id, deciderKind: command.decider.kind === 'human' ? ('human' as const) : ('system' as const), ...proofFields(command.decider) };
      if (command.type === 'ApproveReview') return approve({ ...base, ...who, outcome: 'approved', reason: command.reason });
      return reject({ ...base, ...who, outcome: 'rejected', reason: command.reason, rework: command.rework });
    }
    case 'FireReviewTimeout': {
      const timeout = review.timeout;
      const escalated = state.decisions.some((d) => d.outcome === 'escalated');
      if (!timeout || escalated || Date.parse(command.at) < Date.parse(timeout.dueAt)) throw new ReviewTimeoutNotDueError(review.reviewId);
      const system = { decider: 'system', deciderKind: 'system' as const, policy: timeout.policy };
      const reason = `no human decision by ${timeout.dueAt}: policy ${timeout.policy}`;
      switch (timeout.policy) {
        case 'auto_approve':
          return approve({ ...base, ...system, outcome: 'approved', reason });
        case 'auto_deny':
          return reject({ ...base, ...system, outcome: 'rejected', reason, rework: false });
        case 'escalate':
          return [{ type: 'ReviewDecided', data: { ...base, ...system, outcome: 'escalated', reason } }];
      }
    }
  }
}
