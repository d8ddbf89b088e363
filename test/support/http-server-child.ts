import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * The real HTTP app (`createHttpApp`, as `triad serve` builds it) in a child Node process, from the
 * `dist/` build jest's globalSetup compiles: NestJS 12 ships ES modules only, which jest's CommonJS
 * runtime cannot load on Node 20 (plain Node can). The child listens on an ephemeral port, reports
 * it on stdout, and exits when the test process goes away (its stdin closes).
 */

// The program's entry: `createHttpApp` from the program `triad` runs (the bundle, dist/triad.cjs),
// so a test's server starts as `triad serve` does.
export const PROGRAM_ENTRY = resolve(__dirname, '..', '..', 'dist', 'cli', 'main.js');

const SERVER_SCRIPT = `
const { createHttpApp } = require(process.env.E2E_PROGRAM_ENTRY);
(async () => {
  const app = await createHttpApp({ logger: JSON.parse(process.env.E2E_LOG_LEVELS) });
  await app.listen(0, '127.0.0.1');
  // Asked for: every route Express holds (what Nest mapped, and what was added beside it), as served.
  const routes = process.env.E2E_REPORT_ROUTES !== '1' ? undefined : app.getHttpAdapter().getInstance().router.stack
    .filter((layer) => layer.route)
    .flatMap((layer) => Object.keys(layer.route.methods).map((method) => ({ method: method.toUpperCase(), path: layer.route.path })));
  process.stdout.write(JSON.stringify({ port: app.getHttpServer().address().port, routes }) + '\\n');
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
  // As \`triad serve\` does: SIGTERM closes the app (runs suspended, the store closed), then exit 0.
  let closing = false;
  const stop = () => {
    if (closing) return;
    closing = true;
    app.close().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write('close failed: ' + String((err && err.stack) || err) + '\\n');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
})().catch((err) => {
  process.stderr.write(String((err && err.stack) || err) + '\\n');
  process.exit(1);
});
`;

export interface ServerChild {
  /** e.g. `http://127.0.0.1:41234` */
  url: string;
  readonly stdout: string;
  readonly stderr: string;
  readonly pid: number;
  /** With `reportRoutes`: every route the app's Express router holds, e.g. `{method: 'GET', path: '/v1/runs/:id'}`. */
  routes?: ServedRoute[];
  /** SIGTERM (the app closes its store), SIGKILL after `graceMs`. */
  stop(): Promise<void>;
  /** SIGKILL at once (a crash: nothing is closed); resolves once it has exited. */
  kill(): Promise<void>;
}

export interface ServedRoute {
  method: string;
  path: string;
}

export interface SpawnOptions {
  startTimeoutMs?: number;
  /** How long SIGTERM may take before SIGKILL. */
  graceMs?: number;
  /** Nest log levels of the app; tests that read its `log` lines ask for them. */
  logLevels?: Array<'error' | 'warn' | 'log'>;
  /** Have the child report the routes its router holds (`ServerChild.routes`). */
  reportRoutes?: boolean;
}

export async function spawnHttpServer(env: NodeJS.ProcessEnv, options: SpawnOptions = {}): Promise<ServerChild> {
  const { startTimeoutMs = 30_000, graceMs = 10_000, logLevels = ['error', 'warn'], reportRoutes = false } = options;
  if (!existsSync(PROGRAM_ENTRY)) throw new Error(`${PROGRAM_ENTRY} is missing: build first (jest's globalSetup runs scripts/build-dist.js)`);
  const child = spawn(process.execPath, ['-e', SERVER_SCRIPT], { env: { ...env, E2E_PROGRAM_ENTRY: PROGRAM_ENTRY, E2E_LOG_LEVELS: JSON.stringify(logLevels), E2E_REPORT_ROUTES: reportRoutes ? '1' : '0' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  let ready: { port: number; routes?: ServedRoute[] };
  try {
    ready = await new Promise<{ port: number; routes?: ServedRoute[] }>((resolvePort, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server did not start within ${startTimeoutMs} ms\n${stderr}`)), startTimeoutMs);
      child.stdout!.on('data', () => {
        // Complete lines only: a long ready line (with its routes) may arrive in several chunks.
        const line = stdout.split('\n').slice(0, -1).find((l) => l.startsWith('{"port":'));
        if (line) {
          clearTimeout(timer);
          resolvePort(JSON.parse(line) as { port: number; routes?: ServedRoute[] });
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the server exited (${code ?? signal}) before listening\n${stderr}`));
      });
    });
  } catch (err) {
    await stopChild(child, graceMs);
    throw err;
  }
  return {
    url: `http://127.0.0.1:${ready.port}`,
    routes: ready.routes,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    pid: child.pid!,
    stop: () => stopChild(child, graceMs),
    kill: () => stopChild(child, 0, 'SIGKILL'),
  };
}

export async function stopChild(child: ChildProcess, graceMs: number, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
  child.stdin?.destroy();
}

/** A response read whole: its JSON body when it has one. */
export async function readReply<T>(res: Response): Promise<{ status: number; headers: Headers; body: T; text: string }> {
  const text = await res.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, body: body as T, text };
}
