import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { EventStore, RecordedEvent } from '../../src/events/event-store/event-store.port';
import { toRunStreamId } from '../../src/team/domain/run-events';
import { foldRun, initialRunState, runStatus, type RunState } from '../../src/team/domain/run-state';
import { loadRunHistory } from '../../src/team/runs/run-history';
import { tempDir } from '../support/temp-dir';
export { waitFor } from '../support/wait-for';

/** Spawning and observing test/support/crash-child.js: a real triad process over dist/. */

/** The child, started from the bundle jest's globalSetup makes of it (one file loads faster than dist/'s thousand). */
export const CHILD = resolve(__dirname, '..', 'support', 'crash-child-start.js');
const CHILD_BUNDLE = resolve(__dirname, '..', '..', 'build', 'test', 'crash-child.cjs');
export const CLI = resolve(__dirname, '..', '..', 'dist', 'cli', 'main.js');

export interface ChildInfo {
  ready: true;
  owner: string;
  pid: number;
  launched: string[];
  projects: string[];
  port?: number;
}

export interface Child {
  process: ChildProcess;
  /** Resolves with the child's ready line; rejects if it exits first. */
  ready: Promise<ChildInfo>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly stdout: string;
  readonly stderr: string;
}

/** A crash test's scratch directory, and the environment every process of the test shares. */
export interface CrashScene {
  dir: { path: string; remove(): void };
  dataDir: string;
  /** The model calls of every process, one JSON line each (CRASH_CALLS_LOG). */
  callsLog: string;
  /** With `logEvents`: the events every process appended, one JSON line each (CRASH_EVENTS_LOG). */
  eventsLog: string;
  env: Record<string, string>;
}

/**
 * The store (SQLite in a directory of its own), recovery every 100 ms and the model-call log that
 * every crash test's processes share; `env` adds the test's own settings (lease TTL, latencies…).
 */
export function crashScene(prefix: string, env: Record<string, string>, options: { logEvents?: boolean } = {}): CrashScene {
  const dir = tempDir(prefix);
  const dataDir = join(dir.path, 'data');
  const callsLog = join(dir.path, 'calls.log');
  const eventsLog = join(dir.path, 'events.log');
  return {
    dir,
    dataDir,
    callsLog,
    eventsLog,
    env: {
      TRIAD_DATA_DIR: dataDir,
      TRIAD_STORE: 'sqlite',
      TRIAD_RECOVERY_INTERVAL_MS: '100',
      CRASH_CALLS_LOG: callsLog,
      ...(options.logEvents ? { CRASH_EVENTS_LOG: eventsLog } : {}),
      ...env,
    },
  };
}

export function spawnChild(env: Record<string, string | undefined>): Child {
  if (!existsSync(CHILD_BUNDLE)) throw new Error(`${CHILD_BUNDLE} is missing: jest's globalSetup builds it`);
  const childEnv: NodeJS.ProcessEnv = { ...process.env, TRIAD_MODEL: 'offline', ...env };
  delete childEnv.ANTHROPIC_API_KEY;
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
  const proc = spawn(process.execPath, [CHILD], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => proc.once('exit', (code, signal) => res({ code, signal })));
  const ready = new Promise<ChildInfo>((res, rej) => {
    proc.stdout!.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
      const line = stdout.split('\n').find((l) => l.startsWith('{"ready":true'));
      if (line) res(JSON.parse(line) as ChildInfo);
    });
    void exited.then(({ code, signal }) => rej(new Error(`child exited (${code ?? signal}) before it was ready\n${stderr}`)));
  });
  ready.catch(() => undefined);
  return {
    process: proc,
    ready,
    exited,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
  };
}

export async function killHard(child: Child): Promise<void> {
  if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
  await child.exited;
}

/** SIGTERM, then SIGKILL after a grace period; resolves with how it ended and how long it took. */
export async function terminate(child: Child, graceMs = 10_000): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
  const started = Date.now();
  if (child.process.exitCode !== null || child.process.signalCode !== null) return { ...(await child.exited), ms: 0 };
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), graceMs);
  const result = await child.exited;
  clearTimeout(timer);
  return { ...result, ms: Date.now() - started };
}

export function jsonLines<T = Record<string, unknown>>(file: string): T[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

export interface ModelCallLine {
  pid: number;
  runId: string;
  role: string;
  model?: string;
  messages?: number;
  aborted?: boolean;
  t: number;
}

export interface EventLine {
  owner: string;
  pid: number;
  runId: string;
  revision: number;
  id: string;
  type: string;
  t: number;
}

export async function runEvents(store: EventStore, runId: string): Promise<RecordedEvent[]> {
  return store.readStream(toRunStreamId(runId));
}

/** The run's folded state (a fork's history includes its parent's events up to the fork point). */
export async function runState(store: EventStore, runId: string): Promise<RunState> {
  return foldRun(await loadRunHistory(store, runId), initialRunState(runId));
}

export async function statusOf(store: EventStore, runId: string): Promise<string> {
  return runStatus(await runState(store, runId));
}


export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Model calls vs the log: the key of a call is (run, role, length of the conversation sent), which
 * is the same for a call and its repeat. Returns, per key, when its response was recorded.
 */
export function completionsByCallKey(runId: string, events: RecordedEvent[]): Map<string, number> {
  const state = initialRunState(runId);
  const started = new Map<string, string>();
  const completedAt = new Map<string, number>();
  for (const e of events) {
    foldRun([e], state);
    const d = e.data as { role: 'architect' | 'executor' | 'reviewer'; callId: string };
    if (e.type === 'ModelCallStarted') started.set(d.callId, `${runId}|${d.role}|${state.conversations[d.role].messages.length}`);
    if (e.type === 'ModelCallCompleted') completedAt.set(started.get(d.callId)!, Date.parse(e.recordedAt));
  }
  return completedAt;
}

export const callKey = (c: ModelCallLine) => `${c.runId}|${c.role}|${c.messages}`;

/** A stream's ids of completed model calls and tool calls that appear more than once. */
export function duplicates(events: RecordedEvent[]): { modelCalls: string[]; toolCalls: string[] } {
  const dup = (ids: string[]) => ids.filter((id, i) => ids.indexOf(id) !== i);
  return {
    modelCalls: dup(events.filter((e) => e.type === 'ModelCallCompleted').map((e) => (e.data as { callId: string }).callId)),
    toolCalls: dup(events.filter((e) => e.type === 'ToolCallCompleted').map((e) => (e.data as { toolUseId: string }).toolUseId)),
  };
}
