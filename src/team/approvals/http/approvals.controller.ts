import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { IsIn, IsNotEmpty, IsObject, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { May } from '../../../auth/auth.guard';
import { CurrentCredential, CurrentIdentity } from '../../../auth/current-identity.decorator';
import { requestProof } from '../../../attestation/signature-input';
import { statementHash, statementText, type DecisionStatement } from '../../../attestation/personal-signature';
import { EVENT_STORE, type EventStore } from '../../../events/event-store/event-store.port';
import { loadRunState } from '../../runs/run-stream';
import { ApprovalNotFoundError, approvalStatement } from '../../domain/approval-decider';
import { parseApprovalId } from '../../domain/approval-id';
import type { Identity } from '../../../auth/identity';
import { RunsProjection } from '../../runs/runs.projection';
import { ApproveToolCallCommand, RejectToolCallCommand, type ApprovalResult } from '../commands/decide-approval.command';
import { VISIBLE_TEXT } from '../../../shared/text';
import { InvalidRequestError } from '../../../shared/errors';

export class ApproveToolCallDto {
  @IsOptional() @IsString() @IsNotEmpty() @Matches(VISIBLE_TEXT, { message: 'reason must not be blank' }) @MaxLength(4000) reason?: string;
  /** The approver's own signature on the decision's statement (GET /v1/approvals/:id/statement). */
  @IsOptional() @IsObject() signature?: unknown;
}

export class RejectToolCallDto {
  @IsString() @IsNotEmpty() @Matches(VISIBLE_TEXT, { message: 'reason must not be blank' }) @MaxLength(4000) reason!: string;
  @IsOptional() @IsObject() signature?: unknown;
}

export class ApprovalStatementQueryDto {
  @IsIn(['approved', 'rejected']) outcome!: 'approved' | 'rejected';
  @IsOptional() @IsString() @IsNotEmpty() @Matches(VISIBLE_TEXT, { message: 'reason must not be blank' }) @MaxLength(4000) reason?: string;
}

/** Risky tool calls waiting for a human. Reviewers and operators decide them. */
@Controller('v1/approvals')
@May('decideToolCalls')
export class ApprovalsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly runs: RunsProjection,
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  /** What an approver signs to decide this call with that outcome and reason (see GET /v1/reviews/:id/statement). */
  @Get(':id/statement')
  async statement(@Param('id') id: string, @Query() query: ApprovalStatementQueryDto): Promise<{ statement: DecisionStatement; text: string; challenge: string }> {
    const runId = parseApprovalId(id)?.runId;
    if (!runId) throw new ApprovalNotFoundError(id);
    const reason = query.reason?.trim() || (query.outcome === 'approved' ? 'approved' : '');
    if (reason === '') throw new InvalidRequestError('a rejection needs a reason');
    const statement = approvalStatement(await loadRunState(this.store, runId), id, query.outcome, reason);
    return { statement, text: statementText(statement), challenge: statementHash(statement).toString('base64url') };
  }

  @Get()
  async pending(@Query('runId') runId?: string) {
    await this.runs.catchUp();
    return {
      approvals: this.runs
        .list({ status: 'awaiting_approval' })
        .filter((r) => !runId || r.runId === runId)
        .flatMap((r) => (r.pendingApprovals ?? []).map((a) => ({ ...a, runId: r.runId, goal: r.goal, launchedBy: r.launchedBy }))),
    };
  }

  @Post(':id/approve')
  @HttpCode(200)
  approve(@Param('id') id: string, @Body() body: ApproveToolCallDto, @CurrentIdentity() who: Identity, @CurrentCredential() via: 'api_key' | 'console_session'): Promise<ApprovalResult> {
    return this.commands.execute(new ApproveToolCallCommand(id, { id: who.id, kind: 'human', proof: requestProof(via, body.signature) }, body.reason?.trim() || 'approved'));
  }

  @Post(':id/reject')
  @HttpCode(200)
  reject(@Param('id') id: string, @Body() body: RejectToolCallDto, @CurrentIdentity() who: Identity, @CurrentCredential() via: 'api_key' | 'console_session'): Promise<ApprovalResult> {
    return this.commands.execute(new RejectToolCallCommand(id, { id: who.id, kind: 'human', proof: requestProof(via, body.signature) }, body.reason.trim()));
  }
}
