import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { IsBoolean, IsIn, IsNotEmpty, IsObject, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { May } from '../../auth/auth.guard';
import { CurrentCredential, CurrentIdentity } from '../../auth/current-identity.decorator';
import { requestProof } from '../../attestation/signature-input';
import { statementHash, statementText, type DecisionStatement } from '../../attestation/personal-signature';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { parseReviewId } from '../../team/domain/review-id';
import { loadRunState } from '../../team/runs/run-stream';
import { reviewStatement, ReviewNotFoundError } from '../domain/review-decider';
import type { Identity } from '../../auth/identity';
import { RunsProjection } from '../../team/runs/runs.projection';
import { ApproveReviewCommand, RejectReviewCommand } from '../commands/decide-review.command';
import type { DecisionResult } from '../decide-review';
import { VISIBLE_TEXT } from '../../shared/text';

export class ApproveReviewDto {
  @IsString() @IsNotEmpty() @Matches(VISIBLE_TEXT, { message: 'reason must not be blank' }) @MaxLength(4000) reason!: string;
  /** The reviewer's own signature on the decision's statement (GET /v1/reviews/:id/statement). */
  @IsOptional() @IsObject() signature?: unknown;
}

export class StatementQueryDto {
  @IsIn(['approved', 'rejected']) outcome!: 'approved' | 'rejected';
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
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  /**
   * What a reviewer signs to decide this review with that outcome and reason: the statement, its
   * text (sign it with `ssh-keygen -Y sign -n triad-decision`) and its sha256 (a passkey's challenge).
   */
  @Get(':id/statement')
  async statement(@Param('id') id: string, @Query() query: StatementQueryDto): Promise<{ statement: DecisionStatement; text: string; challenge: string }> {
    const runId = parseReviewId(id)?.runId;
    if (!runId) throw new ReviewNotFoundError(id);
    const statement = reviewStatement(await loadRunState(this.store, runId), id, query.outcome, query.reason.trim());
    return { statement, text: statementText(statement), challenge: statementHash(statement).toString('base64url') };
  }

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
  approve(@Param('id') id: string, @Body() body: ApproveReviewDto, @CurrentIdentity() who: Identity, @CurrentCredential() via: 'api_key' | 'console_session'): Promise<DecisionResult> {
    return this.commands.execute(new ApproveReviewCommand(id, { id: who.id, kind: 'human', proof: requestProof(via, body.signature) }, body.reason.trim()));
  }

  @Post(':id/reject')
  @HttpCode(200)
  reject(@Param('id') id: string, @Body() body: RejectReviewDto, @CurrentIdentity() who: Identity, @CurrentCredential() via: 'api_key' | 'console_session'): Promise<DecisionResult> {
    return this.commands.execute(new RejectReviewCommand(id, { id: who.id, kind: 'human', proof: requestProof(via, body.signature) }, body.reason.trim(), body.rework ?? true));
  }
}
