import { commandPathFor } from '../../../src/events/command-handling';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import type { EventStore, RecordedEvent } from '../../../src/events/event-store/event-store.port';
import type { ReviewDecidedData } from '../../../src/team/domain/run-events';
import type { RunSummary } from '../../../src/team/runs/run-summary';
import { PostgresEventStore } from '../../../src/events/event-store/postgres.event-store';
import { SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import { launchRun, type LaunchRunInput } from '../../../src/team/commands/launch';
import { OFFLINE_MODEL_ID } from '../../../src/team/models/offline.model';
import { appClient, waitForRun as waitForRunOf, type AppReply, type CallOptions } from '../../support/app-client';
import { spawnHttpServer } from '../../support/http-server-child';
import { PG_URL } from '../../support/pg';
import { runCliInProcess, type CliResult } from '../../support/in-process-cli';

/**
 * Support for the review gate's e2e tests: the real app (`createHttpApp`, as `triad serve` builds
 * it) in a child Node process from the `dist/` build that jest's globalSetup compiles — NestJS
 * ships ES modules that jest's CommonJS runtime cannot load on Node 20, and a child process is what
 * clients see anyway. Also: the compiled CLI, and throwaway PostgreSQL schemas.
 */

const ROOT = resolve(__dirname, '..', '..', '..');
export const CLI = join(ROOT, 'dist', 'cli', 'main.js');

/** No skip when PostgreSQL is down: the PostgreSQL tests fail. */
export { PG_URL };

/** ann launches (operator+reviewer), bob reviews, olga only operates, aud audits. */
export const KEYS = {
  ann: 'ann-secret-0123456789',
  bob: 'bob-secret-0123456789',
  olga: 'olga-secret-0123456789',
  aud: 'aud-secret-0123456789',
} as const;
export type KeyHolder = keyof typeof KEYS;
export const API_KEYS_ENV = `ann:operator+reviewer:${KEYS.ann},bob:reviewer:${KEYS.bob},olga:operator:${KEYS.olga},aud:auditor:${KEYS.aud}`;

/** Criteria the offline model meets in its first iteration. */
export const ONE_ITERATION = { goal: 'Write the letter A', acceptanceCriteria: ['file a.txt contains "A"'] };

/** The environment of a triad process: nothing inherited that could point it elsewhere. */
export function triadEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(base)) if (k.startsWith('TRIAD_') || k.startsWith('ANTHROPIC_')) delete base[k];
  const out: NodeJS.ProcessEnv = { ...base, TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline', TRIAD_REVIEW_TIMER_MS: '50', TRIAD_RECOVERY_INTERVAL_MS: '100' };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  return out;
}

/** A pending review as GET /v1/reviews lists it. */
export type PendingReview = NonNullable<RunSummary['pendingReview']> & { runId: string; goal: string; acceptanceCriteria: string[]; launchedBy: string };

/** Response bodies as the tests read them: each field is there or not, as the assertions check. */
export interface Body {
  statusCode?: number;
  error?: string;
  message?: string;
  runId?: string;
  decisionId?: string;
  reviewId?: string;
  outcome?: string;
  runStatus?: string;
  reviews?: PendingReview[];
  events?: RecordedEvent[];
}

export type HttpResult<T = Body> = AppReply<T>;

export type RequestOptions = CallOptions<KeyHolder>;

export interface GateServer {
  url: string;
  readonly stdout: string;
  readonly stderr: string;
  request<T = Body>(method: string, path: string, options?: RequestOptions): Promise<HttpResult<T>>;
  /** SIGTERM, as an operator stops `triad serve`; resolves when the process has exited. */
  close(): Promise<void>;
}

// Runs in the child: the same bootstrap as `triad serve`, on an ephemeral port reported on stdout.
// It exits when the test process goes away (stdin closes), so no server outlives a crashed test.

/** Starts the app with this environment (TRIAD_DATA_DIR and the store are the caller's). */
export async function startServer(env: Record<string, string | undefined>, startTimeoutMs = 30_000): Promise<GateServer> {
  const server = await spawnHttpServer(triadEnv({ TRIAD_API_KEYS: API_KEYS_ENV, ...env }), { startTimeoutMs, logLevels: ['error', 'warn', 'log'] });
  const url = server.url;
  return {
    url,
    get stdout() {
      return server.stdout;
    },
    get stderr() {
      return server.stderr;
    },
    request: (method, path, options) => httpRequest(url, method, path, options),
    close: () => server.stop(),
  };
}

/** One request to the app at `url`, as `ann` unless told otherwise. */
export function httpRequest<T = Body>(url: string, method: string, path: string, options: RequestOptions = {}): Promise<HttpResult<T>> {
  return appClient<KeyHolder, Body>(url, KEYS, 'ann').request<T>(method, path, options);
}

