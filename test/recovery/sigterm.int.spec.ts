import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { restoreCheckpoint, serializeRunState, type Checkpoint } from '../../src/checkpoint/checkpoint';
import { SqliteCheckpointStore } from '../../src/checkpoint/sqlite.checkpoint-store';
import { SqliteEventStore } from '../../src/events/event-store/sqlite.event-store';
import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import { SqliteRunLeases } from '../../src/team/leases/sqlite.run-leases';
import type { LaunchRunInput } from '../../src/team/commands/launch';
import {
  callKey,
  type Child,
  CLI,
  completionsByCallKey,
  crashScene,
  duplicates,
  jsonLines,
  killHard,
  type ModelCallLine,
  runEvents,
  runState,
  spawnChild,
  statusOf,
  terminate,
  waitFor,
} from './crash-support';

// SIGTERM: a process driving runs aborts its model calls, records each active run as suspended
// (RunSuspended + a checkpoint) and exits 0; the runs are then resumed by `POST /v1/runs/:id/resume`,
// by `triad resume` and by another process's recovery, and finish without repeating a recorded turn.

jest.setTimeout(90_000);

const CRITERIA = ['file alpha.txt contains "alpha"', 'file beta.txt contains "beta"', 'file gamma.txt exists'];
const LAUNCHES: LaunchRunInput[] = Array.from({ length: 4 }, (_, i) => ({ goal: `Shutdown-test run ${i}`, acceptanceCriteria: CRITERIA }));
const OPERATOR_KEY = 'op-secret-0123456789';

