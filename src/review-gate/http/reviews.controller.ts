import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { IsBoolean, IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { May } from '../../auth/auth.guard';
import { CurrentIdentity } from '../../auth/current-identity.decorator';
import type { Identity } from '../../auth/identity';
import { RunsProjection } from '../../team/runs.projection';
import { ApproveReviewCommand, RejectReviewCommand, type DecisionResult } from '../commands/decide-review.command';
import { VISIBLE_TEXT } from '../../shared/text';

export class ApproveReviewDto {
  @IsString() @IsNotEmpty() @Matches(VISIBLE_TEXT, { message: 'reason must not be blank' }) @MaxLength(4000) reason!: string;
}

export class RejectReviewDto extends ApproveReviewDto {
  /** false ends the run REJECTED at once; default true (rework while iterations remain). */
  @IsOptional() @IsBoolean() rework?: boolean;
}

@Controller('v1/reviews')
@May('review')
export class ReviewsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly runs: RunsProjection,
  ) {}

  @Get()
  async pending() {
    await this.runs.catchUp();
    return {
      reviews: this.runs
        .list({ status: 'awaiting_review' })
        .filter((r) => r.pendingReview)
        .map((r) => ({
          ...r.pendingReview!,
          runId: r.runId,
          goal: r.goal,
          acceptanceCriteria: r.acceptanceCriteria,
          launchedBy: r.launchedBy,
          lastVerdict: r.lastVerdict,
        })),
    };
  }

  @Post(':id/approve')
  @HttpCode(200)
  approve(@Param('id') id: string, @Body() body: ApproveReviewDto, @CurrentIdentity() who: Identity): Promise<DecisionResult> {
    return this.commands.execute(new ApproveReviewCommand(id, { id: who.id, kind: 'human' }, body.reason.trim()));
  }

  @Post(':id/reject')
  @HttpCode(200)
  reject(@Param('id') id: string, @Body() body: RejectReviewDto, @CurrentIdentity() who: Identity): Promise<DecisionResult> {
    return this.commands.execute(new RejectReviewCommand(id, { id: who.id, kind: 'human' }, body.reason.trim(), body.rework ?? true));
  }
}
