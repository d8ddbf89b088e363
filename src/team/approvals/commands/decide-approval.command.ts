import { ConflictException, ForbiddenException, Inject, Logger, NotFoundException } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { EVENT_STORE, type EventStore } from '../../../events/event-store.port';
import { WrongExpectedRevisionError } from '../../../events/errors';
import { CLOCK } from '../../../shared/system';
import { evolve, runStatus } from '../../domain/run-state';
import type { Clock } from '../../../shared/ports';
import { handleRunCommand } from '../../run-command';
import { RunSupervisor } from '../../run-supervisor';
import {
  ApprovalNotFoundError,
  ApprovalNotPendingError,
  ApprovalTimeoutNotDueError,
  decideApproval,
  pendingApproval,
  refusedApprover,
  SelfApprovalError,
  type ApprovalCommand,
  type Approver,
} from '../approval-decider';
import { parseApprovalId } from '../approval-id';

export class ApproveToolCallCommand {
  constructor(
    readonly approvalId: string,
    readonly approver: Approver,
    readonly reason: string,
  ) {}
}

export class RejectToolCallCommand {
  constructor(
    readonly approvalId: string,
    readonly approver: Approver,
    readonly reason: string,
  ) {}
}

export class FireApprovalTimeoutCommand {
  constructor(readonly approvalId: string) {}
}

export interface ApprovalResult {
  approvalId: string;
  runId: string;
  outcome: 'approved' | 'rejected';
  /** The run's status after the decision (`awaiting_approval` while other calls of the turn still wait). */
  runStatus: string;
}

const security = new Logger('security');
/** Reads and decides again after a concurrent append, at most this many times in all. */
const MAX_ATTEMPTS = 5;

/**
 * Approve, reject and timeouts of tool calls: preflight (approval exists, waits, approver allowed),
 * then the pure decision, appended at the revision read. When nothing else waits, the local
 * supervisor drives the run on (the tool runs, or the model hears of the rejection).
 */
abstract class DecideApprovalHandler {
  constructor(
    protected readonly store: EventStore,
    protected readonly clock: Clock,
    protected readonly supervisor: RunSupervisor,
  ) {}

  protected async decide(approvalId: string, approver: Approver, build: (at: string, nowMs: number) => ApprovalCommand): Promise<ApprovalResult> {
    const runId = parseApprovalId(approvalId)?.runId;
    if (!runId) throw new NotFoundException(`approval ${approvalId} not found`);
    const nowMs = this.clock.now();
    const command = build(new Date(nowMs).toISOString(), nowMs);
    try {
      // Someone appended first: decide again on what they wrote (a decision makes this one 409).
      const { state, events } = await handleRunCommand(
        this.store,
        runId,
        (state) => {
          // Preflight: the same rules the decision applies, checked before it is built.
          pendingApproval(state, approvalId);
          if (approver.kind !== 'system') {
            const rule = refusedApprover(state, approver);
            if (rule) throw new SelfApprovalError(rule);
          }
          return decideApproval(command, state);
        },
        { actor: approver.id, maxAttempts: MAX_ATTEMPTS },
      );
      let revision = state.revision;
      for (const e of events) evolve(state, e, { revision: ++revision, position: state.position });
      const status = runStatus(state);
      if (status !== 'awaiting_approval') void this.supervisor.start(runId);
      const decided = events[0].data as { outcome: 'approved' | 'rejected' };
      return { approvalId, runId, outcome: decided.outcome, runStatus: status };
    } catch (err) {
      if (err instanceof SelfApprovalError) {
        security.warn(JSON.stringify({ event: 'self_approval_refused', rule: err.rule, approvalId, approver: approver.id }));
        throw new ForbiddenException(err.message);
      }
      if (err instanceof ApprovalNotFoundError) throw new NotFoundException(err.message);
      if (err instanceof ApprovalNotPendingError || err instanceof ApprovalTimeoutNotDueError) throw new ConflictException(err.message);
      if (err instanceof WrongExpectedRevisionError) throw new ConflictException(`approval ${approvalId}: the run kept changing while deciding; try again`);
      throw err;
    }
  }
}

@CommandHandler(ApproveToolCallCommand)
export class ApproveToolCallHandler extends DecideApprovalHandler implements ICommandHandler<ApproveToolCallCommand, ApprovalResult> {
  constructor(@Inject(EVENT_STORE) store: EventStore, @Inject(CLOCK) clock: Clock, supervisor: RunSupervisor) {
    super(store, clock, supervisor);
  }

  execute(c: ApproveToolCallCommand): Promise<ApprovalResult> {
    return this.decide(c.approvalId, c.approver, (at) => ({ type: 'ApproveToolCall', approvalId: c.approvalId, approver: c.approver, reason: c.reason, at }));
  }
}

@CommandHandler(RejectToolCallCommand)
export class RejectToolCallHandler extends DecideApprovalHandler implements ICommandHandler<RejectToolCallCommand, ApprovalResult> {
  constructor(@Inject(EVENT_STORE) store: EventStore, @Inject(CLOCK) clock: Clock, supervisor: RunSupervisor) {
    super(store, clock, supervisor);
  }

  execute(c: RejectToolCallCommand): Promise<ApprovalResult> {
    return this.decide(c.approvalId, c.approver, (at) => ({ type: 'RejectToolCall', approvalId: c.approvalId, approver: c.approver, reason: c.reason, at }));
  }
}

@CommandHandler(FireApprovalTimeoutCommand)
export class FireApprovalTimeoutHandler extends DecideApprovalHandler implements ICommandHandler<FireApprovalTimeoutCommand, ApprovalResult> {
  constructor(@Inject(EVENT_STORE) store: EventStore, @Inject(CLOCK) clock: Clock, supervisor: RunSupervisor) {
    super(store, clock, supervisor);
  }

  execute(c: FireApprovalTimeoutCommand): Promise<ApprovalResult> {
    return this.decide(c.approvalId, { id: 'system', kind: 'system' }, (at, nowMs) => ({ type: 'FireApprovalTimeout', approvalId: c.approvalId, at, nowMs }));
  }
}

export const APPROVAL_COMMAND_HANDLERS = [ApproveToolCallHandler, RejectToolCallHandler, FireApprovalTimeoutHandler];
