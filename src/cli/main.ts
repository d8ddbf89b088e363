#!/usr/bin/env node
import 'reflect-metadata';
import { HttpException, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { Command, Option } from 'commander';
import { instanceToPlain } from 'class-transformer';
import { AppModule } from '../app.module';
import { ConfigError, describeConfig, loadConfig } from '../config/config';
import { EVENT_STORE, type EventStore } from '../events/event-store.port';
import { createHttpApp, VALIDATION_PIPE } from '../http/bootstrap';
import { CancelRunCommand } from '../team/commands/cancel-run.command';
import { LaunchRunCommand } from '../team/commands/launch-run.command';
import { TERMINAL_STATUSES, type RunStatus } from '../team/domain/run-events';
import { type LaunchResult, type LaunchRunInput } from '../team/launch';
import { LiveRunBus } from '../team/live-run-bus';
import { MODEL_PROVIDER, type ModelProvider } from '../team/models/model.port';
import { GetRunQuery, ListRunsQuery } from '../team/queries/run.queries';
import { RunSupervisor } from '../team/run-supervisor';
import type { RunSummary } from '../team/run-summary';
import { LaunchRunDto } from '../team/http/launch-run.dto';
import { describeEvent, describeRun } from './format';
import { CliLogger, CliOutput, packageVersion, processIo, type CliIo } from './cli-io';
import { addBenchCommand } from './commands/bench';
import { loadRunHistory } from '../team/run-history';
import { contextOf, replayRun } from '../session-replay/replay';
import { transcript } from '../session-replay/transcript';
import { ResumeRunCommand } from '../session-replay/commands/resume-run.command';
import { ForkRunCommand, validateOverrides, type ForkResult } from '../session-replay/commands/fork-run.command';
import { AddApiKeyCommand, type AddedApiKey } from '../auth/keys/add-api-key.command';
import { countStoredApiKeys } from '../auth/keys/count-stored-api-keys';
import { API_KEYS_STREAM, foldApiKeys, parseKeyRoles, validateKeyName } from '../auth/keys/api-key-events';
import { ApproveReviewCommand, RejectReviewCommand, type DecisionResult } from '../review-gate/commands/decide-review.command';
import { parseReviewId } from '../team/domain/review-id';
import { RunsProjection } from '../team/runs.projection';
import { createWriteStream, openSync } from 'node:fs';
import { writeExport } from '../review-gate/decision-log/decision-export';
import { InvalidDecisionFilterError, parseDecisionFilter } from '../review-gate/decision-log/decision-filter';
import { DecisionLogService } from '../review-gate/decision-log/decision-log.providers';
import { SINCE_HASH } from '../review-gate/decision-log/decision-log';
import { DECISION_KINDS, DECISION_OUTCOMES } from '../review-gate/decision-log/decision-record';
import { describeVerification } from '../review-gate/decision-log/describe-verification';
import { ApproveToolCallCommand, RejectToolCallCommand, type ApprovalResult } from '../team/approvals/commands/decide-approval.command';
import { parseApprovalId } from '../team/approvals/approval-id';
import { cliIdentity, int } from './options';
import { illFormedCliInput } from './well-formed-args';
import { CliError, EXIT, exitCodeOf } from './exit-codes';

export { EXIT, exitCodeOf };

/** A run that completed or waits for a human (review or tool approval) is a success for the CLI. */
const WAITING_OR_DONE = new Set<string>(['completed', 'awaiting_review', 'awaiting_approval']);
const WAITING_FOR_A_HUMAN = new Set<string>(['awaiting_review', 'awaiting_approval']);

/**
 * The app for one command. Configuration is checked first (exit 2 with its message); an app that
 * cannot start (the store cannot be opened or reached) is exit 1 with one line. When stdout goes
 * away mid-command the app is closed at once, which suspends the runs driven here through the same
 * path as SIGTERM, so `triad resume` or recovery continues them.
 */
async function withAppContext<T>(output: CliOutput, json: boolean, fn: (app: INestApplicationContext) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const logger = new CliLogger(output.io.stderr, json ? [] : ['error', 'warn']);
  let app: INestApplicationContext;
  try {
    app = await NestFactory.createApplicationContext(AppModule, { logger, abortOnError: false });
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new CliError(`cannot open the ${config.store} store: ${(err as Error).message}`, EXIT.failed);
  }
  app.enableShutdownHooks();
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= app.close());
  const unwatch = output.onStdoutClosed(() => void close().catch(() => undefined));
  try {
    return await fn(app);
  } finally {
    unwatch();
    await close();
  }
}

