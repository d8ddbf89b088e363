import { Inject, Injectable } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { CLOCK } from '../shared/system';
import { DueTimeoutScanner, type DueTimeout } from '../team/dispatch/due-timeouts';
import type { Clock } from '../shared/ports';
import type { RunSummary } from '../team/runs/run-summary';
import { RunsProjection } from '../team/runs/runs.projection';
import { FireReviewTimeoutCommand } from './commands/decide-review.command';

export const REVIEW_TIMER_INTERVAL_MS = Symbol('REVIEW_TIMER_INTERVAL_MS');

/** Durable review timeouts: the due time is recorded in ReviewOpened (see DueTimeoutScanner). */
@Injectable()
export class ReviewTimers extends DueTimeoutScanner {
  protected readonly what = 'review';

  constructor(
    runs: RunsProjection,
    commands: CommandBus,
    @Inject(CLOCK) clock: Clock,
    @Inject(REVIEW_TIMER_INTERVAL_MS) intervalMs: number,
  ) {
    super(runs, commands, clock, intervalMs);
  }

  protected due(runs: RunSummary[], now: number): DueTimeout[] {
    const due: DueTimeout[] = [];
    for (const run of runs) {
      const review = run.pendingReview;
      if (run.status !== 'awaiting_review' || !review?.timeout || review.escalated || Date.parse(review.timeout.dueAt) > now) continue;
      due.push({ id: review.reviewId, policy: review.timeout.policy, command: new FireReviewTimeoutCommand(review.reviewId) });
    }
    return due;
  }
}
