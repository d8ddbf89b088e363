import type { CommandPath } from '../events/command-handling';
import { ConflictError } from '../shared/errors';
import type { Clock, Ids } from '../shared/ports';
import { parseReviewId } from '../team/domain/review-id';
import { runStatus } from '../team/domain/run-state';
import { decideAtGate } from '../team/commands/human-decision';
import type { DecisionProofs } from '../attestation/decision-proofs';
import { statementText } from '../attestation/personal-signature';
import { loadRunState } from '../team/runs/run-stream';
import { refusedDecider, reviewStatement, ReviewNotFoundError, ReviewNotPendingError, type Decider, type ReviewCommand } from './domain/review-decider';
import { notPendingMessage, reviewStanding, type ReviewStanding } from './domain/review-history';
import { SelfReviewError } from './domain/self-review';
import { toRunStreamId } from '../team/domain/run-events';
import { runDecider } from '../team/domain/run-decider';

export interface DecisionResult {
  decisionId: string;
  reviewId: string;
  outcome: string;
  runStatus: string;
}

/** What deciding a review needs; `proofs` only where a human decides (a timeout is the system's). */
export interface ReviewDeps {
  path: CommandPath;
  clock: Clock;
  ids: Ids;
  proofs?: DecisionProofs;
}

/**
 * Approve, reject, and timeouts: preflight (review exists, pending, decider allowed), then the
 * domain decision (which checks self-review again), appended with the run's transition in one
 * append at the revision read. Someone appended first: decide again on what they wrote — when it
 * was a decision, the review is no longer pending (409); when it was not (an escalation), this
 * decision stands. A run sent back for rework is driven on by the dispatcher (RunDispatcher).
 */
export async function decideReview(
  { path, clock, ids, proofs }: ReviewDeps,
  reviewId: string,
  decider: Decider,
  build: (decisionId: string, at: string) => ReviewCommand,
  said?: { outcome: 'approved' | 'rejected'; reason: string },
): Promise<DecisionResult> {
  const runId = parseReviewId(reviewId)?.runId;
  if (!runId) throw new ReviewNotFoundError(reviewId);
  const decisionId = ids.newId();
  const at = new Date(clock.now()).toISOString();
  try {
    // A personal signature is checked against the statement of the review as it waits now; the
    // decision below must decide that same statement (else the review changed meanwhile: 409).
    let signed: string | undefined;
    if (said && proofs?.needsCheck(decider)) {
      const statement = reviewStatement(await loadRunState(path.store, runId), reviewId, said.outcome, said.reason);
      await proofs.check(decider, statement);
      signed = statementText(statement);
    }
    const { state, events } = await decideAtGate(path, { runId, subject: 'review', id: reviewId, actor: decider.id }, (state) => {
      // Preflight: the same rule the decider applies, checked before any decision is built.
      if (decider.kind !== 'system') {
        const rule = refusedDecider(state, reviewId, decider);
        if (rule) throw new SelfReviewError(rule);
      }
      if (signed !== undefined && statementText(reviewStatement(state, reviewId, said!.outcome, said!.reason)) !== signed) {
        throw new ConflictError(`review ${reviewId} changed while its signature was checked; sign it again`);
      }
      return runDecider.decide(build(decisionId, at), state);
    });
    const decided = events.find((e) => e.type === 'ReviewDecided');
    return { decisionId, reviewId, outcome: (decided?.data as { outcome: string }).outcome, runStatus: runStatus(state) };
  } catch (err) {
    if (err instanceof ReviewNotPendingError) {
      // Say what happened; an id of an iteration that never reached the gate never existed.
      const standing = await standingOf(path, runId, reviewId);
      if (standing.kind === 'unknown') throw new ReviewNotFoundError(reviewId);
      throw new ConflictError(notPendingMessage(reviewId, standing));
    }
    throw err;
  }
}

/** Where a review stands, from the run's review events: for the message of a decision that came too late. */
async function standingOf(path: CommandPath, runId: string, reviewId: string): Promise<ReviewStanding> {
  const events = [];
  for await (const page of path.store.readStreamPages(toRunStreamId(runId))) {
    for (const e of page) if (e.type === 'ReviewOpened' || e.type === 'ReviewDecided' || e.type === 'RunEnded') events.push(e);
  }
  return reviewStanding(events, reviewId);
}
