import type { LoggerService, LogLevel } from '@nestjs/common';
import { effectiveLevel, jsonLine, type LogFields, type LogFormat, type Redactor } from '../observability/log-format';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Writable } from 'node:stream';
import { styleText } from 'node:util';

/**
 * Where one CLI invocation reads its environment and writes its output. The compiled program uses
 * the process's own streams; tests run the same program in-process with streams of their own.
 */
export interface CliIo {
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean };
  /** The environment the invocation sees (default: the process's). */
  env?: NodeJS.ProcessEnv;
}

export const processIo = (): CliIo => ({ stdout: process.stdout, stderr: process.stderr });

/**
 * One invocation's output: stdout stops at the first write error (EPIPE: the reader went away, as
 * with `triad run --follow | head`); whoever drives a run here is told, so it can suspend the run
 * instead of dying with it. Later writes are dropped, never thrown.
 */
export class CliOutput {
  private closed = false;
  private readonly listeners = new Set<() => void>();
  private readonly onError = () => {
    if (this.closed) return;
    this.closed = true;
    for (const fn of this.listeners) fn();
  };

  constructor(readonly io: CliIo) {
    io.stdout.on('error', this.onError);
  }

  get stdoutClosed(): boolean {
    return this.closed;
  }

  out(text: string): void {
    if (!this.closed) this.io.stdout.write(text);
  }

  err(text: string): void {
    this.io.stderr.write(text);
  }

  /** Calls `fn` once stdout is gone; returns the unsubscription. */
  onStdoutClosed(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  dispose(): void {
    this.listeners.clear();
    // Kept while the stream lives: a late EPIPE must not become an uncaught error.
    if (this.io.stdout !== process.stdout) this.io.stdout.off('error', this.onError);
  }
}

const LEVEL_STYLE: Record<LogLevel, Parameters<typeof styleText>[0]> = {
  fatal: 'red',
  error: 'red',
  warn: 'yellow',
  log: 'green',
  debug: 'magenta',
  verbose: 'cyan',
};

/**
 * Nest's own logger writes `log` and `warn` to stdout and colours unconditionally; the CLI's stdout
 * is its output (JSON with `--json`), so its logs go to stderr, one line each, coloured only on a
 * terminal, without stack traces. With `format: 'json'` (`triad serve` when stderr is not a
 * terminal) each line is a JSON object: `time`, `level`, `context`, `msg`, and the fields a call
 * passed (`runId`, `actor`, `event`…). Every line is redacted (src/observability/log-format.ts).
 * Errors the CLI reports itself (the app failing to start) are left to its one `triad: <message>` line.
 */
export class CliLogger implements LoggerService {
  constructor(
    private readonly stderr: CliIo['stderr'],
    private readonly levels: LogLevel[],
    private readonly options: { format?: LogFormat; redactor?: Redactor; now?: () => Date } = {},
  ) {}

  log(message: unknown, ...rest: unknown[]): void {
    this.write('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, rest);
  }

  private write(level: LogLevel, message: unknown, rest: unknown[]): void {
    // Nest passes the context last; plain objects are fields; an error's stack string is dropped.
    const last = rest[rest.length - 1];
    const context = typeof last === 'string' ? last : undefined;
    const at = effectiveLevel(level, context);
    if (!this.levels.includes(at) || context === 'ExceptionHandler') return;
    const fields: LogFields = {};
    for (const r of rest) if (typeof r === 'object' && r !== null && !Array.isArray(r)) Object.assign(fields, r);
    const text = message instanceof Error ? message.message : typeof message === 'string' ? message : JSON.stringify(message);
    let line: string;
    if (this.options.format === 'json') {
      line = jsonLine({ level: at, context, message: text, fields, time: (this.options.now ?? (() => new Date()))() });
    } else {
      const tag = this.stderr.isTTY ? styleText(LEVEL_STYLE[at], at.toUpperCase()) : at.toUpperCase();
      line = `triad ${tag}${context ? ` [${context}]` : ''} ${text}`;
    }
    this.stderr.write(`${this.options.redactor ? this.options.redactor.redact(line) : line}\n`);
  }
}

/**
 * The folder of package.json nearest above this file: the checkout, or the installed package.
 * Searched for, since this file is compiled to dist/cli/ for the program and to
 * build/bench/src/cli/ for the benchmarks.
 */
export function packageRoot(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return from;
  }
}

/** The version in package.json. */
export function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}
