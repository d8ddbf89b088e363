import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Command } from 'commander';
import { CancelRunCommand } from '../../team/commands/cancel-run.command';
import { RUN_STATUSES, TERMINAL_STATUSES, type RunStatus } from '../../team/domain/run-events';
import { GetRunQuery, ListRunsQuery } from '../../team/queries/run.queries';
import type { RunSummary } from '../../team/runs/run-summary';
import type { CliContext } from '../cli-context';
import { CliError, EXIT } from '../exit-codes';
import { describeRun, describeRunLine } from '../format';
import { cliIdentity, int } from '../options';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { loadWorkspaceView } from '../../session-replay/workspace-view';
import { describeWorkspace, useColour } from '../review-format';

const WAITING_FOR_A_HUMAN = new Set<string>(['awaiting_review', 'awaiting_approval']);

/** `triad runs list|show|wait|cancel|workspace`. */
export function addRunsCommands(program: Command, { withApp, print, output }: CliContext): void {
  const runs = program.command('runs').description('list, show, wait for and cancel runs, and read their workspace');
  runs
    .command('list', { isDefault: true })
    .option('--status <status>', `only runs with this status (${RUN_STATUSES.join(', ')})`)
    .option('--limit <n>', 'at most this many', int('--limit', 1, 10000), 50)
    .option('--json', 'print JSON')
    .action(async (opts) => {
      if (opts.status !== undefined && !RUN_STATUSES.includes(opts.status)) throw new CliError(`--status must be one of ${RUN_STATUSES.join(', ')}`, EXIT.usage);
      await withApp(async (app) => {
        const list = await app.get(QueryBus).execute<ListRunsQuery, RunSummary[]>(new ListRunsQuery(opts.status as RunStatus | undefined, opts.limit));
        print(opts.json, list, () =>
          list.length === 0
            ? 'no runs'
            : list.map(describeRunLine).join('\n'),
        );
      });
    });
  runs
    .command('show')
    .argument('<runId>')
    .option('--json', 'print JSON')
    .action(async (runId: string, opts) => {
      await withApp(async (app) => {
        const run = await app.get(QueryBus).execute<GetRunQuery, RunSummary>(new GetRunQuery(runId));
        print(opts.json, run, () => describeRun(run));
      });
    });
  runs
    .command('wait')
    .argument('<runId>')
    .option('--timeout-ms <ms>', 'how long to wait', int('--timeout-ms', 0, 24 * 3600 * 1000), 30_000)
    .option('--json', 'print JSON')
    .action(async (runId: string, opts) => {
      const exit = await withApp(async (app) => {
        const deadline = Date.now() + opts.timeoutMs;
        const queries = app.get(QueryBus);
        const settled = (r: RunSummary) => TERMINAL_STATUSES.has(r.status) || WAITING_FOR_A_HUMAN.has(r.status);
        let run = await queries.execute<GetRunQuery, RunSummary>(new GetRunQuery(runId));
        while (!settled(run) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 100));
          run = await queries.execute<GetRunQuery, RunSummary>(new GetRunQuery(runId));
        }
        // Waiting for a human is as far as a run gets on its own: a success, like `triad run`.
        const status = WAITING_FOR_A_HUMAN.has(run.status) ? 'waiting' : !TERMINAL_STATUSES.has(run.status) ? 'timeout' : run.status === 'completed' ? 'ok' : 'error';
        const endedAt = status === 'waiting' ? null : run.endedAt;
        print(opts.json, { status, runStatus: run.status, terminationReason: run.terminationReason, startedAt: run.startedAt, endedAt }, () =>
          `${status}: run ${runId} is ${run.status}${run.terminationReason ? ` (${run.terminationReason})` : ''}`,
        );
        return status === 'ok' || status === 'waiting' ? EXIT.ok : status === 'timeout' ? EXIT.timeout : EXIT.failed;
      });
      process.exitCode = exit;
    });
  runs
    .command('cancel')
    .argument('<runId>')
    .option('--reason <text>', 'why')
    .option('--as <user>', 'cancel as this user')
    .option('--json', 'print JSON')
    .action(async (runId: string, opts) => {
      await withApp(async (app) => {
        const result = await app.get(CommandBus).execute(new CancelRunCommand(runId, cliIdentity(opts.as), opts.reason));
        print(opts.json, result, () => `run ${runId} cancelled`);
      });
    });
  runs
    .command('workspace')
    .description("the workspace's files at the end of an iteration (path, size, sha256), or its diff")
    .argument('<runId>')
    .option('--iteration <n>', 'this iteration (default: the latest)', int('--iteration', 1, 1000))
    .option('--diff [against]', 'print the unified diff against the previous iteration (default) or the start')
    .option('--json', 'print JSON (the body of GET /v1/runs/:id/workspace)')
    .action(async (runId: string, opts) => {
      const diff = opts.diff === undefined ? undefined : opts.diff === true ? 'previous' : opts.diff;
      if (diff !== undefined && diff !== 'previous' && diff !== 'start') throw new CliError('--diff must be previous or start', EXIT.usage);
      await withApp(async (app) => {
        const view = await loadWorkspaceView(app.get<EventStore>(EVENT_STORE), runId, { iteration: opts.iteration, diff });
        print(opts.json, view, () => describeWorkspace(view, useColour(output.io.stdout, process.env)));
      });
    });
}
