import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import { CLOCK, IDS } from '../../shared/system';
import type { Clock, Ids } from '../../shared/ports';
import { DecisionProofs } from '../../attestation/decision-proofs';
import type { Decider } from '../domain/review-decider';
import { decideReview, type DecisionResult, type ReviewDeps } from '../decide-review';

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

/** Approve, reject and timeouts: thin handlers over `decideReview`. */
@CommandHandler(ApproveReviewCommand)
export class ApproveReviewHandler implements ICommandHandler<ApproveReviewCommand, DecisionResult> {
  private readonly deps: ReviewDeps;

  constructor(@Inject(COMMAND_PATH) path: CommandPath, @Inject(CLOCK) clock: Clock, @Inject(IDS) ids: Ids, @Inject(DecisionProofs) proofs: DecisionProofs) {
    this.deps = { path, clock, ids, proofs };
  }

  execute(c: ApproveReviewCommand): Promise<DecisionResult> {
    return decideReview(this.deps, c.reviewId, c.decider, (decisionId, at) => ({ type: 'ApproveReview', reviewId: c.reviewId, decider: c.decider, reason: c.reason, decisionId, at }), { outcome: 'approved', reason: c.reason });
  }
}

@CommandHandler(RejectReviewCommand)
export class RejectReviewHandler implements ICommandHandler<RejectReviewCommand, DecisionResult> {
  private readonly deps: ReviewDeps;

  constructor(@Inject(COMMAND_PATH) path: CommandPath, @Inject(CLOCK) clock: Clock, @Inject(IDS) ids: Ids, @Inject(DecisionProofs) proofs: DecisionProofs) {
    this.deps = { path, clock, ids, proofs };
  }

  execute(c: RejectReviewCommand): Promise<DecisionResult> {
    return decideReview(this.deps, c.reviewId, c.decider, (decisionId, at) => ({
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
export class FireReviewTimeoutHandler implements ICommandHandler<FireReviewTimeoutCommand, DecisionResult> {
  private readonly deps: ReviewDeps;

  constructor(@Inject(COMMAND_PATH) path: CommandPath, @Inject(CLOCK) clock: Clock, @Inject(IDS) ids: Ids) {
    this.deps = { path, clock, ids };
  }

  execute(c: FireReviewTimeoutCommand): Promise<DecisionResult> {
    return decideReview(this.deps, c.reviewId, { id: 'system', kind: 'system' }, (decisionId, at) => ({ type: 'FireReviewTimeout', reviewId: c.reviewId, decisionId, at }));
  }
}
