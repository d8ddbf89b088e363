import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import { SqliteEventStore } from '../../src/events/event-store/sqlite.event-store';
import type { LaunchRunInput } from '../../src/team/commands/launch';
import {
  callKey,
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
  statusOf,
  terminate,
  waitFor,
} from './crash-support';

// kill -9 in runs whose roles plan first: hybrid executors, a hybrid and a plan_execute reviewer, a
// plan_execute architect and executor, two roles failing a step and replanning. Every other process
// stalls each run's model calls after a random number of them (CRASH_PAUSE_AFTER), so that it is
// killed with a call in flight, mostly inside a step; the others are killed after a random number
// of events. The plan, the step and the turn are all folded from the log: after any kill, each plan
// and step event must appear once, in the order a run left alone records them, and no model turn twice.

jest.setTimeout(600_000);

const KILLS = 4;
const TTL_MS = 300;

const launches: LaunchRunInput[] = [
  {
    goal: 'Loop crash run 0: three files',
    acceptanceCriteria: ['file a.txt contains "alpha"', 'file b.txt contains "beta"', 'file c.txt exists'],
    team: { executor: { loop: { strategy: 'hybrid' } }, reviewer: { loop: { strategy: 'plan_execute' } } },
  },
  {
    goal: 'Loop crash run 1: a failed step, a new plan',
    acceptanceCriteria: ['file d.txt contains "delta"', 'fail the first step once'],
    team: { architect: { loop: { strategy: 'plan_execute' } }, executor: { loop: { strategy: 'hybrid' } } },
  },
  {
    goal: 'Loop crash run 2: two files',
    acceptanceCriteria: ['file e.txt contains "epsilon"', 'file f.txt contains "phi"'],
    team: { executor: { loop: { strategy: 'plan_execute' } }, reviewer: { loop: { strategy: 'hybrid' } } },
  },
];
const FILES: Record<string, string>[] = [{ 'a.txt': 'alpha', 'b.txt': 'beta', 'c.txt': '' }, { 'd.txt': 'delta' }, { 'e.txt': 'epsilon', 'f.txt': 'phi' }];

type LoopData = { role: string; index?: number; steps?: string[]; replan?: number };

/**
 * The loop events of one run, checked phase by phase against the only order an uninterrupted run
 * records them in: a plan, then steps 1..n each started once and then completed (or failed, which a
 * new plan follows, numbered in turn). Returns what is wrong, or [] when nothing is.
 */
function loopOrderProblems(events: RecordedEvent[]): string[] {
  const problems: string[] = [];
  let phase = '';
  // Per phase: what may come next.
  let due: { kind: 'plan' | 'replan' | 'start' | 'end' | 'finished'; index: number; of: number; replans: number } = { kind: 'finished', index: 0, of: 0, replans: 0 };
  for (const e of events) {
    const d = e.data as LoopData & { iteration?: number };
    const where = `${phase} r${e.revision} ${e.type}`;
    if (e.type === 'PhaseStarted') {
      if (due.kind !== 'finished' && due.kind !== 'plan') problems.push(`${phase}: the phase ended with its loop at ${due.kind}`);
      phase = `${d.role}/${d.iteration}`;
      due = { kind: 'plan', index: 0, of: 0, replans: 0 };
      continue;
    }
    if (!e.type.startsWith('Loop') || e.type === 'LoopStrategyChosen') continue;
    switch (e.type) {
      case 'LoopPlanRecorded':
        if (due.kind !== 'plan' || due.index !== 0) problems.push(`${where}: a plan where ${due.kind} was due`);
        due = { ...due, kind: 'start', index: 1, of: d.steps!.length };
        break;
      case 'LoopReplanned':
        if (due.kind !== 'replan' || d.replan !== due.replans + 1) problems.push(`${where}: replan ${d.replan} where ${due.kind} was due`);
        due = { kind: 'start', index: 1, of: d.steps!.length, replans: d.replan! };
        break;
      case 'LoopStepStarted':
        if (due.kind !== 'start' || d.index !== due.index) problems.push(`${where}: step ${d.index} started where ${due.kind} ${due.index} was due`);
        due = { ...due, kind: 'end' };
        break;
      case 'LoopStepCompleted':
        if (due.kind !== 'end' || d.index !== due.index) problems.push(`${where}: step ${d.index} completed where ${due.kind} ${due.index} was due`);
        due = due.index === due.of ? { ...due, kind: 'finished' } : { ...due, kind: 'start', index: due.index + 1 };
        break;
      case 'LoopStepFailed':
        if (due.kind !== 'end' || d.index !== due.index) problems.push(`${where}: step ${d.index} failed where ${due.kind} ${due.index} was due`);
        due = { ...due, kind: 'replan' };
        break;
    }
  }
  return problems;
}

