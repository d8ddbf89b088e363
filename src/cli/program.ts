import 'reflect-metadata';
import { Command } from 'commander';
import { cliContext } from './cli-context';
import { CliOutput, packageVersion, processIo, type CliIo } from './cli-io';
import { addApprovalsCommands } from './commands/approvals';
import { addBenchCommand } from './commands/bench';
import { addDecisionsCommands } from './commands/decisions';
import { addKeysCommands } from './commands/keys';
import { addMcpCommand } from './commands/mcp';
import { addProjectCommands } from './commands/project';
import { addReplayCommands } from './commands/replay';
import { addReviewCommands } from './commands/review';
import { addRunCommand } from './commands/run';
import { addRunsCommands } from './commands/runs';
import { addServeCommand } from './commands/serve';
import { addStoreCommands } from './commands/store';
import { addWebhooksCommands } from './commands/webhooks';
import { CliError, EXIT, exitCodeOf } from './exit-codes';
import { illFormedCliInput } from './well-formed-args';

export { EXIT, exitCodeOf };
// For the test harness and the benchmarks' servers: the app `triad serve` builds, and what the
// benchmarks observe in it (the driver pool, the store's reads), from the same module graph
// as the CLI (one copy of every class, whichever way the program was loaded).
export { createHttpApp } from '../http/bootstrap';
export { DriverPool } from '../team/dispatch/driver-pool';
export { EVENT_STORE } from '../events/event-store/event-store.port';
export { illFormedCliInput };

/** Commander's messages (unknown command, missing argument...) as one `triad: ...` line. */
const oneLine = (message: string) => `triad: ${message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ').trim()}\n`;

/** The `triad` program: one file per command group under commands/, added in the order `--help` lists them. */
export function buildProgram(output: CliOutput = new CliOutput(processIo()), json = false): Command {
  const ctx = cliContext(output, json);
  const program = new Command();
  program
    .name('triad')
    .description('Event-sourced orchestrator for teams of LLM agents (Architect, Executor, Reviewer).')
    .version(packageVersion(), '-V, --version', 'print the version')
    .configureOutput({ writeOut: (s) => output.out(s), writeErr: (s) => output.err(s), outputError: (s, write) => write(oneLine(s)) })
    .allowExcessArguments(false)
    .exitOverride();

  addServeCommand(program, ctx);
  addRunCommand(program, ctx);
  addRunsCommands(program, ctx);
  addProjectCommands(program, ctx);
  addReviewCommands(program, ctx);
  addKeysCommands(program, ctx);
  addReplayCommands(program, ctx);
  addDecisionsCommands(program, ctx);
  addApprovalsCommands(program, ctx);
  addStoreCommands(program, ctx);
  addMcpCommand(program, ctx);
  addWebhooksCommands(program, ctx);
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
