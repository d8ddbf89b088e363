import type { INestApplicationContext } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { Command } from 'commander';
import { parseApprovalId } from '../../team/domain/approval-id';
import { ApproveToolCallCommand, RejectToolCallCommand, type ApprovalResult } from '../../team/approvals/commands/decide-approval.command';
import { TERMINAL_STATUSES, type RunStatus } from '../../team/domain/run-events';
import { RunsProjection } from '../../team/runs/runs.projection';
import type { CliContext } from '../cli-context';
import { driveHere } from '../drive-here';
import { CliError, EXIT } from '../exit-codes';
import { decisionReason } from '../options';
import { cliDecider, withCredentialOptions } from '../decider-credential';
import type { DecisionStatement } from '../../attestation/personal-signature';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { approvalStatement } from '../../team/domain/approval-decider';
import { loadRunState } from '../../team/runs/run-stream';

/** `triad approvals list|approve|reject`: risky tool calls waiting for a human. */
export function addApprovalsCommands(program: Command, ctx: CliContext): void {
  const { output, withApp, print } = ctx;
  const approvals = program.command('approvals').description('risky tool calls waiting for a human: list, approve or reject one');
  /** After a decision that frees the run: drive it here, like `triad review reject`, until it ends or waits again. */
  const afterApprovalDecision = async (app: INestApplicationContext, result: ApprovalResult, json: boolean, verb: string) => {
    if (result.runStatus === 'awaiting_approval' || TERMINAL_STATUSES.has(result.runStatus as RunStatus)) {
      print(json, result, () => `approval ${result.approvalId} ${verb}: the run is ${result.runStatus}`);
      return;
    }
    if (!json) output.out(`approval ${result.approvalId} ${verb}: the run continues\n`);
    // The decision succeeded whatever the run then does: the exit code stays 0.
    await driveHere(ctx, app, result.runId, { json, result });
  };
  approvals
    .command('list', { isDefault: true })
    .description('tool calls waiting for a human decision')
    .option('--run <runId>', 'only this run')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      await withApp(async (app) => {
        const projection = app.get(RunsProjection);
        await projection.catchUp();
        const pending = projection
          .list({ status: 'awaiting_approval' })
          .filter((r) => !opts.run || r.runId === opts.run)
          .flatMap((r) => (r.pendingApprovals ?? []).map((a) => ({ ...a, runId: r.runId, goal: r.goal, launchedBy: r.launchedBy })));
        print(opts.json, pending, () =>
          pending.length === 0
            ? 'no tool calls waiting for approval'
            : pending
                .map((a) => `${a.approvalId}  ${a.role} #${a.turn}  ${a.tool} ${JSON.stringify(a.input).slice(0, 80)}  launched by ${a.launchedBy}${a.timeout ? `  (${a.timeout.policy} at ${a.timeout.dueAt})` : ''}`)
                .join('\n'),
        );
      });
    });
  withCredentialOptions(approvals.command('approve').description('let the tool call run (needs your API key, or your SSH signature)').argument('<approvalId>').option('--reason <text>', 'why (recorded in the run)'))
    .option('--json', 'print JSON')
    .action(async (approvalId: string, opts) => {
      const reason = decisionReason(opts.reason, false) ?? 'approved';
      if (!parseApprovalId(approvalId)) throw new CliError(`approval ${approvalId} not found`, EXIT.notFound);
      await withApp(async (app) => {
        const approver = await cliDecider(app, opts, 'decideToolCalls', () => statementOfApproval(app, approvalId, 'approved', reason));
        const result = await app.get(CommandBus).execute<ApproveToolCallCommand, ApprovalResult>(new ApproveToolCallCommand(approvalId, approver, reason));
        await afterApprovalDecision(app, result, opts.json, 'approved');
      });
    });
  withCredentialOptions(
    approvals
      .command('reject')
      .description('refuse the tool call: the agent is told "rejected by user: <reason>" (needs your API key, or your SSH signature)')
      .argument('<approvalId>')
      .requiredOption('--reason <text>', 'why (sent to the agent, recorded in the run)'),
  )
    .option('--json', 'print JSON')
    .action(async (approvalId: string, opts) => {
      const reason = decisionReason(opts.reason, true);
      if (!parseApprovalId(approvalId)) throw new CliError(`approval ${approvalId} not found`, EXIT.notFound);
      await withApp(async (app) => {
        const approver = await cliDecider(app, opts, 'decideToolCalls', () => statementOfApproval(app, approvalId, 'rejected', reason));
        const result = await app.get(CommandBus).execute<RejectToolCallCommand, ApprovalResult>(new RejectToolCallCommand(approvalId, approver, reason));
        await afterApprovalDecision(app, result, opts.json, 'rejected');
      });
    });
}

/** The statement an approver signs to decide this call (as GET /v1/approvals/:id/statement gives it). */
async function statementOfApproval(app: INestApplicationContext, approvalId: string, outcome: 'approved' | 'rejected', reason: string): Promise<DecisionStatement> {
  return approvalStatement(await loadRunState(app.get<EventStore>(EVENT_STORE), parseApprovalId(approvalId)!.runId), approvalId, outcome, reason);
}
