import { resolve } from 'node:path';
import { readReply, spawnHttpServer } from '../../support/http-server-child';
import { runCliInProcess } from '../../support/in-process-cli';

/**
 * The real app (dist/, built by jest's globalSetup) in a child process, over real HTTP, on SQLite
 * or PostgreSQL as its environment says — like test/support/e2e-app.ts, which is SQLite-only.
 * NestJS 12 is ESM-only and jest's CommonJS runtime cannot load it, so the app never runs in the
 * test process; the CLI runs in-process (test/support/in-process-cli.ts).
 */

const ROOT = resolve(__dirname, '..', '..', '..');
export const CLI = resolve(ROOT, 'dist', 'cli', 'main.js');

export const KEYS = {
  ops: 'ops-secret-0123456789',
  rev: 'rev-secret-0123456789',
  rev2: 'rev2-secret-0123456789',
  aud: 'aud-secret-0123456789',
  adm: 'adm-secret-0123456789',
  opsrev: 'opsrev-secret-0123456789',
} as const;
export type KeyName = keyof typeof KEYS;

export const API_KEYS = [
  `ops:operator:${KEYS.ops}`,
  `rev:reviewer:${KEYS.rev}`,
  `rev2:reviewer:${KEYS.rev2}`,
  `aud:auditor:${KEYS.aud}`,
  `adm:admin:${KEYS.adm}`,
  `opsrev:operator+reviewer:${KEYS.opsrev}`,
].join(',');

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are whatever JSON the route sends
export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface DecisionsServer {
  url: string;
  readonly stderr: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  request<T = any>(method: string, path: string, options?: { as?: KeyName | null; body?: unknown }): Promise<Reply<T>>;
  close(): Promise<void>;
}

/** The environment every child gets: the test's store settings, the offline model, no secrets from outside. */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...process.env, TRIAD_MODEL: 'offline', TRIAD_API_KEYS: API_KEYS, ...env };
  delete out.ANTHROPIC_API_KEY;
  if (!env.TRIAD_PG_URL) delete out.TRIAD_PG_URL;
  return out;
}

export async function startDecisionsServer(env: Record<string, string>, startTimeoutMs = 30_000): Promise<DecisionsServer> {
  const server = await spawnHttpServer(childEnv(env), { startTimeoutMs, graceMs: 5000 });
  const url = server.url;
  return {
    url,
    get stderr() {
      return server.stderr;
    },
    async request(method, path, options = {}) {
      const headers: Record<string, string> = {};
      const as = options.as === undefined ? 'aud' : options.as;
      if (as !== null) headers.authorization = `Bearer ${KEYS[as]}`;
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${url}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
      return readReply<never>(res);
    },
    close: () => server.stop(),
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `triad <args>` (dist/cli/main.js) to its end, in-process (test/support/in-process-cli.ts). */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<CliResult> {
  return runCliInProcess(args, childEnv(env), { timeoutMs });
}
