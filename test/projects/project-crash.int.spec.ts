import { join } from 'node:path';
import { SqliteEventStore } from '../../src/events/event-store/sqlite.event-store';
import { foldProject, runIdForIdempotencyKeyOf } from './project-support';
import { toProjectStreamId, type ProjectEvent } from '../../src/projects/domain/project-events';
import { toRunStreamId } from '../../src/team/domain/run-events';
import { tempDir } from '../support/temp-dir';
import { killHard, spawnChild, terminate, waitFor, type Child } from '../recovery/crash-support';

// One kill -9 in the middle of a project: the first process is stopped (SIGKILL) while the first
// task's run is in flight (its model stops answering after a few calls, so the kill certainly lands
// mid-run); a second process picks the project up from the store. No task is launched twice (one
// run per task, one RunLaunched per run, no second attempt) and the project finishes.

jest.setTimeout(180_000);

const task = (key: string, file: string, dependsOn: string[] = []) => ({ key, goal: `Write ${file}`, acceptanceCriteria: [`file ${file} exists`], dependsOn });

it('a project killed mid-task resumes from its events: every task launched once, the project completes', async () => {
  const dir = tempDir('triad-project-crash-');
  const dataDir = join(dir.path, 'data');
  const env = { TRIAD_DATA_DIR: dataDir, TRIAD_STORE: 'sqlite', TRIAD_LEASE_TTL_MS: '300', TRIAD_RECOVERY_INTERVAL_MS: '100', CRASH_LATENCY_MS: '1-5' };
  const children: Child[] = [];
  let store: SqliteEventStore | undefined;
  try {
    const project = { goal: 'Three files', tasks: [task('a', 'a.txt'), task('b', 'b.txt', ['a']), task('c', 'c.txt', ['a'])], reviewPolicy: { humanGate: false } };
    const first = spawnChild({ ...env, CRASH_PROJECTS: JSON.stringify([project]), CRASH_PAUSE_AFTER: '2' });
    children.push(first);
    const [projectId] = (await first.ready).projects;
    store = new SqliteEventStore({ file: join(dataDir, 'triad.db') });
    const events = async () => (await store!.readStream(toProjectStreamId(projectId))) as unknown as Array<ProjectEvent & { revision: number }>;

    // Task a's run is launched and its driver has made its model calls (then waits for ever).
    const runA = await waitFor('task a to start', async () => (await events()).find((e) => e.type === 'TaskStarted')?.data as { runId: string } | undefined, 30_000);
    await waitFor('task a run in flight', async () => (await store!.readStream(toRunStreamId(runA.runId))).filter((e) => e.type === 'ModelCallCompleted').length >= 2, 30_000);
    await killHard(first);

    const second = spawnChild(env);
    children.push(second);
    await second.ready;
    const done = await waitFor(
      'the project to complete',
      async () => {
        const state = foldProject(await events(), projectId);
        return state.status === 'completed' || state.status === 'failed' ? state : undefined;
      },
      120_000,
    );
    await terminate(second);

    expect(done.status).toBe('completed');
    expect(done.tasks.map((t) => [t.key, t.status, t.attempt])).toEqual([
      ['a', 'completed', 1],
      ['b', 'completed', 1],
      ['c', 'completed', 1],
    ]);
    const started = (await events()).filter((e) => e.type === 'TaskStarted');
    expect(started.map((e) => (e.data as { key: string }).key).sort()).toEqual(['a', 'b', 'c']);
    for (const t of done.tasks) {
      const run = await store.readStream(toRunStreamId(t.runId!));
      expect(run.filter((e) => e.type === 'RunLaunched')).toHaveLength(1);
      expect(run[0].data).toMatchObject({ project: { projectId, taskKey: t.key, attempt: 1 } });
      // No second attempt's run exists.
      expect(await store.streamRevision(toRunStreamId(runIdForIdempotencyKeyOf(projectId, t.key, 2)))).toBeNull();
    }
    // Task a's run was interrupted: a driver before the kill and one after it claimed it.
    const runAEvents = await store.readStream(toRunStreamId(runA.runId));
    expect(runAEvents.filter((e) => e.type === 'DriverClaimed').length).toBeGreaterThanOrEqual(2);
  } finally {
    for (const c of children) await killHard(c).catch(() => undefined);
    await store?.close();
    dir.remove();
  }
});
