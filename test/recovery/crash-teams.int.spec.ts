import { commandPathFor } from '../../src/events/command-handling';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import { SqliteEventStore } from '../../src/events/event-store/sqlite.event-store';
import { toProjectStreamId, type ProjectEvent, type TaskStartedData } from '../../src/projects/domain/project-events';
import { isSubAgentEvent, toRunStreamId, type RunLaunchedData, type SubAgentEvent } from '../../src/team/domain/run-events';
import { runStatus } from '../../src/team/domain/run-state';
import { SUB_AGENT_TERMINAL } from '../../src/team/domain/sub-agents';
import { launchRun, type LaunchRunInput } from '../../src/team/commands/launch';
import { OFFLINE_MODEL_ID } from '../../src/team/models/offline.model';
import { newRunId } from '../../src/shared/system';
import { foldProject, runIdForIdempotencyKeyOf } from '../projects/project-support';
import {
  type Child,
  completionsByCallKey,
  crashScene,
  duplicates,
  jsonLines,
  killHard,
  type ModelCallLine,
  runEvents,
  runState,
  spawnChild,
  terminate,
  waitFor,
} from './crash-support';

// kill -9 at random moments of runs that delegate to sub-agents and of two projects (graphs of team
// runs, one planned by the architect): a triad process (the real app, SQLite, the offline model with 5-30 ms latency) is killed
// over and over, each restart's recovery taking the runs over and its project reactor the projects.
// Every step of a sub-agent is an event of its run's stream and every task launch an event of the
// project's: the log alone must keep a finished sub-agent finished, a sub-agent's turn recorded
// once, and a task's run launched once.

jest.setTimeout(600_000);

// Kills per suite run (TRIAD_CRASH_KILLS for a longer soak, as in crash.int.spec.ts): at least this many.
const KILLS = Math.max(3, Math.round((Number(process.env.TRIAD_CRASH_KILLS ?? 8) * 3) / 4));

// Two delegated criteria: the executor spawns a coder (executor/1), then a tester (executor/2); each
// reads, writes and answers (three turns). Ten such runs at once, with the project's, are more
// sub-agents than a process runs at a time (8): some wait queued, and kills land there too.
const RUNS = 10;
const delegating = (i: number): LaunchRunInput => ({
  goal: `Crash-test run ${i}: delegate two files`,
  acceptanceCriteria: ['delegate to a coder: file alpha.txt contains "alpha"', 'delegate to a tester: file beta.txt contains "beta"'],
  reviewPolicy: { humanGate: true },
});
// Task a first (one of its criteria delegated), then b and c in parallel; one human gate for the project.
const GIVEN = {
  goal: 'Crash-test project',
  tasks: [
    { key: 'a', goal: 'Write a.txt', acceptanceCriteria: ['delegate to a coder: file a.txt contains "a-done"', 'file a2.txt exists'] },
    { key: 'b', goal: 'Write b.txt', acceptanceCriteria: ['file b.txt contains "b-done"'], dependsOn: ['a'] },
    { key: 'c', goal: 'Write c.txt', acceptanceCriteria: ['delegate to a coder: file c.txt contains "c-done"'], dependsOn: ['a'] },
  ],
  reviewPolicy: { humanGate: true },
};
// Planned by the architect (one model turn): task-1 for the first criterion, then task-2 after it.
const DECOMPOSED = {
  goal: 'Crash-test project planned by the architect',
  acceptanceCriteria: ['delegate to a coder: file p1.txt contains "p1-done"', 'file p2.txt contains "p2-done"'],
  reviewPolicy: { humanGate: true },
};
const TASK_KEYS = [['a', 'b', 'c'], ['task-1', 'task-2']];
// What each run's workspace holds in the end, and how many sub-agents it spawned.
const EXPECTED: Record<string, { files: Record<string, string>; subAgents: number }> = {
  run: { files: { 'alpha.txt': 'alpha', 'beta.txt': 'beta' }, subAgents: 2 },
  a: { files: { 'a.txt': 'a-done', 'a2.txt': '' }, subAgents: 1 },
  b: { files: { 'b.txt': 'b-done' }, subAgents: 0 },
  c: { files: { 'c.txt': 'c-done' }, subAgents: 1 },
  'task-1': { files: { 'p1.txt': 'p1-done' }, subAgents: 1 },
  'task-2': { files: { 'p2.txt': 'p2-done' }, subAgents: 0 },
};

