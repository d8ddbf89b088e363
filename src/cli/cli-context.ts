import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../app.module';
import { ConfigError, loadConfig } from '../config/config';
import { CliLogger, type CliOutput } from './cli-io';
import { Redactor } from '../observability/log-format';
import { CliError, EXIT } from './exit-codes';

/** What every command is given: where it writes, the app for one command, and how it prints a result. */
export interface CliContext {
  readonly output: CliOutput;
  /** Runs `fn` with the app, closed afterwards (see withAppContext). */
  withApp<T>(fn: (app: INestApplicationContext) => Promise<T>): Promise<T>;
  /** `value` as one JSON line with --json, else the human-readable text. */
  print(asJson: boolean, value: unknown, human: () => string): void;
}

/** `json`: the invocation has --json, so the app logs nothing to stderr. */
export function cliContext(output: CliOutput, json: boolean): CliContext {
  return {
    output,
    withApp: (fn) => withAppContext(output, json, fn),
    print: (asJson, value, human) => output.out(asJson ? `${JSON.stringify(value)}\n` : `${human()}\n`),
  };
}

/**
 * The app for one command. Configuration is checked first (exit 2 with its message); an app that
 * cannot start (the store cannot be opened or reached) is exit 1 with one line. When stdout goes
 * away mid-command the app is closed at once, which suspends the runs driven here through the same
 * path as SIGTERM, so `triad resume` or recovery continues them.
 */
async function withAppContext<T>(output: CliOutput, json: boolean, fn: (app: INestApplicationContext) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const logger = new CliLogger(output.io.stderr, json ? [] : ['error', 'warn'], { redactor: Redactor.fromEnv() });
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
  // Nobody reads the output any more: a close that fails has no one to tell, and the process exits.
  const unwatch = output.onStdoutClosed(() => void close().catch(() => undefined));
  try {
    return await fn(app);
  } finally {
    unwatch();
    await close();
  }
}