function providerLine(model: ModelProvider): string {
  return model.name === 'offline'
    ? 'model: offline — the built-in deterministic offline model (no network, no API key)'
    : `model: ${model.name}`;
}

async function validateLaunch(body: unknown): Promise<LaunchRunDto> {
  try {
    return (await VALIDATION_PIPE.transform(body, { type: 'body', metatype: LaunchRunDto })) as LaunchRunDto;
  } catch (err) {
    if (err instanceof HttpException) {
      const msg = (err.getResponse() as { message?: string | string[] }).message;
      throw new CliError(Array.isArray(msg) ? msg.join('; ') : String(msg ?? err.message), EXIT.usage);
    }
    throw err;
  }
}

/** Prints a run's events as the local driver appends them (for --follow). */
function followRun(output: CliOutput, app: INestApplicationContext, runId: string, opts: { follow?: boolean; json?: boolean }) {
  return app.get(LiveRunBus).of(runId).subscribe((item) => {
    if (!opts.follow || item.kind !== 'events') return;
    for (const e of item.events) {
      if (opts.json) output.out(`${JSON.stringify(e)}\n`);
      else {
        const line = describeEvent(e);
        if (line) output.out(`${line}\n`);
      }
    }
  });
}

/** Commander's messages (unknown command, missing argument...) as one `triad: ...` line. */
const oneLine = (message: string) => `triad: ${message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ').trim()}\n`;

