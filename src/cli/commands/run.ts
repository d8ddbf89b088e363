import { CommandBus } from '@nestjs/cqrs';
import { instanceToPlain } from 'class-transformer';
import type { Command } from 'commander';
import { LaunchRunCommand } from '../../team/commands/launch-run.command';
import { LaunchRunDto } from '../../team/http/launch-run.dto';
import type { LaunchResult, LaunchRunInput } from '../../team/commands/launch';
import { MODEL_PROVIDER, type ModelProvider } from '../../team/models/model.port';
import type { CliContext } from '../cli-context';
import { driveHere } from '../drive-here';
import { CliError, EXIT } from '../exit-codes';
import { providerLine } from '../format';
import { flagFor, refusedInFlags, type FlagOfField } from '../flag-messages';
import { cliIdentity, int } from '../options';
import { validateAsFlags } from '../validate-body';

/** `triad run <goal>`: launch a run and drive it here. */
export function addRunCommand(program: Command, ctx: CliContext): void {
  const { output } = ctx;
  program
    .command('run')
    .description('launch a team run and drive it here until it ends or waits for a human review')
    .argument('<goal>', 'what the team should achieve')
    .option('-c, --criteria <criterion...>', 'acceptance criteria (one or more)')
    .option('-f, --follow', 'show phases, turns, tool calls and usage as they happen')
    .option('--max-iterations <n>', 'maximum executor/reviewer iterations', int('--max-iterations', 1, 50))
    .option('--timeout-ms <ms>', 'run timeout in milliseconds', int('--timeout-ms', 1000, 7 * 24 * 3600 * 1000))
    .option('--budget <tokens>', 'total token budget', int('--budget', 1, 1_000_000_000))
    .option('--model <model>', 'model for every role')
    .option('--thinking <role=tokens...>', 'extended thinking budget per role (Anthropic), e.g. executor=4096')
    .option('--loop <role=strategy...>', 'loop strategy per role: react, plan_execute, hybrid or auto, e.g. executor=hybrid')
    .option('--provider <role=provider...>', 'model provider per role: anthropic, openai or offline, e.g. executor=openai (default: TRIAD_MODEL)')
    .option('--no-human-gate', 'waive the human review gate (recorded in the run)')
    .option('--idempotency-key <key>', 'launch at most once per key')
    .option('--as <user>', 'launch as this user (default: TRIAD_USER or the OS account)')
    .option('--json', 'print JSON lines')
    .action(async (goal: string, opts) => {
      const identity = cliIdentity(opts.as);
      const body = await validateLaunch({
        goal,
        ...(opts.criteria !== undefined ? { acceptanceCriteria: opts.criteria } : {}),
        ...(opts.maxIterations !== undefined ? { maxIterations: opts.maxIterations } : {}),
        ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
        ...(opts.budget !== undefined ? { budget: { totalTokens: opts.budget } } : {}),
        ...teamOptions(opts.model, opts.thinking, opts.loop, opts.provider),
        ...(opts.humanGate === false ? { reviewPolicy: { humanGate: false } } : {}),
        ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}),
      });
      process.exitCode = await ctx.withApp(async (app) => {
        const model = app.get<ModelProvider>(MODEL_PROVIDER);
        // Said once the launch is accepted: a refused launch (a model not served here) is one line.
        const result = await refusedInFlags(RUN_FLAGS, () => app.get(CommandBus).execute<LaunchRunCommand, LaunchResult>(new LaunchRunCommand(instanceToPlain(body) as LaunchRunInput, identity)));
        if (!opts.json) output.err(`${providerLine(model)}\n`);
        if (!opts.json) output.out(`run ${result.runId} accepted at ${result.acceptedAt}\n`);
        return driveHere(ctx, app, result.runId, { follow: opts.follow, json: opts.json, blankLine: true });
      });
    });
}

/** The team config of `--model`, `--thinking role=tokens`, `--loop role=strategy` and `--provider role=provider` (checked by the DTO like the API's). */
function teamOptions(
  model: string | undefined,
  thinking: string[] | undefined,
  loop: string[] | undefined,
  provider: string[] | undefined,
): { team?: Record<string, Record<string, unknown>> } {
  const team: Record<string, Record<string, unknown>> = {};
  if (model) for (const role of ['architect', 'executor', 'reviewer']) team[role] = { model };
  for (const pair of thinking ?? []) {
    const match = /^(architect|executor|reviewer)=(\d+)$/.exec(pair);
    if (!match) throw new CliError(`--thinking takes role=tokens (architect, executor or reviewer), got '${pair}'`, EXIT.usage);
    (team[match[1]] ??= {}).thinking = { budgetTokens: Number(match[2]) };
  }
  for (const pair of loop ?? []) {
    const match = /^(architect|executor|reviewer)=(.+)$/.exec(pair);
    if (!match) throw new CliError(`--loop takes role=strategy (architect, executor or reviewer), got '${pair}'`, EXIT.usage);
    (team[match[1]] ??= {}).loop = { strategy: match[2] };
  }
  for (const pair of provider ?? []) {
    const match = /^(architect|executor|reviewer)=(.+)$/.exec(pair);
    if (!match) throw new CliError(`--provider takes role=provider (architect, executor or reviewer), got '${pair}'`, EXIT.usage);
    (team[match[1]] ??= {}).provider = match[2];
  }
  return Object.keys(team).length > 0 ? { team } : {};
}

/** The body's fields as `triad run` sets them, for its refusals. */
const RUN_FLAGS: readonly FlagOfField[] = [
  flagFor('goal', 'the goal'),
  flagFor('acceptanceCriteria', '--criteria', 'one or more acceptance criteria'),
  flagFor('maxIterations', '--max-iterations'),
  flagFor('timeoutMs', '--timeout-ms'),
  flagFor('budget.totalTokens', '--budget'),
  { field: /^team\.(\w+)\.model$/, flag: () => '--model' },
  { field: /^team\.(\w+)\.thinking\.budgetTokens$/, flag: (m) => `--thinking ${m[1]}=<tokens>` },
  { field: /^team\.(\w+)\.loop\.strategy$/, flag: (m) => `--loop ${m[1]}=<strategy>` },
  flagFor('idempotencyKey', '--idempotency-key'),
];

/** The same checks as `POST /v1/runs` (the DTO and its pipe); a refusal is exit 2 naming the flags. */
function validateLaunch(body: unknown): Promise<LaunchRunDto> {
  return validateAsFlags(LaunchRunDto, body, RUN_FLAGS);
}
