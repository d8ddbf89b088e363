import type { INestApplicationContext } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { LiveRunBus } from '../team/live-run-bus';
import { GetRunQuery } from '../team/queries/run.queries';
import { RunSupervisor } from '../team/run-supervisor';
import type { RunSummary } from '../team/run-summary';
import type { CliContext } from './cli-context';
import type { CliOutput } from './cli-io';
import { EXIT } from './exit-codes';
import { describeEvent, describeRun } from './format';

/** A run that completed or waits for a human (review or tool approval) is a success for the CLI. */
const WAITING_OR_DONE = new Set<string>(['completed', 'awaiting_review', 'awaiting_approval']);

export interface DriveHereOptions {
  /** Print the run's events as the driver here appends them (`--follow`). */
  follow?: boolean;
  json?: boolean;
  /** The command's own result: --json then prints `{...result, run}` instead of the run alone. */
  result?: object;
  /** A blank line before the run's summary (commands that can --follow keep it apart from the events). */
  blankLine?: boolean;
  /** Done once the events are followed and before the driving (resume's own event then shows too). */
  before?: () => Promise<unknown>;
}

/**
 * `triad run`, `resume`, `fork`, `review reject` and `approvals approve|reject` end the same way:
 * this process drives the run until it ends or waits for a human, then prints where it got to.
 * Answers the exit code that status means: 0 completed or waiting for a human, else 1.
 */
export async function driveHere(ctx: CliContext, app: INestApplicationContext, runId: string, how: DriveHereOptions): Promise<number> {
  const live = how.follow ? followRun(ctx.output, app, runId, how.json) : undefined;
  try {
    await how.before?.();
    await app.get(RunSupervisor).start(runId);
  } finally {
    live?.unsubscribe();
  }
  const run = await app.get(QueryBus).execute<GetRunQuery, RunSummary>(new GetRunQuery(runId));
  ctx.print(!!how.json, how.result ? { ...how.result, run } : run, () => `${how.blankLine ? '\n' : ''}${describeRun(run)}`);
  return WAITING_OR_DONE.has(run.status) ? EXIT.ok : EXIT.failed;
}

/** Prints a run's events as the local driver appends them: one JSON line each, or one human line. */
function followRun(output: CliOutput, app: INestApplicationContext, runId: string, json?: boolean) {
  return app.get(LiveRunBus).of(runId).subscribe((item) => {
    if (item.kind !== 'events') return;
    for (const e of item.events) {
      if (json) output.out(`${JSON.stringify(e)}\n`);
      else {
        const line = describeEvent(e);
        if (line) output.out(`${line}\n`);
      }
    }
  });
}