export function buildProgram(output: CliOutput = new CliOutput(processIo()), json = false): Command {
  const withApp = <T>(fn: (app: INestApplicationContext) => Promise<T>) => withAppContext(output, json, fn);
  const print = (asJson: boolean, value: unknown, human: () => string) => output.out(asJson ? `${JSON.stringify(value)}\n` : `${human()}\n`);
  const program = new Command();
  program
    .name('triad')
    .description('Event-sourced orchestrator for teams of LLM agents (Architect, Executor, Reviewer).')
    .version(packageVersion(), '-V, --version', 'print the version')
    .configureOutput({ writeOut: (s) => output.out(s), writeErr: (s) => output.err(s), outputError: (s, write) => write(oneLine(s)) })
    .allowExcessArguments(false)
    .exitOverride();

  program
    .command('serve')
    .description('serve the HTTP API (TRIAD_HOST:TRIAD_PORT) and drive runs')
    .action(async () => {
      const config = loadConfig();
      // Keys come from TRIAD_API_KEYS and from the store (`triad keys add`); checked before the app
      // starts, so a server that refuses to start has driven no run.
      if (config.apiKeys.length === 0 && (await countStoredApiKeys(config)) === 0) {
        throw new CliError('no API keys are configured: set TRIAD_API_KEYS=name:role+role:secret or add one with `triad keys add` (see README)', EXIT.usage);
      }
      // Its request and lifecycle logs go to stderr: stdout says where it listens.
      const app = await createHttpApp({ logger: new CliLogger(output.io.stderr, ['error', 'warn', 'log']) });
      await app.listen(config.port, config.host);
      const model = app.get<ModelProvider>(MODEL_PROVIDER);
      const summary = describeConfig(config);
      output.out(
        `triad listening on http://${config.host}:${config.port} — store ${summary.store}, data ${summary.dataDir}, ${providerLine(model)}\n`,
      );
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      await app.close();
    });

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
    .option('--no-human-gate', 'waive the human review gate (recorded in the run)')
    .option('--idempotency-key <key>', 'launch at most once per key')
    .option('--as <user>', 'launch as this user (default: TRIAD_USER or the OS account)')
    .option('--json', 'print JSON lines')
    .action(async (goal: string, opts) => {
      const identity = cliIdentity(opts.as);
      const body = await validateLaunch({
        goal,
        acceptanceCriteria: opts.criteria ?? [],
        ...(opts.maxIterations !== undefined ? { maxIterations: opts.maxIterations } : {}),
        ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
        ...(opts.budget !== undefined ? { budget: { totalTokens: opts.budget } } : {}),
        ...(opts.model ? { team: { architect: { model: opts.model }, executor: { model: opts.model }, reviewer: { model: opts.model } } } : {}),
        ...(opts.humanGate === false ? { reviewPolicy: { humanGate: false } } : {}),
        ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}),
      });
      const exit = await withApp(async (app) => {
        const model = app.get<ModelProvider>(MODEL_PROVIDER);
        if (!opts.json) output.err(`${providerLine(model)}\n`);
        const result = await app.get(CommandBus).execute<LaunchRunCommand, LaunchResult>(new LaunchRunCommand(instanceToPlain(body) as LaunchRunInput, identity));
        if (!opts.json) output.out(`run ${result.runId} accepted at ${result.acceptedAt}\n`);
        const live = followRun(output, app, result.runId, opts);
        try {
          await app.get(RunSupervisor).start(result.runId);
        } finally {
          live.unsubscribe();
        }
        const run = await app.get(QueryBus).execute<GetRunQuery, RunSummary>(new GetRunQuery(result.runId));
        print(opts.json, run, () => `\n${describeRun(run)}`);
        return WAITING_OR_DONE.has(run.status) ? EXIT.ok : EXIT.failed;
      });
      process.exitCode = exit;
    });

  const runs = program.command('runs').description('list, show, wait for and cancel runs');
  runs
    .command('list', { isDefault: true })
    .option('--status <status>', 'only runs with this status')
    .option('--limit <n>', 'at most this many', int('--limit', 1, 10000), 50)
    .option('--json', 'print JSON')
    .action(async (opts) => {
      await withApp(async (app) => {
        const list = await app.get(QueryBus).execute<ListRunsQuery, RunSummary[]>(new ListRunsQuery(opts.status as RunStatus | undefined, opts.limit));
        print(opts.json, list, () =>
          list.length === 0
            ? 'no runs'
            : list.map((r) => `${r.runId}  ${r.status.padEnd(15)} ${(r.terminationReason ?? '').padEnd(16)} ${r.startedAt}  ${r.goal.slice(0, 50)}`).join('\n'),
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

  const review = program.command('review').description('the human review gate: list pending reviews, approve or reject one');
  const reviewReason = (raw: string): string => {
    const reason = String(raw ?? '').trim();
    if (reason === '' || reason.length > 4000) throw new CliError('--reason must be 1 to 4000 characters, not blank', EXIT.usage);
    return reason;
  };
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
    .command('approve')
    .description('approve the work: the run ends COMPLETED')
    .argument('<reviewId>')
    .requiredOption('--reason <text>', 'why (kept in the decision log)')
    .option('--as <user>', 'decide as this user (default: TRIAD_USER or the OS account)')
    .option('--json', 'print JSON')
    .action(async (reviewId: string, opts) => {
      const decider = { id: cliIdentity(opts.as).id, kind: 'human' as const };
      const reason = reviewReason(opts.reason);
      await withApp(async (app) => {
        const result = await app.get(CommandBus).execute<ApproveReviewCommand, DecisionResult>(new ApproveReviewCommand(reviewId, decider, reason));
        print(opts.json, result, () => `review ${reviewId} approved: the run is ${result.runStatus}`);
      });
    });
  review
    .command('reject')
    .description('reject the work: back to the executor while iterations remain, else the run ends REJECTED')
    .argument('<reviewId>')
    .requiredOption('--reason <text>', 'why (sent to the executor, kept in the decision log)')
    .option('--no-rework', 'end the run REJECTED at once instead of another iteration')
    .option('--as <user>', 'decide as this user (default: TRIAD_USER or the OS account)')
    .option('--json', 'print JSON')
    .action(async (reviewId: string, opts) => {
      const decider = { id: cliIdentity(opts.as).id, kind: 'human' as const };
      const reason = reviewReason(opts.reason);
      await withApp(async (app) => {
        const result = await app.get(CommandBus).execute<RejectReviewCommand, DecisionResult>(new RejectReviewCommand(reviewId, decider, reason, opts.rework !== false));
        if (result.runStatus !== 'executing') {
          print(opts.json, result, () => `review ${reviewId} rejected: the run is ${result.runStatus}`);
          return;
        }
        // Like `triad run`: this process drives the rework until the run ends or waits for review again.
        const runId = parseReviewId(reviewId)!.runId;
        if (!opts.json) output.out(`review ${reviewId} rejected: the executor reworks it\n`);
        await app.get(RunSupervisor).start(runId);
        const run = await app.get(QueryBus).execute<GetRunQuery, RunSummary>(new GetRunQuery(runId));
        print(opts.json, { ...result, run }, () => describeRun(run));
      });
    });

  const keys = program.command('keys').description('API keys kept in the event store (only their sha256 is stored)');
  keys
    .command('add')
    .description('add a key (or replace the stored key of that name) and print its secret once')
    .argument('<name>', 'the key holder: requests with it act as user:<name>')
    .requiredOption('--roles <roles>', 'operator, reviewer, auditor, admin, joined by + or ,')
    .option('--as <user>', 'record as added by this user (default: TRIAD_USER or the OS account)')
    .option('--json', 'print JSON')
    .action(async (name: string, opts) => {
      const addedBy = cliIdentity(opts.as).id;
      validateKeyName(name);
      const roles = parseKeyRoles(opts.roles);
      await withApp(async (app) => {
        const added = await app.get(CommandBus).execute<AddApiKeyCommand, AddedApiKey>(new AddApiKeyCommand(name, roles, addedBy));
        print(opts.json, added, () =>
          `${added.replaced ? 'replaced' : 'added'} key '${added.name}' (${added.roles.join('+')})\nsecret (shown only now): ${added.secret}`,
        );
      });
    });
  keys
    .command('list')
    .description('stored keys: names and roles, never secrets')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      await withApp(async (app) => {
        const state = foldApiKeys(await app.get<EventStore>(EVENT_STORE).readStream(API_KEYS_STREAM));
        const list = [...state.keys.values()].map(({ name, roles, addedBy, at }) => ({ name, roles, addedBy, at }));
        print(opts.json, list, () => (list.length === 0 ? 'no stored keys' : list.map((k) => `${k.name}  ${k.roles.join('+')}  added by ${k.addedBy} at ${k.at}`).join('\n')));
      });
    });

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
    .description('resume a suspended or crashed run and drive it here')
    .argument('<runId>')
    .option('--follow', 'show events as they happen')
    .option('--as <user>', 'act as this user')
    .option('--json', 'print JSON')
    .action(async (runId: string, opts) => {
      process.exitCode = await withApp(async (app) => {
        const live = followRun(output, app, runId, opts);
        try {
          await app.get(CommandBus).execute(new ResumeRunCommand(runId, cliIdentity(opts.as)));
          await app.get(RunSupervisor).start(runId);
        } finally {
          live.unsubscribe();
        }
        const run = await app.get(QueryBus).execute<GetRunQuery, RunSummary>(new GetRunQuery(runId));
        print(opts.json, run, () => `\n${describeRun(run)}`);
        return WAITING_OR_DONE.has(run.status) ? EXIT.ok : EXIT.failed;
      });
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
        const overrides = validateOverrides(Object.keys(team).length ? { team } : undefined);
        const result = await app.get(CommandBus).execute<ForkRunCommand, ForkResult>(new ForkRunCommand(runId, opts.turn, overrides, cliIdentity(opts.as)));
        if (!opts.json) output.out(`fork ${result.runId} of ${runId} at turn ${opts.turn} (${result.workspaceNote})\n`);
        const live = followRun(output, app, result.runId, opts);
        try {
          await app.get(RunSupervisor).start(result.runId);
        } finally {
          live.unsubscribe();
        }
        const run = await app.get(QueryBus).execute<GetRunQuery, RunSummary>(new GetRunQuery(result.runId));
        print(opts.json, { ...result, run }, () => `\n${describeRun(run)}`);
        return WAITING_OR_DONE.has(run.status) ? EXIT.ok : EXIT.failed;
      });
    });

  const decisions = program.command('decisions').description('the tamper-evident decision log: list, verify, export');
  const decisionFilter = (opts: { kind?: string; run?: string; decider?: string; outcome?: string; from?: string; to?: string }) => {
    try {
      return parseDecisionFilter({ kind: opts.kind, runId: opts.run, decider: opts.decider, outcome: opts.outcome, from: opts.from, to: opts.to });
    } catch (err) {
      throw err instanceof InvalidDecisionFilterError ? new CliError(err.message, EXIT.usage) : err;
    }
  };
  const withDecisionFilters = (cmd: Command) =>
    cmd
      .addOption(new Option('--kind <kind>', 'only review decisions or tool approvals').choices(DECISION_KINDS))
      .option('--run <runId>', 'only decisions of this run')
      .option('--decider <identity>', 'only decisions by this decider (user:<name> or system)')
      .addOption(new Option('--outcome <outcome>', 'only this outcome').choices(DECISION_OUTCOMES))
      .option('--from <time>', 'decided at or after (ISO 8601 date or date-time with a zone)')
      .option('--to <time>', 'decided at or before (ISO 8601 date or date-time with a zone)');
  withDecisionFilters(decisions.command('list', { isDefault: true }).description('decisions in log order (seq)'))
    .option('--limit <n>', 'at most this many', int('--limit', 1, 10_000_000), 1000)
    .option('--json', 'print JSON')
    .action(async (opts) => {
      const filter = decisionFilter(opts);
      await withApp(async (app) => {
        const list = await app.get(DecisionLogService).list(filter, { limit: opts.limit });
        print(opts.json, list, () =>
          list.length === 0
            ? 'no decisions'
            : list
                .map((d) => `#${d.seq}  ${d.decidedAt}  ${d.outcome.padEnd(9)} ${d.decider.padEnd(20)} ${d.reviewId ?? `${d.approvalId} ${d.toolName}`}  ${d.reason.replace(/\s+/g, ' ').slice(0, 60)}`)
                .join('\n'),
        );
      });
    });
  decisions
    .command('verify')
    .description('check the hash chain against the event store; exit 1 when a record was altered, removed, reordered or inserted')
    .option('--since <hash>', 'also prove the log still extends this head (the hash `decisions head` gave earlier)')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      if (opts.since !== undefined && !SINCE_HASH.test(opts.since)) throw new CliError('--since must be a record hash: 64 lowercase hex characters', EXIT.usage);
      process.exitCode = await withApp(async (app) => {
        const result = await app.get(DecisionLogService).verify({ since: opts.since });
        print(opts.json, result, () => describeVerification(result));
        return result.ok ? EXIT.ok : EXIT.failed;
      });
    });
  decisions
    .command('head')
    .description('seq and hash of the last record: keep the hash to prove later (verify --since) that no record was removed')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      await withApp(async (app) => {
        const head = await app.get(DecisionLogService).head();
        print(opts.json, head, () => `${head.seq} ${head.hash}`);
      });
    });
  withDecisionFilters(decisions.command('export').description('every decision as NDJSON (default) or CSV'))
    .addOption(new Option('--format <format>', 'ndjson | csv').choices(['ndjson', 'csv']).default('ndjson'))
    .option('--out <file>', 'write to this file (default: stdout)')
    .action(async (opts) => {
      const filter = decisionFilter(opts);
      await withApp(async (app) => {
        const records = await app.get(DecisionLogService).export(filter);
        if (!opts.out) {
          await writeExport(records, opts.format, output.io.stdout);
          return;
        }
        // Opened here so a bad path fails at once, with its error.
        const file = createWriteStream('', { fd: openSync(opts.out, 'w') });
        const closed = new Promise<void>((resolve, reject) => file.once('close', resolve).once('error', reject));
        closed.catch(() => undefined);
        const n = await writeExport(records, opts.format, file);
        file.end();
        await closed;
        output.err(`${n} decision(s) written to ${opts.out}\n`);
      });
    });

  const approvals = program.command('approvals').description('risky tool calls waiting for a human: list, approve or reject one');
  const approvalReason = (raw: string | undefined, required: boolean): string | undefined => {
    const reason = String(raw ?? '').trim();
    if ((required || raw !== undefined) && (reason === '' || reason.length > 4000)) throw new CliError('--reason must be 1 to 4000 characters, not blank', EXIT.usage);
    return reason || undefined;
  };
  /** After a decision that frees the run: drive it here, like `triad review reject`, until it ends or waits again. */
  const afterApprovalDecision = async (app: INestApplicationContext, result: ApprovalResult, json: boolean, verb: string) => {
    if (result.runStatus === 'awaiting_approval' || TERMINAL_STATUSES.has(result.runStatus as RunStatus)) {
      print(json, result, () => `approval ${result.approvalId} ${verb}: the run is ${result.runStatus}`);
      return;
    }
    if (!json) output.out(`approval ${result.approvalId} ${verb}: the run continues\n`);
    await app.get(RunSupervisor).start(result.runId);
    const run = await app.get(QueryBus).execute<GetRunQuery, RunSummary>(new GetRunQuery(result.runId));
    print(json, { ...result, run }, () => describeRun(run));
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
  approvals
    .command('approve')
    .description('let the tool call run')
    .argument('<approvalId>')
    .option('--reason <text>', 'why (recorded in the run)')
    .option('--as <user>', 'decide as this user (default: TRIAD_USER or the OS account)')
    .option('--json', 'print JSON')
    .action(async (approvalId: string, opts) => {
      const approver = { id: cliIdentity(opts.as).id, kind: 'human' as const };
      const reason = approvalReason(opts.reason, false) ?? 'approved';
      if (!parseApprovalId(approvalId)) throw new CliError(`approval ${approvalId} not found`, EXIT.notFound);
      await withApp(async (app) => {
        const result = await app.get(CommandBus).execute<ApproveToolCallCommand, ApprovalResult>(new ApproveToolCallCommand(approvalId, approver, reason));
        await afterApprovalDecision(app, result, opts.json, 'approved');
      });
    });
  approvals
    .command('reject')
    .description('refuse the tool call: the agent is told "rejected by user: <reason>"')
    .argument('<approvalId>')
    .requiredOption('--reason <text>', 'why (sent to the agent, recorded in the run)')
    .option('--as <user>', 'decide as this user (default: TRIAD_USER or the OS account)')
    .option('--json', 'print JSON')
    .action(async (approvalId: string, opts) => {
      const approver = { id: cliIdentity(opts.as).id, kind: 'human' as const };
      const reason = approvalReason(opts.reason, true)!;
      if (!parseApprovalId(approvalId)) throw new CliError(`approval ${approvalId} not found`, EXIT.notFound);
      await withApp(async (app) => {
        const result = await app.get(CommandBus).execute<RejectToolCallCommand, ApprovalResult>(new RejectToolCallCommand(approvalId, approver, reason));
        await afterApprovalDecision(app, result, opts.json, 'rejected');
      });
    });

  addBenchCommand(program);

  refuseUnknownSubcommands(program);
  return program;
}