const ACTIVE = ['queued', 'planning', 'executing', 'reviewing'];
type ProjectRecorded = ProjectEvent & { revision: number };

/** A run's sub-agent events by path, in order. */
function subAgentEventsByPath(events: RecordedEvent[]): Map<string, RecordedEvent[]> {
  const byPath = new Map<string, RecordedEvent[]>();
  for (const e of events) {
    if (!isSubAgentEvent(e)) continue;
    const path = (e.data as SubAgentEvent['data']).path;
    byPath.set(path, [...(byPath.get(path) ?? []), e]);
  }
  return byPath;
}

const isTerminal = (type: string) => ['SubAgentCompleted', 'SubAgentFailed', 'SubAgentCancelled', 'SubAgentTimedOut'].includes(type);

describe('kill -9 at random moments of runs with sub-agents and of projects', () => {
  it('every run and project reaches its gate or end; no ended sub-agent runs again; no sub-agent turn, plan or task launch is recorded twice', async () => {
    const { dir, dataDir, callsLog, env } = crashScene('triad-crash-teams-', {
      TRIAD_LEASE_TTL_MS: '300',
      TRIAD_CHECKPOINT_EVERY_TURNS: '3',
      CRASH_LATENCY_MS: '5-30',
    });
    const children: Child[] = [];
    let store: SqliteEventStore | undefined;
    try {
      // The first process's architects never answer: the first kill lands while every run and the
      // second project are being planned.
      let child = spawnChild({ ...env, CRASH_ROLE_LATENCY_MS: 'architect=600000-600000', CRASH_LAUNCH: JSON.stringify(Array.from({ length: RUNS }, (_, i) => delegating(i))), CRASH_PROJECTS: JSON.stringify([GIVEN, DECOMPOSED]) });
      children.push(child);
      const info = await child.ready;
      const runIds = [...info.launched];
      const projectIds = info.projects;
      store = new SqliteEventStore({ file: join(dataDir, 'triad.db') });
      const projectEvents = async (id: string) => (await store!.readStream(toProjectStreamId(id))) as unknown as ProjectRecorded[];
      const projects = async () => Promise.all(projectIds.map(async (id) => foldProject(await projectEvents(id), id)));
      const launchHere = async () => {
        const { runId } = await launchRun(commandPathFor(store!), delegating(runIds.length), {
          runId: newRunId(),
          launchedBy: 'user:crash-test',
          now: new Date(),
          provider: 'offline',
          defaultModel: OFFLINE_MODEL_ID,
        });
        runIds.push(runId);
      };

      // Kills that landed while a sub-agent was running (or queued), and while a task run was in flight.
      let subAgentKills = 0;
      let taskKills = 0;
      let kills = 0;
      let planningAtFirstKill = false;
      for (let kill = 0; kill < KILLS || ((subAgentKills < 2 || taskKills < 1) && kill < KILLS * 3); kill++) {
        kills = kill + 1;
        // After a random amount of progress, not time: a loaded machine may spend any time on a boot.
        // Every other kill first waits for a sub-agent's step, so that kills land inside sub-agents.
        let from = await store.headPosition();
        if (kill === 0) {
          await waitFor('the architect asked to plan the project', async () => jsonLines<ModelCallLine>(callsLog).some((c) => c.runId === projectIds[1]), 60_000);
        } else if (kill % 2 === 1) {
          from = await waitFor('a sub-agent step', async () => (await store!.readAll({ after: from })).find(isSubAgentEvent)?.position, 20_000, 10).catch(() => from);
        }
        const steps = kill === 0 ? 0 : Math.floor(Math.random() * (kill % 2 === 1 ? 4 : 25));
        await waitFor('progress', async () => (await store!.headPosition()) >= from + steps, 20_000, 10).catch(() => undefined);
        await killHard(child);

        const states = await Promise.all(runIds.map((id) => runState(store!, id)));
        if (kill === 0) planningAtFirstKill = (await projects())[1].status === 'planning';
        const tasks = (await projects()).flatMap((p) => p.tasks);
        const taskStates = await Promise.all(tasks.filter((t) => t.runId).map((t) => runState(store!, t.runId!)));
        const runningSubAgent = [...states, ...taskStates].some((s) => Object.values(s.subAgents).some((r) => r.status === 'running' || r.status === 'queued'));
        const taskInFlight = tasks.some((t) => t.status === 'running');
        if (runningSubAgent) subAgentKills++;
        if (taskInFlight) taskKills++;
        if (process.env.CRASH_DEBUG) process.stdout.write(`kill ${kill}: sub-agent ${runningSubAgent}, task ${taskInFlight}, projects ${(await projects()).map((p) => p.status).join(' ')}\n`);
        // Nothing with a sub-agent left in flight among the runs: one more, so that later kills can land in one.
        const runsActive = await Promise.all(runIds.map(async (id) => ACTIVE.includes(runStatus(await runState(store!, id)))));
        if (!runsActive.some(Boolean)) await launchHere();
        child = spawnChild(env);
        children.push(child);
        await child.ready;
      }

      // The last process runs undisturbed until every run and the project are at their gate or end.
      const atGate = async (id: string) => runStatus(await runState(store!, id)) === 'awaiting_review';
      await waitFor(
        'every run and project at their gate',
        async () => (await Promise.all(runIds.map(atGate))).every(Boolean) && (await projects()).every((p) => p.status === 'awaiting_review'),
        240_000,
      );
      await terminate(child);

      expect(kills).toBeGreaterThanOrEqual(KILLS);
      expect(subAgentKills).toBeGreaterThanOrEqual(1);
      expect(taskKills).toBeGreaterThanOrEqual(1);
      expect(planningAtFirstKill).toBe(true);

      // The projects: planned once, every task completed at its first attempt, each launched once.
      const done = await projects();
      const launchesByTask = new Map<string, string[]>();
      for (const e of await store.readAll()) {
        const link = e.type === 'RunLaunched' ? (e.data as RunLaunchedData).project : undefined;
        if (link) launchesByTask.set(`${link.projectId}/${link.taskKey}`, [...(launchesByTask.get(`${link.projectId}/${link.taskKey}`) ?? []), e.streamId]);
      }
      for (const [i, p] of done.entries()) {
        const recorded = await projectEvents(p.projectId);
        const keys = TASK_KEYS[i];
        // Planned once, though the first planner was killed in its architect call (then made again).
        expect(recorded.filter((e) => e.type === 'ProjectPlanned')).toHaveLength(1);
        expect(p.tasks.map((t) => [t.key, t.status, t.attempt])).toEqual(keys.map((k) => [k, 'completed', 1]));
        expect(recorded.filter((e) => e.type === 'TaskRetried')).toEqual([]);
        expect(recorded.filter((e) => e.type === 'TaskStarted').map((e) => (e.data as TaskStartedData).key).sort()).toEqual(keys);
        // Every run the store holds for a task of the project: one per task, and no second attempt.
        for (const t of p.tasks) {
          expect({ task: t.key, runs: launchesByTask.get(`${p.projectId}/${t.key}`) }).toEqual({ task: t.key, runs: [toRunStreamId(t.runId!)] });
          expect(await store.streamRevision(toRunStreamId(runIdForIdempotencyKeyOf(p.projectId, t.key, 2)))).toBeNull();
        }
      }
      expect([...launchesByTask.keys()]).toHaveLength(TASK_KEYS.flat().length);

      const calls = jsonLines<ModelCallLine & { subAgent?: string }>(callsLog).filter((c) => !c.aborted);
      // The architect's planning call cut short by the first kill was made again, and not after the plan was recorded.
      const planningCalls = calls.filter((c) => c.runId === projectIds[1]);
      const plannedAt = Date.parse((await store.readStream(toProjectStreamId(projectIds[1]))).find((e) => e.type === 'ProjectPlanned')!.recordedAt);
      expect(planningCalls.length).toBeGreaterThanOrEqual(2);
      expect(planningCalls.filter((c) => c.t > plannedAt)).toEqual([]);
      const runs = [...runIds.map((id) => ({ id, ...EXPECTED.run, end: 'awaiting_review' })), ...done.flatMap((p) => p.tasks).map((t) => ({ id: t.runId!, ...EXPECTED[t.key], end: 'completed' }))];
      let subAgents = 0;
      let continuedAfterKill = 0;
      let queuedTotal = 0;
      for (const run of runs) {
        const events = await runEvents(store, run.id);
        const state = await runState(store, run.id);
        expect({ run: run.id, status: runStatus(state) }).toEqual({ run: run.id, status: run.end });
        // The phase agents' turns: each recorded once.
        expect(duplicates(events)).toEqual({ modelCalls: [], toolCalls: [] });
        const completed = events.filter((e) => e.type === 'ModelCallCompleted').length;
        expect(completionsByCallKey(run.id, events).size).toBe(completed);

        const byPath = subAgentEventsByPath(events);
        queuedTotal += events.filter((e) => e.type === 'SubAgentQueued').length;
        expect({ run: run.id, subAgents: byPath.size }).toEqual({ run: run.id, subAgents: run.subAgents });
        for (const [path, own] of byPath) {
          subAgents++;
          const types = own.map((e) => e.type);
          const where = `${run.id} ${path}: ${types.join(',')}`;
          // Spawned once, started at most once (a crash leaves it running; it is continued, not started again).
          expect({ where, spawned: types.filter((t) => t === 'SubAgentSpawned').length }).toEqual({ where, spawned: 1 });
          expect({ where, started: types.filter((t) => t === 'SubAgentStarted').length }).toEqual({ where, started: 1 });
          expect(types.filter((t) => t === 'SubAgentQueued').length).toBeLessThanOrEqual(1);
          // One end, the last of its events: nothing of it after it ended.
          expect({ where, ends: types.filter(isTerminal) }).toEqual({ where, ends: ['SubAgentCompleted'] });
          expect({ where, last: types[types.length - 1] }).toEqual({ where, last: 'SubAgentCompleted' });
          expect(SUB_AGENT_TERMINAL.has(state.subAgents[path].status)).toBe(true);
          // Its turns: each recorded once, in order.
          const turns = own.filter((e) => e.type === 'SubAgentModelCalled').map((e) => (e.data as { turn: number }).turn);
          expect({ where, turns }).toEqual({ where, turns: turns.map((_, i) => i + 1) });
          // No model call of it once its turn was recorded, and none at all once it ended.
          const recordedAt = new Map(own.filter((e) => e.type === 'SubAgentModelCalled').map((e) => [(e.data as { turn: number }).turn, Date.parse(e.recordedAt)]));
          const endedAt = Date.parse(own[own.length - 1].recordedAt);
          const made = calls.filter((c) => c.runId === run.id && c.subAgent === path);
          // A sub-agent's request holds its conversation (two messages a turn) and the new user message.
          const late = made.filter((c) => c.t > endedAt || c.t > (recordedAt.get((c.messages! + 1) / 2) ?? Infinity));
          expect({ where, late }).toEqual({ where, late: [] });
          expect(made.length).toBeGreaterThanOrEqual(turns.length);
          expect(made.length).toBeLessThanOrEqual(turns.length + kills);
          // Continued by another process than the one that started it.
          const claims = events.filter((e) => e.type === 'DriverClaimed' && e.revision > own[0].revision && e.revision < own[own.length - 1].revision);
          if (claims.length > 0) continuedAfterKill++;
        }
        // Spawn calls: one sub-agent each.
        const spawnCalls = [...byPath.values()].map((own) => (own[0].data as { toolUseId: string }).toolUseId);
        expect(new Set(spawnCalls).size).toBe(spawnCalls.length);

        const ws = join(dataDir, 'workspaces', run.id);
        for (const [file, needle] of Object.entries(run.files)) expect(readFileSync(join(ws, file), 'utf8')).toContain(needle);
      }
      // A kill landed while a sub-agent was running: another process continued it.
      expect(continuedAfterKill).toBeGreaterThanOrEqual(1);
      process.stdout.write(
        `crash-teams test: ${kills} kills (${subAgentKills} with a sub-agent running, ${taskKills} with a task run in flight), ${runs.length} runs, ${subAgents} sub-agents (${continuedAfterKill} continued after a kill), ${calls.length} model calls, ${queuedTotal} queued\n`,
      );
      for (const c of children) expect(c.stderr).not.toMatch(/stopped on an error|Error:/);
    } catch (err) {
      for (const [i, c] of children.entries()) if (c.stderr.trim()) process.stderr.write(`--- child ${i} stderr ---\n${c.stderr}\n`);
      throw err;
    } finally {
      for (const c of children) await killHard(c);
      await store?.close();
      dir.remove();
    }
  });
});
