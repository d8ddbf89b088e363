import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * `triad <args>` run in-process: the compiled program's `runCli` in one worker thread per test file
 * (test/support/cli-worker.js), its streams captured. Same result shape as spawning
 * `node dist/cli/main.js`, without a new Node process and module graph per call. Tests about
 * process death (kill -9, SIGTERM) still spawn the program.
 */

export const CLI_PATH = resolve(__dirname, '..', '..', 'dist', 'cli', 'main.js');
const WORKER = resolve(__dirname, 'cli-worker.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface InProcessOptions {
  timeoutMs?: number;
  /** Stdout fails with EPIPE after this many lines, as `| head -n N` does. */
  stdoutCloseAfterLines?: number;
}

interface Reply extends CliResult {
  id: number;
  error?: string;
}

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, (reply: Reply) => void>();

function theWorker(): Worker {
  if (worker) return worker;
  if (!existsSync(CLI_PATH)) throw new Error(`${CLI_PATH} is missing: build first (jest's globalSetup runs tsc -p tsconfig.build.json)`);
  const w = new Worker(WORKER, { workerData: { cliPath: CLI_PATH }, stdout: true, stderr: true });
  // Anything written to the thread's own process streams (not the CLI's) is not the test's output.
  w.stdout.resume();
  w.stderr.resume();
  w.on('message', (reply: Reply) => {
    pending.get(reply.id)?.(reply);
    pending.delete(reply.id);
  });
  const fail = (error: string) => {
    if (worker === w) worker = undefined;
    for (const [id, settle] of pending) settle({ id, code: null, stdout: '', stderr: '', error });
    pending.clear();
  };
  w.on('error', (err) => fail(String(err.stack ?? err)));
  w.on('exit', (code) => fail(`the CLI worker exited (${code})`));
  w.unref();
  worker = w;
  return w;
}

/** Runs `triad <args>` with exactly this environment; calls of one file run one after another. */
export async function runCliInProcess(args: string[], env: NodeJS.ProcessEnv, options: InProcessOptions = {}): Promise<CliResult> {
  const { timeoutMs = 60_000, stdoutCloseAfterLines } = options;
  const w = theWorker();
  const id = nextId++;
  const reply = await new Promise<Reply>((settle) => {
    const timer = setTimeout(() => {
      pending.delete(id);
      settle({ id, code: null, stdout: '', stderr: '', error: `triad ${args.join(' ')} did not finish within ${timeoutMs} ms` });
      // A call that hangs leaves the thread unusable: the next call starts a fresh one.
      void stopInProcessCli();
    }, timeoutMs);
    pending.set(id, (r) => {
      clearTimeout(timer);
      settle(r);
    });
    w.postMessage({ id, argv: args, env: { ...env }, stdoutCloseAfterLines });
  });
  if (reply.error) throw new Error(`${reply.error}\n${reply.stderr}`);
  return { code: reply.code, stdout: reply.stdout, stderr: reply.stderr };
}

/** Ends the worker; the next call would start another. */
export async function stopInProcessCli(): Promise<void> {
  const w = worker;
  worker = undefined;
  if (w) await w.terminate();
}

// Every test file that imports this ends its worker when it is done.
if (typeof afterAll === 'function') afterAll(stopInProcessCli);