/**
 * `triad <argv>` as one call: what the installed program runs, and what tests run in-process with
 * streams and an environment of their own. Resolves to the exit code. Calls must not overlap in
 * one thread: the environment and `process.exitCode` (how commands report) are the thread's.
 */
export async function runCli(argv: string[], io: CliIo = processIo()): Promise<number> {
  const saved = { env: process.env, exitCode: process.exitCode };
  if (io.env) process.env = io.env;
  process.exitCode = undefined;
  const output = new CliOutput(io);
  try {
    const illFormed = illFormedCliInput(['node', 'triad', ...argv]);
    if (illFormed !== undefined) {
      output.err(`triad: ${illFormed}\n`);
      return EXIT.usage;
    }
    await buildProgram(output, argv.includes('--json')).parseAsync(argv, { from: 'user' });
    return output.stdoutClosed ? EXIT.brokenPipe : Number(process.exitCode ?? EXIT.ok);
  } catch (err) {
    // The reader went away: nothing more to say to anyone.
    if (output.stdoutClosed) return EXIT.brokenPipe;
    const e = err as { code?: string; exitCode?: number };
    if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') return EXIT.ok;
    // Commander has printed its one line already.
    if (e.code?.startsWith('commander.')) return EXIT.usage;
    output.err(`triad: ${(err as Error).message.split('\n')[0]}\n`);
    return exitCodeOf(err);
  } finally {
    output.dispose();
    process.env = saved.env;
    process.exitCode = saved.exitCode;
  }
}

/**
 * `triad runs cancle <id>` must not run `runs list` (the group's default): a word that names no
 * subcommand is refused, exit 2, at every level.
 */
function refuseUnknownSubcommands(cmd: Command, path: string[] = []): void {
  for (const sub of cmd.commands) refuseUnknownSubcommands(sub, [...path, sub.name()]);
  if (cmd.commands.length === 0 || path.length === 0) return;
  cmd.hook('preSubcommand', (group, sub) => {
    const word = group.args[0];
    if (word !== undefined && !word.startsWith('-') && word !== sub.name() && !sub.aliases().includes(word)) {
      const known = group.commands.map((c) => c.name()).join(', ');
      throw new CliError(`unknown command 'triad ${path.join(' ')} ${word}' (one of: ${known})`, EXIT.usage);
    }
  });
}

if (require.main === module) {
  // The raw bytes of the arguments are only readable for the real process (see well-formed-args).
  const illFormed = illFormedCliInput(process.argv);
  if (illFormed !== undefined) {
    process.stderr.write(`triad: ${illFormed}\n`);
    process.exitCode = EXIT.usage;
  } else {
    void runCli(process.argv.slice(2)).then((code) => (process.exitCode = code));
  }
}

export { EVENT_STORE };
export type { EventStore };
