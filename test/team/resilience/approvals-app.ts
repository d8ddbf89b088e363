import { appClient, waitForRun as waitForRunOf, type AppReply, type CallOptions } from '../../support/app-client';
import { spawnHttpServer } from '../../support/http-server-child';
import { join, resolve } from 'node:path';

/**
 * The real app (`createHttpApp`, as `triad serve` builds it) in a child Node process from the
 * `dist/` build jest's globalSetup compiles (NestJS ships ES modules that jest's CommonJS runtime
 * cannot load), driven by the Anthropic provider against a loopback fake of the Messages API.
 */

const ROOT = resolve(__dirname, '..', '..', '..');
export const CLI = join(ROOT, 'dist', 'cli', 'main.js');

/** ann launches (operator+reviewer), bob reviews, olga only operates, aud audits. */
export const KEYS = {
  ann: 'ann-secret-approvals-0123',
  bob: 'bob-secret-approvals-0123',
  olga: 'olga-secret-approvals-0123',
  aud: 'aud-secret-approvals-0123',
} as const;
export type KeyHolder = keyof typeof KEYS;


/** Parsed JSON bodies, loosely typed: tests assert on them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- arbitrary response JSON
export type Loose = any;

export type HttpResult<T = Loose> = AppReply<T>;

export interface AppServer {
  url: string;
  readonly stderr: string;
  request<T = Loose>(method: string, path: string, options?: CallOptions<KeyHolder>): Promise<HttpResult<T>>;
  close(): Promise<void>;
}

/** The environment of a triad process: the Anthropic provider at `modelUrl`, nothing else inherited. */
export function appEnv(dataDir: string, modelUrl: string, apiKey: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(base)) if (k.startsWith('TRIAD_') || k.startsWith('ANTHROPIC_') || k.startsWith('OPENAI_')) delete base[k];
  return {
    ...base,
    TRIAD_DATA_DIR: dataDir,
    TRIAD_STORE: 'sqlite',
    TRIAD_MODEL: 'anthropic',
    ANTHROPIC_API_KEY: apiKey,
    ANTHROPIC_BASE_URL: modelUrl,
    TRIAD_API_KEYS: `ann:operator+reviewer:${KEYS.ann},bob:reviewer:${KEYS.bob},olga:operator:${KEYS.olga},aud:auditor:${KEYS.aud}`,
    TRIAD_REVIEW_TIMER_MS: '50',
    TRIAD_RECOVERY_INTERVAL_MS: '200',
    ...extra,
  };
}

export async function startApp(env: NodeJS.ProcessEnv, startTimeoutMs = 30_000): Promise<AppServer> {
  const server = await spawnHttpServer(env, { startTimeoutMs });
  const url = server.url;
  return {
    url,
    get stderr() {
      return server.stderr;
    },
    request: appClient<KeyHolder, Loose>(url, KEYS, 'ann').request,
    close: () => server.stop(),
  };
}

/** Polls GET /v1/runs/:id (as the auditor) until `until` holds. */
export function waitForRun(server: AppServer, runId: string, until: (run: Loose) => boolean, timeoutMs = 20_000): Promise<Loose> {
  return waitForRunOf<Loose, KeyHolder>(server, runId, until, timeoutMs, { as: 'aud', detail: () => server.stderr });
}
