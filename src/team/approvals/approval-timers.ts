import { Inject, Injectable } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { CLOCK } from '../../shared/system';
import { DueTimeoutScanner, type DueTimeout } from '../dispatch/due-timeouts';
import type { Clock } from '../../shared/ports';
import type { RunSummary } from '../runs/run-summary';
import { RunsProjection } from '../runs/runs.projection';
import { FireApprovalTimeoutCommand } from './commands/decide-approval.command';

export const APPROVAL_TIMER_INTERVAL_MS = Symbol('APPROVAL_TIMER_INTERVAL_MS');

/** Durable tool-approval timeouts: the due time is recorded in ToolApprovalRequested (see DueTimeoutScanner). */
@Injectable()
export class ApprovalTimers extends DueTimeoutScanner {
  protected readonly what = 'approval';

  constructor(
    runs: RunsProjection,
    commands: CommandBus,
    @Inject(CLOCK) clock: Clock,
    @Inject(APPROVAL_TIMER_INTERVAL_MS) intervalMs: number,
  ) {
    super(runs, commands, clock, intervalMs);
  }

  protected due(runs: RunSummary[], now: number): DueTimeout[] {
    const due: DueTimeout[] = [];
    for (const run of runs) {
      if (run.status !== 'awaiting_approval') continue;
      for (const approval of run.pendingApprovals ?? []) {
        if (!approval.timeout || Date.parse(approval.timeout.dueAt) > now) continue;
        due.push({ id: approval.approvalId, policy: approval.timeout.policy, command: new FireApprovalTimeoutCommand(approval.approvalId) });
      }
    }
    return due;
  }
}
