import type { INestApplicationContext } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { LiveRunBus } from '../team/live/live-run-bus';
import { GetRunQuery } from '../team/queries/run.queries';
import { DriverPool } from '../team/dispatch/driver-pool';
import type { RunSummary } from '../team/runs/run-summary';
import type { CliContext } from './cli-context';
import type { CliOutput } from './cli-io';
import { EXIT } from './exit-codes';
import { describeEvent, describeRun } from './format';

/** A run that completed or waits for a human (review or tool approval) is a success for the CLI. */
const WAITING_OR_DONE = new Set<string>(['completed', 'awaiting_review', 'awaiting_approval']);
/** Where a run stops needing a driver until someone acts. */
const SETTLED = new Set<string>([...WAITING_OR_DONE, 'failed', 'blocked', 'cancelled']);

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
    await driveOrAwait(ctx, app, runId);
  } finally {
    live?.unsubscribe();
  }
  const run = await readRun(app, runId);
  ctx.print(!!how.json, how.result ? { ...how.result, run } : run, () => `${how.blankLine ? '\n' : ''}${describeRun(run)}`);
  return WAITING_OR_DONE.has(run.status) ? EXIT.ok : EXIT.failed;
}

/** How often the CLI looks at a run another process drives (it reads the store; no live feed crosses processes here). */
const ELSEWHERE_POLL_MS = 200;

/**
 * `resume` when another process holds the run's lease (it drives the run, or it died moments ago
 * and the lease has not lapsed): says so once and tries again until the lease is free — then the
 * resumption is recorded as asked — or the run reaches a gate or an end meanwhile (the other
 * process drove it there; nothing is left to resume). `isDrivenElsewhere` tells that refusal apart.
 */
export async function resumeWhenFree(ctx: CliContext, app: INestApplicationContext, runId: string, resume: () => Promise<unknown>, isDrivenElsewhere: (err: unknown) => boolean): Promise<void> {
  let told = false;
  for (;;) {
    try {
      await resume();
      return;
    } catch (err) {
      if (!isDrivenElsewhere(err)) throw err;
    }
    if (SETTLED.has((await readRun(app, runId)).status)) return;
    if (!told) ctx.output.err(`run ${runId} is driven by another process; waiting for it to reach a gate or an end, or for its lease to lapse\n`);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, ELSEWHERE_POLL_MS));
  }
}

/**
 * Drives the run here; when a serving process sharing the store holds its lease (it took the run
 * first, or took it over from the driver here after the store or this process stalled past the
 * lease's TTL), waits for that process to bring it to a gate or an end, and takes over if its lease
 * lapses with the run still in flight (that process died). The CLI's answer is the same either way.
 */
async function driveOrAwait(ctx: CliContext, app: INestApplicationContext, runId: string): Promise<void> {
  const pool = app.get(DriverPool);
  let told = false;
  let unheld = 0;
  for (;;) {
    // A state: the driver here ran and stopped — at a gate or an end, on its own (shutdown, a store
    // fault), or because another process took the lease over (then that process drives on).
    const drove = (await (await pool.wake(runId, 'here')).stopped) !== undefined;
    const run = await readRun(app, runId);
    if (SETTLED.has(run.status)) return;
    const holder = await pool.drivenElsewhere(runId);
    if (holder !== undefined) {
      unheld = 0;
      if (!told) ctx.output.err(`run ${runId} is driven by another process (${holder}); waiting for it to reach a gate or an end\n`);
      told = true;
    } else if (drove || ++unheld >= 3) {
      // Nobody holds it and the driver here stopped on its own (or keeps stopping): say where it is.
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, ELSEWHERE_POLL_MS));
  }
}

async function readRun(app: INestApplicationContext, runId: string): Promise<RunSummary> {
  return app.get(QueryBus).execute<GetRunQuery, RunSummary>(new GetRunQuery(runId));
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
