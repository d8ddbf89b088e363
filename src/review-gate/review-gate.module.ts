import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { TeamModule } from '../team/team.module';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { ApproveReviewHandler, FireReviewTimeoutHandler, RejectReviewHandler } from './commands/decide-review.command';
import { DECISION_LOG_PROVIDERS, DecisionLogProjector, DecisionLogService } from './decision-log/decision-log.providers';
import { DecisionsController } from './http/decisions.controller';
import { ReviewsController } from './http/reviews.controller';
import { ReviewViewController } from './http/review-view.controller';
import { REVIEW_TIMER_INTERVAL_MS, ReviewTimers } from './review-timers';

export const REVIEW_COMMAND_HANDLERS = [ApproveReviewHandler, RejectReviewHandler, FireReviewTimeoutHandler];

@Module({
  imports: [CqrsModule, TeamModule],
  controllers: [ReviewsController, ReviewViewController, DecisionsController],
  providers: [
    ...REVIEW_COMMAND_HANDLERS,
    ReviewTimers,
    ...DECISION_LOG_PROVIDERS,
    { provide: REVIEW_TIMER_INTERVAL_MS, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => c.reviewTimerIntervalMs },
  ],
  exports: [ReviewTimers, DecisionLogService, DecisionLogProjector],
})
export class ReviewGateModule {}
