import { commandPathFor } from '../../src/events/command-handling';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteEventStore } from '../../src/events/event-store/sqlite.event-store';
import { launchRun, type LaunchRunInput } from '../../src/team/commands/launch';
import { OFFLINE_MODEL_ID } from '../../src/team/models/offline.model';
import { newRunId } from '../../src/shared/system';
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
  spawnChild,
  statusOf,
  terminate,
  waitFor,
} from './crash-support';

// Crash recovery with real kills: a triad process (the real app, SQLite store, offline model with
// 5-30 ms latency) drives several runs and is killed with SIGKILL at random moments, over and over;
// each restart's RecoveryService takes the runs over once their leases (300 ms) have expired.

// Each restart boots the app from dist/: seconds apiece on a loaded machine, over KILLS to 2×KILLS restarts.
jest.setTimeout(900_000);

// Kills per suite run (TRIAD_CRASH_KILLS for a longer soak): at least this many, half of them mid-run.
const KILLS = Number(process.env.TRIAD_CRASH_KILLS ?? 8);
const TTL_MS = 300;

// Two unmet criteria per executor iteration (the offline model's pace): four criteria take two iterations.
const CRITERIA = ['file alpha.txt contains "alpha"', 'file beta.txt contains "beta"', 'file gamma.txt exists', 'file delta/notes.md contains "delta"'];
const launchInput = (i: number): LaunchRunInput => ({
  goal: `Crash-test run ${i}: write the four files`,
  acceptanceCriteria: CRITERIA,
  maxIterations: 3,
  reviewPolicy: { humanGate: i % 2 === 0 },
});
const endStatus = (input: LaunchRunInput) => (input.reviewPolicy?.humanGate ? 'awaiting_review' : 'completed');

