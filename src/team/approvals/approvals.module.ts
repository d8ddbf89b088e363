import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { TRIAD_CONFIG } from '../../config/config.module';
import type { TriadConfig } from '../../config/config';
import { TeamModule } from '../team.module';
import { APPROVAL_TIMER_INTERVAL_MS, ApprovalTimers } from './approval-timers';
import { APPROVAL_COMMAND_HANDLERS } from './commands/decide-approval.command';
import { ApprovalsController } from './http/approvals.controller';

/** Tool approvals: routes, decision handlers and durable timeouts (timers share TRIAD_REVIEW_TIMER_MS). */
@Module({
  imports: [CqrsModule, TeamModule],
  controllers: [ApprovalsController],
  providers: [
    ...APPROVAL_COMMAND_HANDLERS,
    ApprovalTimers,
    { provide: APPROVAL_TIMER_INTERVAL_MS, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => c.reviewTimerIntervalMs },
  ],
  exports: [ApprovalTimers],
})
export class ApprovalsModule {}
