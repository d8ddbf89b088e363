import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { CommandPath } from '../../../events/command-handling';
import { COMMAND_PATH } from '../../../events/command-path.module';
import { CLOCK } from '../../../shared/system';
import { runStatus } from '../../domain/run-state';
import type { Clock } from '../../../shared/ports';
import { decideAtGate } from '../../commands/human-decision';
import { DecisionProofs } from '../../../attestation/decision-proofs';
import { statementText } from '../../../attestation/personal-signature';
import { ConflictError } from '../../../shared/errors';
import { loadRunState } from '../../runs/run-stream';
import {
  approvalStatement,
  ApprovalNotFoundError,
  pendingApproval,
  refusedApprover,
  SelfApprovalError,
  type ApprovalCommand,
  type Approver,
} from '../../domain/approval-decider';
import { runDecider } from '../../domain/run-decider';
import { parseApprovalId } from '../../domain/approval-id';

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


/**
 * Approve, reject and timeouts of tool calls: preflight (approval exists, waits, approver allowed),
 * then the pure decision, appended at the revision read; someone appended first: decide again on
 * what they wrote (a decision makes this one 409). When nothing else waits, the dispatcher
 * (RunDispatcher) drives the run on: the tool runs, or the model hears of the rejection.
 */
abstract class DecideApprovalHandler {
  constructor(
    protected readonly path: CommandPath,
    protected readonly clock: Clock,
    protected readonly proofs?: DecisionProofs,
  ) {}

  protected async decide(approvalId: string, approver: Approver, build: (at: string, nowMs: number) => ApprovalCommand, said?: { outcome: 'approved' | 'rejected'; reason: string }): Promise<ApprovalResult> {
    const runId = parseApprovalId(approvalId)?.runId;
    if (!runId) throw new ApprovalNotFoundError(approvalId);
    // A personal signature is checked against the call as it waits now (see DecideReviewHandler).
    let signed: string | undefined;
    if (said && this.proofs?.needsCheck(approver)) {
      const statement = approvalStatement(await loadRunState(this.path.store, runId), approvalId, said.outcome, said.reason);
      await this.proofs.check(approver, statement);
      signed = statementText(statement);
    }
    const nowMs = this.clock.now();
    const command = build(new Date(nowMs).toISOString(), nowMs);
    const { state, events } = await decideAtGate(this.path, { runId, subject: 'approval', id: approvalId, actor: approver.id }, (state) => {
      // Preflight: the same rules the decision applies, checked before it is built.
      pendingApproval(state, approvalId);
      if (approver.kind !== 'system') {
        const rule = refusedApprover(state, approver);
        if (rule) throw new SelfApprovalError(rule);
      }
      if (signed !== undefined && statementText(approvalStatement(state, approvalId, said!.outcome, said!.reason)) !== signed) {
        throw new ConflictError(`approval ${approvalId} changed while its signature was checked; sign it again`);
      }
      return runDecider.decide(command, state);
    });
    const decided = events[0].data as { outcome: 'approved' | 'rejected' };
    return { approvalId, runId, outcome: decided.outcome, runStatus: runStatus(state) };
  }
}

@CommandHandler(ApproveToolCallCommand)
export class ApproveToolCallHandler extends DecideApprovalHandler implements ICommandHandler<ApproveToolCallCommand, ApprovalResult> {
  constructor(@Inject(COMMAND_PATH) path: CommandPath, @Inject(CLOCK) clock: Clock, @Inject(DecisionProofs) proofs: DecisionProofs) {
    super(path, clock, proofs);
  }

  execute(c: ApproveToolCallCommand): Promise<ApprovalResult> {
    return this.decide(c.approvalId, c.approver, (at) => ({ type: 'ApproveToolCall', approvalId: c.approvalId, approver: c.approver, reason: c.reason, at }), { outcome: 'approved', reason: c.reason });
  }
}

@CommandHandler(RejectToolCallCommand)
export class RejectToolCallHandler extends DecideApprovalHandler implements ICommandHandler<RejectToolCallCommand, ApprovalResult> {
  constructor(@Inject(COMMAND_PATH) path: CommandPath, @Inject(CLOCK) clock: Clock, @Inject(DecisionProofs) proofs: DecisionProofs) {
    super(path, clock, proofs);
  }

  execute(c: RejectToolCallCommand): Promise<ApprovalResult> {
    return this.decide(c.approvalId, c.approver, (at) => ({ type: 'RejectToolCall', approvalId: c.approvalId, approver: c.approver, reason: c.reason, at }), { outcome: 'rejected', reason: c.reason });
  }
}

@CommandHandler(FireApprovalTimeoutCommand)
export class FireApprovalTimeoutHandler extends DecideApprovalHandler implements ICommandHandler<FireApprovalTimeoutCommand, ApprovalResult> {
  constructor(@Inject(COMMAND_PATH) path: CommandPath, @Inject(CLOCK) clock: Clock) {
    super(path, clock);
  }

  execute(c: FireApprovalTimeoutCommand): Promise<ApprovalResult> {
    return this.decide(c.approvalId, { id: 'system', kind: 'system' }, (at, nowMs) => ({ type: 'FireApprovalTimeout', approvalId: c.approvalId, at, nowMs }));
  }
}

export const APPROVAL_COMMAND_HANDLERS = [ApproveToolCallHandler, RejectToolCallHandler, FireApprovalTimeoutHandler];