describe('SIGTERM suspends runs; they resume and finish', () => {
  const { dir, dataDir, callsLog, env } = crashScene('triad-sigterm-', { TRIAD_LEASE_TTL_MS: '2000' }, { logEvents: true });
  const children: Child[] = [];
  let store: SqliteEventStore;
  let runIds: string[];
  let suspendedAt: Map<string, RecordedEvent[]>;
  let owner: string;
  let shutdown: { code: number | null; signal: NodeJS.Signals | null; ms: number };

  afterAll(async () => {
    for (const c of children) await killHard(c);
    await store?.close();
    dir.remove();
  });

  const dump = () => children.map((c, i) => `--- child ${i} stderr ---\n${c.stderr}`).join('\n');

  it('a process driving runs gets SIGTERM mid-run: model calls are aborted, each run is suspended with a checkpoint, exit 0', async () => {
    // A run's third model call never answers: when SIGTERM arrives every run has one in flight.
    const child = spawnChild({ ...env, CRASH_LAUNCH: JSON.stringify(LAUNCHES), CRASH_RECOVERY: '0', CRASH_PAUSE_AFTER: '2' });
    children.push(child);
    const info = await child.ready;
    owner = info.owner;
    runIds = info.launched;
    store = new SqliteEventStore({ file: join(dataDir, 'triad.db') });
    await waitFor(
      'two recorded turns and a call in flight in every run',
      async () => {
        const calls = jsonLines<ModelCallLine>(callsLog);
        for (const runId of runIds) {
          const events = await runEvents(store, runId);
          const completed = events.filter((e) => e.type === 'ModelCallCompleted');
          if (completed.length < 2) return false;
          const lastCall = calls.filter((c) => c.runId === runId).pop();
          if (!lastCall || lastCall.t <= Date.parse(completed[completed.length - 1].recordedAt)) return false;
        }
        return true;
      },
      30_000,
      20,
    );
    shutdown = await terminate(child);
    // The calls in flight never answer: an exit at all (not the SIGKILL after the grace period)
    // means they were aborted, not awaited.
    expect({ code: shutdown.code, signal: shutdown.signal }).toEqual({ code: 0, signal: null });
    const aborted = jsonLines<ModelCallLine>(callsLog).filter((c) => c.aborted);
    expect(new Set(aborted.map((c) => c.runId))).toEqual(new Set(runIds));

    const db = new Database(join(dataDir, 'triad.db'));
    const checkpoints = new SqliteCheckpointStore(db);
    const leases = new SqliteRunLeases(db);
    suspendedAt = new Map();
    try {
      for (const runId of runIds) {
        const events = await runEvents(store, runId);
        suspendedAt.set(runId, events);
        const last = events[events.length - 1];
        expect(last.type).toBe('RunSuspended');
        expect(last.data).toMatchObject({ reason: 'SHUTDOWN', owner });
        expect(await statusOf(store, runId)).toBe('suspended');
        // Nothing was recorded for the aborted call: its start is written with its outcome.
        expect(events.filter((e) => e.type === 'ModelCallStarted').length).toBe(events.filter((e) => e.type === 'ModelCallCompleted').length);
        // A checkpoint at the suspension, equal to the fold of the events.
        const cp = (await checkpoints.latest(runId)) as Checkpoint;
        expect(cp).toMatchObject({ reason: 'shutdown', revision: last.revision });
        expect(serializeRunState(restoreCheckpoint(cp))).toEqual(serializeRunState(await runState(store, runId)));
        // The lease was released: anyone may resume it now.
        expect(await leases.holder(runId, Date.now())).toBeUndefined();
      }
    } finally {
      db.close();
    }
    expect(child.stderr).not.toMatch(/could not record the suspension|stopped on an error/);
  });

  it('POST /v1/runs/:id/resume resumes a suspended run in the serving process (401, 404, 409 otherwise)', async () => {
    const child = spawnChild({ ...env, CRASH_MODE: 'http', CRASH_RECOVERY: '0', CRASH_LATENCY_MS: '5-20', TRIAD_API_KEYS: `ops:operator:${OPERATOR_KEY}` });
    children.push(child);
    const { port, owner: httpOwner } = await child.ready;
    const post = (path: string, key: string | null = OPERATOR_KEY) =>
      fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: key ? { authorization: `Bearer ${key}` } : {} });
    try {
      expect((await post(`/v1/runs/${runIds[0]}/resume`, null)).status).toBe(401);
      expect((await post('/v1/runs/run_doesnotexist/resume')).status).toBe(404);
      const res = await post(`/v1/runs/${runIds[0]}/resume`);
      expect(res.status).toBe(202);
      expect(await res.json()).toEqual({ runId: runIds[0], status: 'running', driver: httpOwner });
      await waitFor('the run to reach the human gate', async () => (await statusOf(store, runIds[0])) === 'awaiting_review', 20_000);
      const again = await post(`/v1/runs/${runIds[0]}/resume`);
      expect(again.status).toBe(409);
      expect(await again.json()).toEqual({ statusCode: 409, error: 'Conflict', message: expect.stringMatching(/waits for a human review/) });
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${dump()}`);
    } finally {
      expect((await terminate(child)).code).toBe(0);
    }
  });

  it('`triad resume <runId>` resumes a suspended run and drives it here', async () => {
    const cli = spawn(process.execPath, [CLI, 'resume', runIds[1], '--json'], {
      env: { ...process.env, TRIAD_DATA_DIR: dataDir, TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline', TRIAD_USER: 'oncall', ANTHROPIC_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    cli.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    cli.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => cli.once('exit', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toMatchObject({ runId: runIds[1], status: 'awaiting_review' });
    const events = await runEvents(store, runIds[1]);
    expect(events.find((e) => e.type === 'RunResumed')?.data).toMatchObject({ by: 'user:oncall' });
  });

  it("another process's recovery resumes the rest (RunResumed, DriverClaimed) and they finish", async () => {
    const child = spawnChild({ ...env, CRASH_LATENCY_MS: '5-20' });
    children.push(child);
    const { owner: recoverer } = await child.ready;
    await waitFor(
      'every run to reach the human gate',
      async () => (await Promise.all(runIds.map((id) => statusOf(store, id)))).every((s) => s === 'awaiting_review'),
      30_000,
    );
    expect((await terminate(child)).code).toBe(0);
    for (const runId of runIds.slice(2)) {
      const events = await runEvents(store, runId);
      const before = suspendedAt.get(runId)!;
      const after = events.slice(before.length);
      expect(after[0]).toMatchObject({ type: 'RunResumed', data: { by: `system:${recoverer}` } });
      expect(after[1]).toMatchObject({ type: 'DriverClaimed', data: { owner: recoverer } });
    }
  });

  it('no run repeated a recorded turn: history before the suspension is untouched, no call or tool recorded twice', async () => {
    const calls = jsonLines<ModelCallLine>(callsLog).filter((c) => !c.aborted);
    for (const runId of runIds) {
      const events = await runEvents(store, runId);
      const before = suspendedAt.get(runId)!;
      expect(events.slice(0, before.length).map((e) => e.id)).toEqual(before.map((e) => e.id));
      expect(duplicates(events)).toEqual({ modelCalls: [], toolCalls: [] });
      // A call made after its response was recorded would be a repeated turn.
      const recordedAt = completionsByCallKey(runId, events);
      const made = calls.filter((c) => c.runId === runId);
      expect(made.filter((c) => !recordedAt.has(callKey(c)) || c.t > recordedAt.get(callKey(c))!)).toEqual(
        // The CLI's process used the plain offline model, which logs nothing; the others logged every call.
        [],
      );
      const types = events.map((e) => e.type);
      expect(types.filter((t) => t === 'RunSuspended')).toHaveLength(1);
      expect(types.filter((t) => t === 'RunResumed')).toHaveLength(1);
    }
  });
});
