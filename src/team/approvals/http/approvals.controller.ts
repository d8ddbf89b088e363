import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { May } from '../../../auth/auth.guard';
import { CurrentIdentity } from '../../../auth/current-identity.decorator';
import type { Identity } from '../../../auth/identity';
import { RunsProjection } from '../../runs.projection';
import { ApproveToolCallCommand, RejectToolCallCommand, type ApprovalResult } from '../commands/decide-approval.command';
import { VISIBLE_TEXT } from '../../../shared/text';

export class ApproveToolCallDto {
  @IsOptional() @IsString() @IsNotEmpty() @Matches(VISIBLE_TEXT, { message: 'reason must not be blank' }) @MaxLength(4000) reason?: string;
}

export class RejectToolCallDto {
  @IsString() @IsNotEmpty() @Matches(VISIBLE_TEXT, { message: 'reason must not be blank' }) @MaxLength(4000) reason!: string;
}

/** Risky tool calls waiting for a human. Reviewers and operators decide them. */
@Controller('v1/approvals')
@May('decideToolCalls')
export class ApprovalsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly runs: RunsProjection,
  ) {}

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
  approve(@Param('id') id: string, @Body() body: ApproveToolCallDto, @CurrentIdentity() who: Identity): Promise<ApprovalResult> {
    return this.commands.execute(new ApproveToolCallCommand(id, { id: who.id, kind: 'human' }, body.reason?.trim() || 'approved'));
  }

  @Post(':id/reject')
  @HttpCode(200)
  reject(@Param('id') id: string, @Body() body: RejectToolCallDto, @CurrentIdentity() who: Identity): Promise<ApprovalResult> {
    return this.commands.execute(new RejectToolCallCommand(id, { id: who.id, kind: 'human' }, body.reason.trim()));
  }
}
