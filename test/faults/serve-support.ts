import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import type { DriverClaimedData } from '../../src/team/domain/run-events';
import { foldRun, initialRunState } from '../../src/team/domain/run-state';
import { waitFor } from '../support/wait-for';

export { waitFor };

/** A real `triad serve` child process, driven over HTTP, for the store-fault tests. */

export const CLI = resolve(__dirname, '..', '..', 'dist', 'cli', 'main.js');
export const OPERATOR_KEY = 'faults-operator-0123456789';

export interface Serve {
  process: ChildProcess;
  url: string;
  readonly stdout: string;
  readonly stderr: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => res(port));
    });
  });
}

export async function startServe(env: Record<string, string>): Promise<Serve> {
  if (!existsSync(CLI)) throw new Error('dist/ is missing: jest globalSetup builds it');
  const port = await freePort();
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    TRIAD_MODEL: 'offline',
    TRIAD_PORT: String(port),
    TRIAD_HOST: '127.0.0.1',
    TRIAD_API_KEYS: `ops:operator+reviewer+auditor:${OPERATOR_KEY}`,
    ...env,
  };
  delete childEnv.ANTHROPIC_API_KEY;
  const proc = spawn(process.execPath, [CLI, 'serve'], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => proc.once('exit', (code, signal) => r({ code, signal })));
  const serve: Serve = {
    process: proc,
    url: `http://127.0.0.1:${port}`,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    exited,
  };
  await waitFor('triad serve to listen', async () => {
    if (proc.exitCode !== null) throw new Error(`triad serve exited (${proc.exitCode}):\n${stderr}`);
    return stdout.includes('triad listening');
  }, 60_000).catch((err: Error) => {
    // Say what the process was doing (waiting for its store, say), then stop it.
    proc.kill('SIGKILL');
    throw new Error(`${err.message}; its stderr:\n${stderr.slice(-2000)}`);
  });
  return serve;
}

export async function stopServe(serve: Serve | undefined): Promise<void> {
  if (!serve || serve.process.exitCode !== null || serve.process.signalCode !== null) return;
  serve.process.kill('SIGCONT');
  serve.process.kill('SIGKILL');
  await serve.exited;
}

export async function http<T = Record<string, unknown>>(serve: Serve, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${serve.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${OPERATOR_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Prometheus text or an empty body.
  }
  return { status: res.status, body: parsed as T };
}


export const CRITERIA = ['file alpha.txt contains "alpha"', 'file beta.txt contains "beta"', 'file gamma.txt exists', 'file delta.txt exists'];

export async function launchRuns(serve: Serve, n: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await http<{ runId: string }>(serve, 'POST', '/v1/runs', { goal: `${prefix} run ${i}`, acceptanceCriteria: CRITERIA });
    if (res.status !== 202) throw new Error(`launch answered ${res.status}: ${JSON.stringify(res.body)}`);
    ids.push(res.body.runId);
  }
  return ids;
}

/** Statuses of the runs, from GET /v1/runs; undefined while the server does not answer 200. */
export async function statuses(serve: Serve, runIds: string[]): Promise<Map<string, string> | undefined> {
  const res = await http<{ runs: Array<{ runId: string; status: string }> }>(serve, 'GET', '/v1/runs').catch(() => undefined);
  if (!res || res.status !== 200) return undefined;
  const wanted = new Set(runIds);
  return new Map(res.body.runs.filter((r) => wanted.has(r.runId)).map((r) => [r.runId, r.status]));
}

export const IN_FLIGHT = new Set(['queued', 'planning', 'executing', 'reviewing']);

/**
 * What must hold of a run's stream after any store fault: no event recorded twice, no model turn
 * recorded twice (one completion per conversation state), one driver claim per owner in a row.
 */
export function streamFaults(runId: string, events: RecordedEvent[]): string[] {
  const faults: string[] = [];
  const ids = events.map((e) => e.id);
  if (new Set(ids).size !== ids.length) faults.push('an event id appears twice');
  const state = initialRunState(runId);
  const starts = new Map<string, string>();
  const turns = new Set<string>();
  for (const e of events) {
    foldRun([e], state);
    const d = e.data as { role: 'architect' | 'executor' | 'reviewer'; callId: string; turn: number };
    if (e.type === 'ModelCallStarted') starts.set(d.callId, `${d.role}|${state.team.context.iteration}|${d.turn}|${state.conversations[d.role].messages.length}`);
    if (e.type === 'ModelCallCompleted') {
      const key = starts.get(d.callId) ?? d.callId;
      if (turns.has(key)) faults.push(`model turn ${key} recorded twice`);
      turns.add(key);
    }
  }
  const owners = events.filter((e) => e.type === 'DriverClaimed').map((e) => (e.data as DriverClaimedData).owner);
  if (owners.some((o, i) => i > 0 && owners[i - 1] === o)) faults.push('one owner claimed the run twice in a row');
  return faults;
}
