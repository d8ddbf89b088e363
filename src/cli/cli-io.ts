import type { LoggerService, LogLevel } from '@nestjs/common';
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
 * terminal, without stack traces. Errors the CLI reports itself (the app failing to start) are left
 * to its one `triad: <message>` line.
 */
export class CliLogger implements LoggerService {
  constructor(
    private readonly stderr: CliIo['stderr'],
    private readonly levels: LogLevel[],
  ) {}

  log(message: unknown, context?: string): void {
    this.write('log', message, context);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest.length > 0 ? rest[rest.length - 1] : undefined);
  }
  warn(message: unknown, context?: string): void {
    this.write('warn', message, context);
  }
  debug(message: unknown, context?: string): void {
    this.write('debug', message, context);
  }
  verbose(message: unknown, context?: string): void {
    this.write('verbose', message, context);
  }
  fatal(message: unknown, context?: string): void {
    this.write('fatal', message, context);
  }

  private write(level: LogLevel, message: unknown, context: unknown): void {
    if (!this.levels.includes(level) || context === 'ExceptionHandler') return;
    const text = message instanceof Error ? message.message : typeof message === 'string' ? message : JSON.stringify(message);
    const tag = this.stderr.isTTY ? styleText(LEVEL_STYLE[level], level.toUpperCase()) : level.toUpperCase();
    this.stderr.write(`triad ${tag}${typeof context === 'string' && context ? ` [${context}]` : ''} ${text}\n`);
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