describe('kill -9 in plan-first loops', () => {
  it('every run reaches its gate; each plan and step event once, in order; no model turn recorded twice', async () => {
    const { dir, dataDir, callsLog, env } = crashScene('triad-crash-loops-', {
      TRIAD_LEASE_TTL_MS: String(TTL_MS),
      TRIAD_CHECKPOINT_EVERY_TURNS: '3',
      CRASH_LATENCY_MS: '5-30',
    });
    const children: Child[] = [];
    let store: SqliteEventStore | undefined;
    try {
      let pauseAfter = 2 + Math.floor(Math.random() * 6);
      // Whether the process being killed next stalls its runs' calls (every other one does).
      let paused = true;
      let child = spawnChild({ ...env, CRASH_LAUNCH: JSON.stringify(launches), CRASH_PAUSE_AFTER: String(pauseAfter) });
      children.push(child);
      const runIds = (await child.ready).launched;
      expect(runIds).toHaveLength(launches.length);
      store = new SqliteEventStore({ file: join(dataDir, 'triad.db') });
      const active = async () => (await Promise.all(runIds.map((id) => statusOf(store!, id)))).map((s) => ['queued', 'planning', 'executing', 'reviewing'].includes(s));

      let midStepKills = 0;
      for (let kill = 0; kill < KILLS || (midStepKills === 0 && kill < KILLS * 2); kill++) {
        const pid = (await child.ready).pid;
        if (paused) {
          // Stalled: every run still in progress has its call beyond the pause in flight here.
          await waitFor(
            'every active run to stall in a model call',
            async () => {
              const calls = jsonLines<ModelCallLine>(callsLog).filter((c) => c.pid === pid && !c.aborted);
              const still = await active();
              return runIds.every((id, i) => !still[i] || calls.filter((c) => c.runId === id).length > pauseAfter);
            },
            60_000,
          ).catch(() => undefined);
        } else {
          const from = await store.headPosition();
          const steps = 1 + Math.floor(Math.random() * 25);
          await waitFor('progress', async () => (await store!.headPosition()) >= from + steps, 20_000, 10).catch(() => undefined);
        }
        await killHard(child);
        const states = await Promise.all(runIds.map((id) => runState(store!, id)));
        if (states.some((s) => s.stepLoop?.inStep)) midStepKills++;
        if (process.env.CRASH_DEBUG) process.stdout.write(`kill ${kill}: ${states.map((s) => `${String(s.team.value)}${s.stepLoop?.inStep ? `@step${s.stepLoop.current + 1}` : ''}`).join(' ')}\n`);
        if ((await active()).every((a) => !a)) break;
        pauseAfter = 2 + Math.floor(Math.random() * 6);
        // Every other process stalls; the one after the last kill never does.
        paused = !paused && kill + 1 < KILLS;
        child = spawnChild(paused ? { ...env, CRASH_PAUSE_AFTER: String(pauseAfter) } : env);
        children.push(child);
        await child.ready;
      }
      // The last process runs undisturbed (it was started without a pause, or every run had ended).
      if (children.at(-1)!.process.exitCode === null && children.at(-1)!.process.signalCode === null) {
        await waitFor('every run at its gate', async () => (await Promise.all(runIds.map((id) => statusOf(store!, id)))).every((s) => s === 'awaiting_review'), 240_000);
        await terminate(child);
      }

      expect(midStepKills).toBeGreaterThanOrEqual(1);
      const calls = jsonLines<ModelCallLine>(callsLog).filter((c) => !c.aborted);
      for (const [i, runId] of runIds.entries()) {
        const events = await runEvents(store, runId);
        expect({ runId, status: await statusOf(store, runId) }).toEqual({ runId, status: 'awaiting_review' });
        expect(duplicates(events)).toEqual({ modelCalls: [], toolCalls: [] });
        expect(loopOrderProblems(events)).toEqual([]);
        // No model call made again once its response was in the log.
        const recordedAt = completionsByCallKey(runId, events);
        const late = calls.filter((c) => c.runId === runId).filter((c) => {
          const at = recordedAt.get(callKey(c));
          return at === undefined || c.t > at;
        });
        expect(late).toEqual([]);
        for (const [file, content] of Object.entries(FILES[i])) expect(readFileSync(join(dataDir, 'workspaces', runId, file), 'utf8')).toContain(content);
      }
      // The strategies ran as configured: plans by the roles given one, a replan in run 1.
      const loopRoles = async (id: string) => [...new Set((await runEvents(store!, id)).filter((e) => e.type === 'LoopPlanRecorded').map((e) => (e.data as LoopData).role))];
      expect(await loopRoles(runIds[0])).toEqual(['executor', 'reviewer']);
      expect(await loopRoles(runIds[1])).toEqual(['architect', 'executor']);
      expect(await loopRoles(runIds[2])).toEqual(['executor', 'reviewer']);
      // Run 1's criterion has each plan-first role fail its first step once: one new plan each.
      expect((await runEvents(store, runIds[1])).filter((e) => e.type === 'LoopReplanned').map((e) => (e.data as LoopData).role)).toEqual(['architect', 'executor']);
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