describe('kill -9 at random moments', () => {
  it('every run reaches its end; no model turn or tool call is recorded twice; no recorded turn is called again', async () => {
    const { dir, dataDir, callsLog, env } = crashScene(
      'triad-crash-',
      {
        TRIAD_LEASE_TTL_MS: String(TTL_MS),
        TRIAD_CHECKPOINT_EVERY_TURNS: '3',
        CRASH_LATENCY_MS: '5-30',
        // The architect's two turns would be over in ~50 ms: slower, so that kills land in planning too.
        CRASH_ROLE_LATENCY_MS: 'architect=60-150',
      },
      { logEvents: true },
    );
    const children: Child[] = [];
    let store: SqliteEventStore | undefined;
    try {
      // The first process launches two runs; two more are launched (as another process would,
      // straight into the store) at a quarter, half and three quarters of the restarts, so that the kills keep landing in runs
      // at every stage, planning included.
      const inputs = [launchInput(0), launchInput(1)];
      let child = spawnChild({ ...env, CRASH_LAUNCH: JSON.stringify(inputs) });
      children.push(child);
      const runIds = [...(await child.ready).launched];
      expect(runIds).toHaveLength(2);
      store = new SqliteEventStore({ file: join(dataDir, 'triad.db') });
      const launchHere = async () => {
        const input = launchInput(inputs.length);
        const { runId } = await launchRun(commandPathFor(store!), input, { runId: newRunId(), launchedBy: 'user:crash-test', now: new Date(), provider: 'offline', defaultModel: OFFLINE_MODEL_ID });
        inputs.push(input);
        runIds.push(runId);
      };

      const phasesHit = new Set<string>();
      // Runs a kill interrupted after a driver had started them: one driver before the kill, another after.
      const interrupted = new Set<string>();
      let midRunKills = 0;
      // At least KILLS kills, and more (up to twice as many) until half of them landed mid-run: the
      // moments are random, so the loop makes sure the coverage the assertions below ask for.
      let kills = 0;
      const everyPhaseHit = () => ['planning', 'executing', 'reviewing'].every((p) => phasesHit.has(p));
      // Two more runs at a quarter, half and three quarters of the kills.
      const moreRunsAt = new Set([Math.floor(KILLS / 4), Math.floor(KILLS / 2), Math.floor((3 * KILLS) / 4)]);
      for (let kill = 0; kill < KILLS || ((midRunKills < KILLS / 2 || !everyPhaseHit()) && kill < KILLS * 2); kill++) {
        kills = kill + 1;
        // Killed after a random amount of progress rather than a random time: on a loaded machine a
        // restarted process may spend any fixed time just taking the leases over, and the kills must
        // land inside runs. (Nothing in flight: no progress comes, and the kill falls due anyway.)
        // From half the kills on, a phase no kill has landed in yet is waited for (a review's turns
        // are short: random moments alone may miss it).
        const missing = ['planning', 'executing', 'reviewing'].filter((p) => !phasesHit.has(p));
        if (kill >= KILLS / 2 && missing.length > 0) {
          const inMissingPhase = async () => (await Promise.all(runIds.map((id) => statusOf(store!, id)))).some((s) => missing.includes(s));
          await waitFor(`a run in ${missing.join(' or ')}`, inMissingPhase, 20_000, 5).catch(() => undefined);
        } else {
          const from = await store!.headPosition();
          const steps = 1 + Math.floor(Math.random() * 30);
          await waitFor('progress', async () => (await store!.headPosition()) >= from + steps, 20_000, 10).catch(() => undefined);
        }
        await killHard(child);
        const statuses = await Promise.all(runIds.map((id) => statusOf(store!, id)));
        const active = statuses.filter((s) => ['queued', 'planning', 'executing', 'reviewing'].includes(s));
        for (const s of active) phasesHit.add(s);
        statuses.forEach((s, i) => ['planning', 'executing', 'reviewing'].includes(s) && interrupted.add(runIds[i]));
        if (active.length > 0) midRunKills++;
        if (process.env.CRASH_DEBUG) process.stdout.write(`kill ${kill}: ${statuses.join(' ')}\n`);
        // Until a kill has landed in planning, every restart also brings a new run.
        if (moreRunsAt.has(kill)) for (let n = 0; n < 2; n++) await launchHere();
        else if (kill >= Math.floor(KILLS * 0.6) && !phasesHit.has('planning')) await launchHere();
        // Nothing left in flight: a new run, so that the next kill lands mid-run again.
        else if (active.length === 0) await launchHere();
        child = spawnChild(env);
        children.push(child);
        await child.ready;
      }

      // The last process runs undisturbed until every run has reached its end.
      await waitFor(
        'every run to reach its end',
        async () => (await Promise.all(runIds.map((id, i) => statusOf(store!, id).then((s) => s === endStatus(inputs[i]))))).every(Boolean),
        240_000,
      );
      await terminate(child);

      expect(kills).toBeGreaterThanOrEqual(KILLS);
      expect(children).toHaveLength(kills + 1);
      // The kills landed inside every phase, and most of them while runs were in progress.
      expect([...phasesHit]).toEqual(expect.arrayContaining(['planning', 'executing', 'reviewing']));
      expect(midRunKills).toBeGreaterThanOrEqual(KILLS / 2);
      expect(interrupted.size).toBeGreaterThanOrEqual(2);

      const calls = jsonLines<ModelCallLine>(callsLog).filter((c) => !c.aborted);
      let completedTotal = 0;
      let failedTotal = 0;
      for (const [i, runId] of runIds.entries()) {
        const events = await runEvents(store, runId);
        expect(await statusOf(store, runId)).toBe(endStatus(inputs[i]));
        expect(duplicates(events)).toEqual({ modelCalls: [], toolCalls: [] });
        // Recovery took an interrupted run over: a driver before the kill and another after it claimed
        // it. (A run launched just before the last restart may be driven by that one process alone.)
        const claims = events.filter((e) => e.type === 'DriverClaimed').length;
        expect(claims).toBeGreaterThanOrEqual(interrupted.has(runId) ? 2 : 1);

        // Model calls actually made ≤ responses recorded + failed attempts + one lost call per crash.
        const completed = events.filter((e) => e.type === 'ModelCallCompleted').length;
        const failed = events.filter((e) => e.type === 'ModelCallFailed').length;
        const made = calls.filter((c) => c.runId === runId);
        expect(made.length).toBeGreaterThanOrEqual(completed);
        expect(made.length).toBeLessThanOrEqual(completed + failed + kills);
        completedTotal += completed;
        failedTotal += failed;

        // No call was made again once its response was in the log.
        const recordedAt = completionsByCallKey(runId, events);
        expect(recordedAt.size).toBe(completed);
        const late = made.filter((c) => {
          const at = recordedAt.get(callKey(c));
          return at === undefined || c.t > at;
        });
        expect(late).toEqual([]);

        // The workspace meets the acceptance criteria.
        const ws = join(dataDir, 'workspaces', runId);
        expect(readFileSync(join(ws, 'alpha.txt'), 'utf8')).toContain('alpha');
        expect(readFileSync(join(ws, 'beta.txt'), 'utf8')).toContain('beta');
        expect(readFileSync(join(ws, 'gamma.txt'), 'utf8')).toBeDefined();
        expect(readFileSync(join(ws, 'delta/notes.md'), 'utf8')).toContain('delta');
        // Two iterations were needed.
        expect(events.filter((e) => e.type === 'IterationStarted')).toHaveLength(1);
      }
      expect(calls.length).toBeLessThanOrEqual(completedTotal + failedTotal + kills * runIds.length);
      const crashes = calls.length - completedTotal - failedTotal;
      process.stdout.write(
        `crash test: ${kills} kills (${midRunKills} mid-run, phases ${[...phasesHit].join('/')}), ${calls.length} model calls for ${completedTotal} recorded turns (${crashes} lost to kills)\n`,
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
