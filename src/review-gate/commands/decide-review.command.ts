import { ConflictException, ForbiddenException, Inject, Logger, NotFoundException } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { EVENT_STORE, type EventStore } from '../../events/event-store.port';
import { WrongExpectedRevisionError } from '../../events/errors';
import { CLOCK, IDS } from '../../shared/system';
import { parseReviewId } from '../../team/domain/review-id';
import type { Clock, Ids } from '../../shared/ports';
import { handleRunCommand } from '../../team/run-command';
import { RunSupervisor } from '../../team/run-supervisor';
import {
  decideReview,
  refusedDecider,
  ReviewNotFoundError,
  ReviewNotPendingError,
  ReviewTimeoutNotDueError,
  type Decider,
} from '../domain/review-decider';
import { notPendingMessage, reviewStanding, type ReviewStanding } from '../domain/review-history';
import { SelfReviewError } from '../domain/self-review';
import { toRunStreamId } from '../../team/domain/run-events';

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

const security = new Logger('security');
/** Reads and decides again after a concurrent append, at most this many times in all. */
const MAX_ATTEMPTS = 5;

/**
 * Approve, reject, and timeouts: preflight (review exists, pending, decider allowed), then the
 * domain decision (which checks self-review again), appended with the run's transition in one
 * append at the revision read. A concurrent decision makes it fail: 409.
 */
abstract class DecideReviewHandler {
  constructor(
    protected readonly store: EventStore,
    protected readonly clock: Clock,
    protected readonly ids: Ids,
    protected readonly supervisor: RunSupervisor,
  ) {}

  protected async decide(reviewId: string, decider: Decider, build: (decisionId: string, at: string) => Parameters<typeof decideReview>[0]): Promise<DecisionResult> {
    const runId = parseReviewId(reviewId)?.runId;
    if (!runId) throw new NotFoundException(`review ${reviewId} not found`);
    const decisionId = this.ids.newId();
    const at = new Date(this.clock.now()).toISOString();
    try {
      // Someone appended first: decide again on what they wrote. When it was a decision, the
      // review is no longer pending (409); when it was not (an escalation), this decision stands.
      const { events } = await handleRunCommand(
        this.store,
        runId,
        (state) => {
          // Preflight: the same rule the decider applies, checked before any decision is built.
          if (decider.kind !== 'system') {
            const rule = refusedDecider(state, reviewId, decider);
            if (rule) throw new SelfReviewError(rule);
          }
          return decideReview(build(decisionId, at), state);
        },
        { actor: decider.id, maxAttempts: MAX_ATTEMPTS },
      );
      const ended = events.find((e) => e.type === 'RunEnded');
      const decided = events.find((e) => e.type === 'ReviewDecided');
      if (events.some((e) => e.type === 'IterationStarted')) void this.supervisor.start(runId);
      return {
        decisionId,
        reviewId,
        outcome: (decided?.data as { outcome: string }).outcome,
        runStatus: ended ? (ended.data as { status: string }).status : events.some((e) => e.type === 'IterationStarted') ? 'executing' : 'awaiting_review',
      };
    } catch (err) {
      if (err instanceof SelfReviewError) {
        // Outside the run's stream: a line for whoever watches security events.
        security.warn(JSON.stringify({ event: 'self_review_refused', rule: err.rule, reviewId, decider: decider.id }));
        throw new ForbiddenException(err.message);
      }
      if (err instanceof ReviewNotFoundError) throw new NotFoundException(err.message);
      if (err instanceof ReviewNotPendingError) {
        // Say what happened; an id of an iteration that never reached the gate never existed.
        const standing = await this.standing(runId, reviewId);
        if (standing.kind === 'unknown') throw new NotFoundException(`review ${reviewId} not found`);
        throw new ConflictException(notPendingMessage(reviewId, standing));
      }
      if (err instanceof WrongExpectedRevisionError) throw new ConflictException(`review ${reviewId}: the run kept changing while deciding; try again`);
      if (err instanceof ReviewTimeoutNotDueError) throw new ConflictException(err.message);
      throw err;
    }
  }

  private async standing(runId: string, reviewId: string): Promise<ReviewStanding> {
    const events = [];
    for await (const page of this.store.readStreamPages(toRunStreamId(runId))) {
      for (const e of page) if (e.type === 'ReviewOpened' || e.type === 'ReviewDecided' || e.type === 'RunEnded') events.push(e);
    }
    return reviewStanding(events, reviewId);
  }
}

@CommandHandler(ApproveReviewCommand)
export class ApproveReviewHandler extends DecideReviewHandler implements ICommandHandler<ApproveReviewCommand, DecisionResult> {
  constructor(@Inject(EVENT_STORE) store: EventStore, @Inject(CLOCK) clock: Clock, @Inject(IDS) ids: Ids, supervisor: RunSupervisor) {
    super(store, clock, ids, supervisor);
  }

  execute(c: ApproveReviewCommand): Promise<DecisionResult> {
    return this.decide(c.reviewId, c.decider, (decisionId, at) => ({ type: 'ApproveReview', reviewId: c.reviewId, decider: c.decider, reason: c.reason, decisionId, at }));
  }
}

@CommandHandler(RejectReviewCommand)
export class RejectReviewHandler extends DecideReviewHandler implements ICommandHandler<RejectReviewCommand, DecisionResult> {
  constructor(@Inject(EVENT_STORE) store: EventStore, @Inject(CLOCK) clock: Clock, @Inject(IDS) ids: Ids, supervisor: RunSupervisor) {
    super(store, clock, ids, supervisor);
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
    }));
  }
}

@CommandHandler(FireReviewTimeoutCommand)
export class FireReviewTimeoutHandler extends DecideReviewHandler implements ICommandHandler<FireReviewTimeoutCommand, DecisionResult> {
  constructor(@Inject(EVENT_STORE) store: EventStore, @Inject(CLOCK) clock: Clock, @Inject(IDS) ids: Ids, supervisor: RunSupervisor) {
    super(store, clock, ids, supervisor);
  }

  execute(c: FireReviewTimeoutCommand): Promise<DecisionResult> {
    return this.decide(c.reviewId, { id: 'system', kind: 'system' }, (decisionId, at) => ({ type: 'FireReviewTimeout', reviewId: c.reviewId, decisionId, at }));
  }
}
