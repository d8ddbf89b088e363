import { CommandBus } from '@nestjs/cqrs';
import type { Command } from 'commander';
import { ApproveReviewCommand, RejectReviewCommand } from '../../review-gate/commands/decide-review.command';
import type { DecisionResult } from '../../review-gate/decide-review';
import { parseReviewId } from '../../team/domain/review-id';
import { RunsProjection } from '../../team/runs/runs.projection';
import type { CliContext } from '../cli-context';
import { driveHere } from '../drive-here';
import { cliIdentity, decisionReason } from '../options';
import { cliDecider, withCredentialOptions } from '../decider-credential';
import type { DecisionStatement } from '../../attestation/personal-signature';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { reviewStatement, ReviewNotFoundError } from '../../review-gate/domain/review-decider';
import { loadRunState } from '../../team/runs/run-stream';
import type { INestApplicationContext } from '@nestjs/common';
import { loadReviewView } from '../../review-gate/load-review-view';
import { describeReview, useColour } from '../review-format';

/** `triad review list|show|approve|reject`: the human review gate. */
export function addReviewCommands(program: Command, ctx: CliContext): void {
  const { output, withApp, print } = ctx;
  const review = program.command('review').description('the human review gate: list pending reviews, show one (its history and diff), approve or reject it');
  review
    .command('list', { isDefault: true })
    .description('reviews waiting for a human decision')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      await withApp(async (app) => {
        const projection = app.get(RunsProjection);
        await projection.catchUp();
        const pending = projection
          .list({ status: 'awaiting_review' })
          .filter((r) => r.pendingReview)
          .map((r) => ({ ...r.pendingReview!, runId: r.runId, goal: r.goal, acceptanceCriteria: r.acceptanceCriteria, launchedBy: r.launchedBy }));
        print(opts.json, pending, () =>
          pending.length === 0
            ? 'no pending reviews'
            : pending.map((r) => `${r.reviewId}  iteration ${r.iteration}  launched by ${r.launchedBy}${r.escalated ? '  ESCALATED' : ''}  ${r.goal.slice(0, 50)}`).join('\n'),
        );
      });
    });
  review
    .command('show')
    .description('one review: the run, its criteria, every iteration (verdicts, findings, human feedback) and the diff of the workspace')
    .argument('<reviewId>')
    .option('--json', 'print JSON (the body of GET /v1/reviews/:id)')
    .action(async (reviewId: string, opts) => {
      await withApp(async (app) => {
        // Whether you may decide it, as TRIAD_USER (or the OS account): a decision still needs your key.
        const view = await loadReviewView(app.get<EventStore>(EVENT_STORE), reviewId, cliIdentity());
        print(opts.json, view, () => describeReview(view, useColour(output.io.stdout, process.env)));
      });
    });
  withCredentialOptions(
    review
      .command('approve')
      .description('approve the work: the run ends COMPLETED (needs your API key, or your SSH signature)')
      .argument('<reviewId>')
      .requiredOption('--reason <text>', 'why (kept in the decision log)'),
  )
    .option('--json', 'print JSON')
    .action(async (reviewId: string, opts) => {
      const reason = decisionReason(opts.reason, true);
      await withApp(async (app) => {
        const decider = await cliDecider(app, opts, 'review', () => statementOfReview(app, reviewId, 'approved', reason));
        const result = await app.get(CommandBus).execute<ApproveReviewCommand, DecisionResult>(new ApproveReviewCommand(reviewId, decider, reason));
        print(opts.json, result, () => `review ${reviewId} approved: the run is ${result.runStatus}`);
      });
    });
  withCredentialOptions(
    review
      .command('reject')
      .description('reject the work: back to the executor while iterations remain, else the run ends REJECTED (needs your API key, or your SSH signature)')
      .argument('<reviewId>')
      .requiredOption('--reason <text>', 'why (sent to the executor, kept in the decision log)')
      .option('--no-rework', 'end the run REJECTED at once instead of another iteration'),
  )
    .option('--json', 'print JSON')
    .action(async (reviewId: string, opts) => {
      const reason = decisionReason(opts.reason, true);
      await withApp(async (app) => {
        const decider = await cliDecider(app, opts, 'review', () => statementOfReview(app, reviewId, 'rejected', reason));
        const result = await app.get(CommandBus).execute<RejectReviewCommand, DecisionResult>(new RejectReviewCommand(reviewId, decider, reason, opts.rework !== false));
        if (result.runStatus !== 'executing') {
          print(opts.json, result, () => `review ${reviewId} rejected: the run is ${result.runStatus}`);
          return;
        }
        // Like `triad run`: this process drives the rework until the run ends or waits for review again.
        if (!opts.json) output.out(`review ${reviewId} rejected: the executor reworks it\n`);
        // The decision succeeded whatever the rework then does: the exit code stays 0.
        await driveHere(ctx, app, parseReviewId(reviewId)!.runId, { json: opts.json, result });
      });
    });
}

/** The statement a reviewer signs to decide this review (as GET /v1/reviews/:id/statement gives it). */
async function statementOfReview(app: INestApplicationContext, reviewId: string, outcome: 'approved' | 'rejected', reason: string): Promise<DecisionStatement> {
  const runId = parseReviewId(reviewId)?.runId;
  if (!runId) throw new ReviewNotFoundError(reviewId);
  return reviewStatement(await loadRunState(app.get<EventStore>(EVENT_STORE), runId), reviewId, outcome, reason);
}