// ---------------------------------------------------------------------------------------------
// Runs over HTTP

export async function launch(server: GateServer, body: Record<string, unknown> = ONE_ITERATION, as: KeyHolder = 'ann'): Promise<string> {
  const res = await server.request('POST', '/v1/runs', { as, body });
  if (res.status !== 202) throw new Error(`launch failed: ${res.status} ${res.text}`);
  return res.body.runId!;
}

export async function getRun(server: GateServer, runId: string): Promise<RunSummary> {
  const res = await server.request<RunSummary>('GET', `/v1/runs/${runId}`, { as: 'aud' });
  if (res.status !== 200) throw new Error(`GET run ${runId}: ${res.status} ${res.text}`);
  return res.body;
}

/** Polls the run (as the auditor) until `until` holds; fails with the last summary when it does not in time. */
export function waitForRun(server: GateServer, runId: string, until: (run: RunSummary) => boolean, timeoutMs = 20_000, everyMs = 20): Promise<RunSummary> {
  return waitForRunOf<RunSummary, KeyHolder>(server, runId, until, timeoutMs, { as: 'aud', everyMs, detail: () => server.stderr });
}

export const awaitingReview = (run: RunSummary) => run.status === 'awaiting_review' && Boolean(run.pendingReview);

/** The pending review of a run known to have one. */
export const pendingReviewOf = (run: RunSummary) => {
  if (!run.pendingReview) throw new Error(`run ${run.runId} has no pending review`);
  return run.pendingReview;
};

export async function runEvents(server: GateServer, runId: string): Promise<RecordedEvent[]> {
  const res = await server.request('GET', `/v1/runs/${runId}/events`, { as: 'aud' });
  if (res.status !== 200) throw new Error(`GET events of ${runId}: ${res.status} ${res.text}`);
  return res.body.events!;
}

export const decisionsIn = (events: RecordedEvent[]) => events.filter((e) => e.type === 'ReviewDecided').map((e) => e.data as ReviewDecidedData);

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// The compiled CLI, run in-process

export type { CliResult };

/** `triad <args>` in-process (test/support/in-process-cli.ts), with the environment of a triad process. */
export function runCli(args: string[], env: Record<string, string | undefined>, timeoutMs = 60_000): Promise<CliResult> {
  return runCliInProcess(args, triadEnv(env), { timeoutMs });
}

/** The last JSON line a `--json` command printed. */
export function lastJson<T>(stdout: string): T {
  const lines = stdout.trim().split('\n').filter((l) => l.startsWith('{') || l.startsWith('['));
  if (lines.length === 0) throw new Error(`no JSON in output:\n${stdout}`);
  return JSON.parse(lines[lines.length - 1]) as T;
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolvePort(port));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: a fresh schema per test file (TRIAD_PG_SCHEMA)

export interface PgSchema {
  schema: string;
  /** The environment that points a triad process at this schema. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

async function pgQuery(sql: string): Promise<void> {
  const client = new Client({ connectionString: PG_URL, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Fails (never skips) when PostgreSQL does not answer. */
export async function freshPgSchema(): Promise<PgSchema> {
  const schema = `triad_gate_${process.pid}_${randomBytes(4).toString('hex')}`;
  await pgQuery('SELECT 1');
  return {
    schema,
    env: { TRIAD_STORE: 'postgres', TRIAD_PG_URL: PG_URL, TRIAD_PG_SCHEMA: schema },
    drop: () => pgQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`),
  };
}

// ---------------------------------------------------------------------------------------------
// Launching straight into the store

/**
 * Appends RunLaunched with the domain's own `launchRun`, straight into the store a server uses
 * (its recovery scan then drives the run). Used for runs with a review timeout policy: over HTTP
 * such a launch is refused today (see the launch test in review-timeouts.e2e.spec.ts).
 */
export async function seedLaunch(target: { dataDir: string } | { pg: PgSchema }, input: LaunchRunInput, launchedBy = 'user:ann'): Promise<string> {
  const store: EventStore =
    'dataDir' in target
      ? new SqliteEventStore({ file: join(target.dataDir, 'triad.db') })
      : await PostgresEventStore.connect({ url: PG_URL, schema: target.pg.schema });
  try {
    const runId = `run_${randomBytes(10).toString('hex')}`;
    await launchRun(commandPathFor(store), input, { runId, launchedBy, now: new Date(), provider: 'offline', defaultModel: OFFLINE_MODEL_ID });
    return runId;
  } finally {
    await store.close();
  }
}
