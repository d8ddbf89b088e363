import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteEventStore } from '../../src/events/event-store/sqlite.event-store';
import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import type { ModelCallStartedData, RunForkedData, ToolCallRequestedData } from '../../src/team/domain/run-events';
import { loadRunHistory } from '../../src/team/runs/run-history';
import { contextOf, replayRun, type RunContext } from '../../src/session-replay/replay';
import { runCliInProcess, type CliResult } from '../support/in-process-cli';
import { tempDir } from '../support/temp-dir';
import { jsonLines, killHard, runEvents, spawnChild, statusOf, terminate, waitFor, type Child, type ModelCallLine } from '../recovery/crash-support';

// Session replay over HTTP and the CLI against a real app (SQLite, offline model behind a
// recording wrapper that logs every request's model): GET /v1/runs/:id/context, and fork at turn N.

jest.setTimeout(60_000);

const OPERATOR = 'op-secret-0123456789';
const AUDITOR = 'aud-secret-0123456789';
const SLOW_MODEL = 'recording-model-x';
const CRITERIA = ['file alpha.txt contains "alpha"', 'file beta.txt contains "beta"', 'file gamma.txt exists'];

const dir = tempDir('triad-session-');
const dataDir = join(dir.path, 'data');
const callsLog = join(dir.path, 'calls.log');
let child: Child;
let base: string;
let store: SqliteEventStore;
let parent: string;
let parentEvents: RecordedEvent[];

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
async function api<T = any>(method: string, path: string, body?: unknown, key: string | null = OPERATOR): Promise<{ status: number; body: T }> {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** What the server must answer: the context rebuilt here from the same events (JSON round trip). */
async function expectedContext(runId: string, revision?: number): Promise<RunContext> {
  const history = await loadRunHistory(store, runId, revision);
  const { state, completeness } = replayRun(history, runId, revision);
  return JSON.parse(JSON.stringify(contextOf(state, completeness))) as RunContext;
}

/** `triad <args>` in-process (test/support/in-process-cli.ts). */
function cli(args: string[]): Promise<CliResult> {
  return runCliInProcess(args, { ...process.env, TRIAD_DATA_DIR: dataDir, TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline', TRIAD_USER: 'forker', ANTHROPIC_API_KEY: '' });
}

/** The turn (model calls completed) right after the executor's first file write has its result. */
function turnAfterFirstWrite(events: RecordedEvent[]): { turn: number; path: string; content: string } {
  let turns = 0;
  for (const e of events) {
    if (e.type === 'ModelCallCompleted') turns++;
    if (e.type === 'ToolCallRequested' && (e.data as ToolCallRequestedData).name === 'write_file') {
      const input = (e.data as ToolCallRequestedData).input as { path: string; content: string };
      return { turn: turns, path: input.path, content: input.content };
    }
  }
  throw new Error('the run wrote no file');
}

beforeAll(async () => {
  child = spawnChild({
    TRIAD_DATA_DIR: dataDir,
    TRIAD_STORE: 'sqlite',
    TRIAD_API_KEYS: `ops:operator:${OPERATOR},aud:auditor:${AUDITOR}`,
    CRASH_MODE: 'http',
    CRASH_RECOVERY: '0',
    CRASH_LATENCY_MS: '1-3',
    CRASH_SLOW_MODELS: `${SLOW_MODEL}=1500`,
    CRASH_CALLS_LOG: callsLog,
  });
  const info = await child.ready;
  base = `http://127.0.0.1:${info.port}`;
  store = new SqliteEventStore({ file: join(dataDir, 'triad.db') });
  const launched = await api('POST', '/v1/runs', { goal: 'Write three files', acceptanceCriteria: CRITERIA, reviewPolicy: { humanGate: false } });
  expect(launched.status).toBe(202);
  parent = launched.body.runId;
  await waitFor('the parent run to complete', async () => (await statusOf(store, parent)) === 'completed', 20_000);
  parentEvents = await runEvents(store, parent);
});

afterAll(async () => {
  if (child) await terminate(child).catch(() => killHard(child));
  await store?.close();
  dir.remove();
});

describe('GET /v1/runs/:id/context', () => {
  it('returns the context rebuilt at ?revision (every revision), and the latest without it', async () => {
    for (const e of parentEvents) {
      const res = await api('GET', `/v1/runs/${parent}/context?revision=${e.revision}`, undefined, AUDITOR);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(await expectedContext(parent, e.revision));
      expect(res.body.revision).toBe(e.revision);
      expect(res.body.completeness).toEqual({ score: 1, events: e.revision + 1, understood: e.revision + 1, missing: [] });
    }
    const latest = await api('GET', `/v1/runs/${parent}/context`, undefined, AUDITOR);
    expect(latest.body).toEqual(await expectedContext(parent));
    expect(latest.body).toMatchObject({ status: 'completed', terminationReason: 'COMPLETED', iteration: 2, revision: parentEvents.length - 1 });
    expect(latest.body.roles.executor.messages.length).toBeGreaterThan(4);
  });

  it('404 for an unknown run; 400 for a revision that is not a non-negative integer; 401 without a key', async () => {
    const unknown = await api('GET', '/v1/runs/run_doesnotexist/context?revision=0');
    expect(unknown).toEqual({ status: 404, body: { statusCode: 404, error: 'Not Found', message: expect.any(String) } });
    for (const bad of ['abc', '-1', '1.5', '1e3', '', '%20']) {
      const res = await api('GET', `/v1/runs/${parent}/context?revision=${bad}`);
      expect({ bad, ...res }).toEqual({ bad, status: 400, body: { statusCode: 400, error: 'Bad Request', message: expect.any(String) } });
    }
    expect((await api('GET', `/v1/runs/${parent}/context`, undefined, null)).status).toBe(401);
  });
});

describe('fork at turn N', () => {
  it('over HTTP: a new stream that starts with RunForked, linked not copied, same context as the parent at the fork point, the overridden model next, the files written up to N', async () => {
    const first = turnAfterFirstWrite(parentEvents);
    const res = await api('POST', `/v1/runs/${parent}/fork`, { turn: first.turn, overrides: { team: { executor: { model: SLOW_MODEL } } } });
    expect(res.status).toBe(202);
    const fork = res.body.runId as string;
    expect(res.body).toMatchObject({ runId: expect.stringMatching(/^run_/), forkedFrom: { runId: parent, turn: first.turn }, workspaceNote: expect.stringMatching(/rebuilt 1 file\(s\) from the events/) });
    // The fork's next call (the executor's) takes 1.5 s on the overridden model, so its workspace
    // holds, for now, exactly what the parent had written up to turn N.
    const ws = join(dataDir, 'workspaces', fork);
    expect(readFileSync(join(ws, first.path), 'utf8')).toBe(first.content);
    const laterWrites = parentEvents
      .filter((e) => e.type === 'ToolCallRequested' && (e.data as ToolCallRequestedData).name === 'write_file')
      .map((e) => ((e.data as ToolCallRequestedData).input as { path: string }).path)
      .filter((p) => p !== first.path);
    expect(laterWrites.length).toBeGreaterThan(0);
    for (const p of laterWrites) expect(existsSync(join(ws, p))).toBe(false);

    const own = await runEvents(store, fork);
    expect(own[0].type).toBe('RunForked');
    const forked = own[0].data as RunForkedData;
    expect(forked.parent).toEqual(res.body.forkedFrom);
    // Linked, not copied: none of the parent's events is in the fork's stream.
    const parentIds = new Set(parentEvents.map((e) => e.id));
    expect(own.filter((e) => parentIds.has(e.id))).toEqual([]);

    // The fork's context at its revision 0 is the parent's at the fork point, under another id.
    const atFork = (await api('GET', `/v1/runs/${fork}/context?revision=0`)).body as RunContext;
    const parentAt = (await api('GET', `/v1/runs/${parent}/context?revision=${forked.parent.revision}`)).body as RunContext;
    expect(atFork.runId).toBe(fork);
    expect(parentAt.runId).toBe(parent);
    expect(atFork.roles).toEqual(parentAt.roles);
    expect(atFork.usage).toEqual(parentAt.usage);
    expect({ status: atFork.status, phase: atFork.phase, iteration: atFork.iteration, loop: atFork.machine.loop }).toEqual({
      status: parentAt.status,
      phase: parentAt.phase,
      iteration: parentAt.iteration,
      loop: parentAt.machine.loop,
    });
    expect(atFork.forkedFrom).toEqual(forked.parent);
    expect(atFork.completeness.score).toBe(1);

    // The fork's next model call goes to the overridden model, with the parent's conversation.
    await waitFor('the fork to make its first model call', async () => jsonLines<ModelCallLine>(callsLog).find((c) => c.runId === fork), 10_000, 20);
    const firstCall = jsonLines<ModelCallLine>(callsLog).find((c) => c.runId === fork)!;
    expect(firstCall).toMatchObject({ role: 'executor', model: SLOW_MODEL });
    expect(firstCall.messages).toBe(atFork.roles.executor.messages.length + 1);

    await waitFor('the fork to complete', async () => (await statusOf(store, fork)) === 'completed', 20_000);
    const started = (await runEvents(store, fork)).filter((e) => e.type === 'ModelCallStarted').map((e) => e.data as ModelCallStartedData);
    expect(started.filter((d) => d.role === 'executor').every((d) => d.model === SLOW_MODEL)).toBe(true);
    expect(started.filter((d) => d.role === 'reviewer').every((d) => d.model !== SLOW_MODEL)).toBe(true);
  });

  it('over HTTP: 400 for a turn beyond the run or a malformed body, 404 for an unknown run', async () => {
    const turns = parentEvents.filter((e) => e.type === 'ModelCallCompleted').length;
    const beyond = await api('POST', `/v1/runs/${parent}/fork`, { turn: turns + 1 });
    expect(beyond).toEqual({ status: 400, body: { statusCode: 400, error: 'Bad Request', message: expect.stringMatching(/only \d+ turn/) } });
    expect((await api('POST', `/v1/runs/${parent}/fork`, { turn: -1 })).status).toBe(400);
    expect((await api('POST', `/v1/runs/${parent}/fork`, { turn: 'three' })).status).toBe(400);
    expect((await api('POST', `/v1/runs/${parent}/fork`, { turn: 1, overrides: { team: { janitor: { model: 'x' } } } })).status).toBe(400);
    expect((await api('POST', '/v1/runs/run_doesnotexist/fork', { turn: 1 })).status).toBe(404);
    expect((await api('POST', `/v1/runs/${parent}/fork`, { turn: 1 }, AUDITOR)).status).toBe(403);
  });

  it('with `triad fork <id> --turn N --role-model executor=…`: the fork is driven here with the overridden model', async () => {
    const first = turnAfterFirstWrite(parentEvents);
    const out = await cli(['fork', parent, '--turn', String(first.turn), '--role-model', 'executor=cli-model-y', '--json']);
    // On failure, what the CLI said.
    expect({ code: out.code, ...(out.code === 0 ? {} : { stderr: out.stderr }) }).toEqual({ code: 0 });
    const result = JSON.parse(out.stdout.trim().split('\n').pop()!);
    expect(result).toMatchObject({ forkedFrom: { runId: parent, turn: first.turn }, run: { status: 'completed' } });
    const own = await runEvents(store, result.runId);
    expect(own[0].type).toBe('RunForked');
    expect((own[0].data as RunForkedData).overrides).toEqual({ team: { executor: { model: 'cli-model-y' } } });
    const parentIds = new Set(parentEvents.map((e) => e.id));
    expect(own.filter((e) => parentIds.has(e.id))).toEqual([]);
    const executorCalls = own.filter((e) => e.type === 'ModelCallStarted' && (e.data as ModelCallStartedData).role === 'executor');
    expect(executorCalls.length).toBeGreaterThan(0);
    expect(executorCalls.every((e) => (e.data as ModelCallStartedData).model === 'cli-model-y')).toBe(true);
    // Same context at the fork point as the parent's.
    const history = await loadRunHistory(store, result.runId, 0);
    const atFork = replayRun(history, result.runId, 0).state;
    const parentAt = replayRun(await loadRunHistory(store, parent), parent, (own[0].data as RunForkedData).parent.revision).state;
    expect(atFork.conversations).toEqual(parentAt.conversations);
    expect(atFork.runId).not.toBe(parentAt.runId);
    // Its workspace, rebuilt from the writes up to N and then worked on, meets the criteria.
    const ws = join(dataDir, 'workspaces', result.runId);
    expect(readFileSync(join(ws, 'alpha.txt'), 'utf8')).toContain('alpha');
    expect(readFileSync(join(ws, 'beta.txt'), 'utf8')).toContain('beta');
    // `runs show` and `runs list` say it is a fork, of which run and at which turn.
    const said = `from run ${parent} at turn ${first.turn}`;
    const shown = await cli(['runs', 'show', result.runId]);
    expect(shown.stdout).toContain(`forked    ${said}`);
    const listed = (await cli(['runs', 'list'])).stdout.split('\n');
    expect(listed.find((l) => l.startsWith(result.runId))).toContain(`(forked ${said})`);
    expect(listed.find((l) => l.startsWith(parent))).not.toContain('forked');
  });

  it('with the CLI: exit 2 for a turn beyond the run, 3 for an unknown run', async () => {
    const turns = parentEvents.filter((e) => e.type === 'ModelCallCompleted').length;
    const beyond = await cli(['fork', parent, '--turn', String(turns + 5)]);
    expect(beyond.code).toBe(2);
    expect(beyond.stderr).toMatch(/cannot fork at turn/);
    const unknown = await cli(['fork', 'run_doesnotexist', '--turn', '1']);
    expect(unknown.code).toBe(3);
  });
});

describe('completeness over HTTP', () => {
  it('an event this build does not understand lowers the score and is named; revisions before it stay complete', async () => {
    const stream = `run-${parent}`;
    const head = parentEvents.length - 1;
    await store.append(stream, [{ type: 'ReviewerMoodRecorded', data: { mood: 'sunny' } }], { expectedRevision: head });
    await store.append(stream, [{ type: 'PlanSubmitted', data: { toolUseId: 'x', plan: 'p', steps: [], at: new Date().toISOString() }, metadata: { schemaVersion: 2 } }]);
    const latest = await api('GET', `/v1/runs/${parent}/context`, undefined, AUDITOR);
    expect(latest.status).toBe(200);
    expect(latest.body).toEqual(await expectedContext(parent));
    expect(latest.body.completeness.score).toBeLessThan(1);
    expect(latest.body.completeness.missing).toEqual(['event of unknown type ReviewerMoodRecorded', 'PlanSubmitted of schema version 2 (no upcaster to version 1)']);
    const before = await api('GET', `/v1/runs/${parent}/context?revision=${head}`, undefined, AUDITOR);
    expect(before.body.completeness).toEqual({ score: 1, events: head + 1, understood: head + 1, missing: [] });
    // The rest of the API still serves the run.
    expect((await api('GET', `/v1/runs/${parent}`)).body).toMatchObject({ runId: parent, status: 'completed' });
  });
});
