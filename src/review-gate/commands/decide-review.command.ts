import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import { ConflictError } from '../../shared/errors';
import { CLOCK, IDS } from '../../shared/system';
import { parseReviewId } from '../../team/domain/review-id';
import { runStatus } from '../../team/domain/run-state';
import type { Clock, Ids } from '../../shared/ports';
import { decideAtGate } from '../../team/commands/human-decision';
import { DecisionProofs } from '../../attestation/decision-proofs';
import { statementText } from '../../attestation/personal-signature';
import { loadRunState } from '../../team/runs/run-stream';
import {
  refusedDecider,
  reviewStatement,
  ReviewNotFoundError,
  ReviewNotPendingError,
  type Decider,
  type ReviewCommand,
} from '../domain/review-decider';
import { notPendingMessage, reviewStanding, type ReviewStanding } from '../domain/review-history';
import { SelfReviewError } from '../domain/self-review';
import { toRunStreamId } from '../../team/domain/run-events';
import { runDecider } from '../../team/domain/run-decider';

export class ApproveReviewCommand {
  constructor(
    readonly reviewId: string,
    readonly decider: Decider,
    readonly reason: string,
  ) {}
}

export class RejectReviewCommand {
  constructor(
    readonly reviewId: string,
    readonly decider: Decider,
    readonly reason: string,
    readonly rework: boolean,
  ) {}
}

export class FireReviewTimeoutCommand {
  constructor(readonly reviewId: string) {}
}

export interface DecisionResult {
  decisionId: string;
  reviewId: string;
  outcome: string;
  runStatus: string;
}


/**
 * Approve, reject, and timeouts: preflight (review exists, pending, decider allowed), then the
 * domain decision (which checks self-review again), appended with the run's transition in one
 * append at the revision read. Someone appended first: decide again on what they wrote — when it
 * was a decision, the review is no longer pending (409); when it was not (an escalation), this
 * decision stands. A run sent back for rework is driven on by the dispatcher (RunDispatcher).
 */
abstract class DecideReviewHandler {
  constructor(
    protected readonly path: CommandPath,
    protected readonly clock: Clock,
    protected readonly ids: Ids,
    protected readonly proofs?: DecisionProofs,
  ) {}

  protected async decide(
    reviewId: string,
    decider: Decider,
    build: (decisionId: string, at: string) => ReviewCommand,
    said?: { outcome: 'approved' | 'rejected'; reason: string },
  ): Promise<DecisionResult> {
    const runId = parseReviewId(reviewId)?.runId;
    if (!runId) throw new ReviewNotFoundError(reviewId);
    const decisionId = this.ids.newId();
    const at = new Date(this.clock.now()).toISOString();
    try {
      // A personal signature is checked against the statement of the review as it waits now; the
      // decision below must decide that same statement (else the review changed meanwhile: 409).
      let signed: string | undefined;
      if (said && this.proofs?.needsCheck(decider)) {
        const statement = reviewStatement(await loadRunState(this.path.store, runId), reviewId, said.outcome, said.reason);
        await this.proofs.check(decider, statement);
        signed = statementText(statement);
      }
      const { state, events } = await decideAtGate(this.path, { runId, subject: 'review', id: reviewId, actor: decider.id }, (state) => {
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
        const standing = await this.standing(runId, reviewId);
        if (standing.kind === 'unknown') throw new ReviewNotFoundError(reviewId);
        throw new ConflictError(notPendingMessage(reviewId, standing));
      }
      throw err;
    }
  }

  private async standing(runId: string, reviewId: string): Promise<ReviewStanding> {
    const events = [];
    for await (const page of this.path.store.readStreamPages(toRunStreamId(runId))) {
      for (const e of page) if (e.type === 'ReviewOpened' || e.type === 'ReviewDecided' || e.type === 'RunEnded') events.push(e);
    }
    return reviewStanding(events, reviewId);
  }
}

@CommandHandler(ApproveReviewCommand)
export class ApproveReviewHandler extends DecideReviewHandler implements ICommandHandler<ApproveReviewCommand, DecisionResult> {
  constructor(@Inject(COMMAND_PATH) path: CommandPath, @Inject(CLOCK) clock: Clock, @Inject(IDS) ids: Ids, @Inject(DecisionProofs) proofs: DecisionProofs) {
    super(path, clock, ids, proofs);
  }

  execute(c: ApproveReviewCommand): Promise<DecisionResult> {
    return this.decide(c.reviewId, c.decider, (decisionId, at) => ({ type: 'ApproveReview', reviewId: c.reviewId, decider: c.decider, reason: c.reason, decisionId, at }), { outcome: 'approved', reason: c.reason });
  }
}

@CommandHandler(RejectReviewCommand)
export class RejectReviewHandler extends DecideReviewHandler implements ICommandHandler<RejectReviewCommand, DecisionResult> {
  constructor(@Inject(COMMAND_PATH) path: CommandPath, @Inject(CLOCK) clock: Clock, @Inject(IDS) ids: Ids, @Inject(DecisionProofs) proofs: DecisionProofs) {
    super(path, clock, ids, proofs);
  }

  execute(c: RejectReviewCommand): Promise<DecisionResult> {
    return this.decide(c.reviewId, c.decider, (decisionId, at) => ({
      type: 'RejectReview',
      reviewId: c.reviewId,
      decider: c.decider,
      reason: c.reason,
      rework: c.rework,
      decisionId,
      at,
    }), { outcome: 'rejected', reason: c.reason });
  }
}

@CommandHandler(FireReviewTimeoutCommand)
export class FireReviewTimeoutHandler extends DecideReviewHandler implements ICommandHandler<FireReviewTimeoutCommand, DecisionResult> {
  constructor(@Inject(COMMAND_PATH) path: CommandPath, @Inject(CLOCK) clock: Clock, @Inject(IDS) ids: Ids) {
    super(path, clock, ids);
  }

  execute(c: FireReviewTimeoutCommand): Promise<DecisionResult> {
    return this.decide(c.reviewId, { id: 'system', kind: 'system' }, (decisionId, at) => ({ type: 'FireReviewTimeout', reviewId: c.reviewId, decisionId, at }));
  }
}
