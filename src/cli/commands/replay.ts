import { CommandBus } from '@nestjs/cqrs';
import type { Command } from 'commander';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { ForkRunCommand } from '../../session-replay/commands/fork-run.command';
import { validateOverrides, type ForkResult } from '../../session-replay/fork-run';
import { ResumeRunCommand } from '../../session-replay/commands/resume-run.command';
import { DrivenElsewhereError, parsePinChange } from '../../session-replay/resume-run';
import { contextOf, replayRun } from '../../session-replay/replay';
import { transcript } from '../../session-replay/transcript';
import { loadRunHistory } from '../../team/runs/run-history';
import type { CliContext } from '../cli-context';
import { driveHere, resumeWhenFree } from '../drive-here';
import { CliError, EXIT } from '../exit-codes';
import { flagFor, refusedInFlags, type FlagOfField } from '../flag-messages';
import { cliIdentity, int } from '../options';

/** `triad replay`, `resume` and `fork`: a run rebuilt from its events, continued, or branched. */
export function addReplayCommands(program: Command, ctx: CliContext): void {
  const { output, withApp, print } = ctx;
  program
    .command('replay')
    .description("rebuild a run's context from its events and print a turn-by-turn transcript")
    .argument('<runId>')
    .option('--revision <n>', "stop at this revision of the run's stream", int('--revision', 0, Number.MAX_SAFE_INTEGER))
    .option('--json', 'print the rebuilt context as JSON')
    .action(async (runId: string, opts) => {
      await withApp(async (app) => {
        const store = app.get<EventStore>(EVENT_STORE);
        const history = await loadRunHistory(store, runId, opts.revision);
        if (history.length === 0) throw new CliError(`run ${runId} not found`, EXIT.notFound);
        const { state, completeness } = replayRun(history, runId, opts.revision);
        const context = contextOf(state, completeness);
        print(opts.json, context, () => transcript(history, context, opts.revision));
      });
    });

  program
    .command('resume')
    .description('resume a suspended or crashed run and drive it here (when this process matches its pin); --model/--endpoint re-pin it first')
    .argument('<runId>')
    .option('--model <role=model...>', "re-pin a role's model, e.g. executor=claude-opus-4-5 (repeatable)")
    .option('--endpoint <url>', 're-pin every role to this base URL (its scheme, host and port), or offline:')
    .option('--follow', 'show events as they happen')
    .option('--as <user>', 'act as this user')
    .option('--json', 'print JSON')
    .action(async (runId: string, opts) => {
      const models: Record<string, string> = {};
      for (const pair of (opts.model ?? []) as string[]) {
        const i = pair.indexOf('=');
        if (i <= 0) throw new CliError(`--model expects role=model, got '${pair}'`, EXIT.usage);
        models[pair.slice(0, i)] = pair.slice(i + 1);
      }
      // Checked before the store is opened: bad input writes nothing.
      const repin = await refusedInFlags(RESUME_FLAGS, () => parsePinChange({ ...(opts.model ? { models } : {}), ...(opts.endpoint !== undefined ? { endpoint: opts.endpoint } : {}) }));
      process.exitCode = await withApp((app) =>
        driveHere(ctx, app, runId, {
          follow: opts.follow,
          json: opts.json,
          blankLine: true,
          // A lease another process holds (it drives the run, or it died and the lease has not
          // lapsed yet): waited for, then resumed as asked.
          before: () =>
            resumeWhenFree(ctx, app, runId, () => refusedInFlags(RESUME_FLAGS, () => app.get(CommandBus).execute(new ResumeRunCommand(runId, cliIdentity(opts.as), repin))), (err) => err instanceof DrivenElsewhereError),
        }),
      );
    });

  program
    .command('fork')
    .description('start a new run from run X at turn N, optionally with another model or prompt')
    .argument('<runId>')
    .requiredOption('--turn <n>', 'fork after this many model turns', int('--turn', 0, 10_000_000))
    .option('--model <model>', 'model for every role of the fork')
    .option('--role-model <role=model...>', 'model for one role, e.g. executor=claude-opus-4-5')
    .option('--role-prompt <role=prompt...>', 'system prompt for one role')
    .option('--follow', 'drive the fork here and show events as they happen')
    .option('--as <user>', 'act as this user')
    .option('--json', 'print JSON')
    .action(async (runId: string, opts) => {
      const team: Record<string, { model?: string; systemPrompt?: string }> = {};
      const set = (role: string, key: 'model' | 'systemPrompt', value: string) => ((team[role] ??= {})[key] = value);
      if (opts.model) for (const r of ['architect', 'executor', 'reviewer']) set(r, 'model', opts.model);
      for (const pair of (opts.roleModel ?? []) as string[]) {
        const i = pair.indexOf('=');
        if (i <= 0) throw new CliError(`--role-model expects role=model, got '${pair}'`, EXIT.usage);
        set(pair.slice(0, i), 'model', pair.slice(i + 1));
      }
      for (const pair of (opts.rolePrompt ?? []) as string[]) {
        const i = pair.indexOf('=');
        if (i <= 0) throw new CliError(`--role-prompt expects role=prompt, got '${pair}'`, EXIT.usage);
        set(pair.slice(0, i), 'systemPrompt', pair.slice(i + 1));
      }
      process.exitCode = await withApp(async (app) => {
        const overrides = await refusedInFlags(FORK_FLAGS, () => validateOverrides(Object.keys(team).length ? { team } : undefined));
        const result = await refusedInFlags(FORK_FLAGS, () => app.get(CommandBus).execute<ForkRunCommand, ForkResult>(new ForkRunCommand(runId, opts.turn, overrides, cliIdentity(opts.as))));
        if (!opts.json) output.out(`fork ${result.runId} of ${runId} at turn ${opts.turn} (${result.workspaceNote})\n`);
        return driveHere(ctx, app, result.runId, { follow: opts.follow, json: opts.json, result, blankLine: true });
      });
    });
}

/** The bodies' fields as `triad resume` and `triad fork` set them, for their refusals. */
const RESUME_FLAGS: readonly FlagOfField[] = [
  { field: /^models\.(\w+)$/, flag: (m) => `--model ${m[1]}=<model>` },
  flagFor('models', '--model'),
  flagFor('endpoint', '--endpoint'),
];
const FORK_FLAGS: readonly FlagOfField[] = [
  { field: /^overrides\.team\.(\w+)\.model$/, flag: (m) => `--role-model ${m[1]}=<model>` },
  { field: /^overrides\.team\.(\w+)\.systemPrompt$/, flag: (m) => `--role-prompt ${m[1]}=<prompt>` },
  { field: /^overrides\.team\.(\w+)$/, flag: (m) => `--role-model or --role-prompt ${m[1]}=…` },
];
