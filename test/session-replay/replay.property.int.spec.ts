import { commandPathFor } from '../../src/events/command-handling';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { join } from 'node:path';
import { CHECKPOINT_SCHEMA_VERSION, takeCheckpoint, type Checkpoint } from '../../src/checkpoint/checkpoint';
import { InMemoryCheckpointStore } from '../../src/checkpoint/in-memory.checkpoint-store';
import { SqliteCheckpointStore } from '../../src/checkpoint/sqlite.checkpoint-store';
import { foldRun, initialRunState, runStatus } from '../../src/team/domain/run-state';
import { loadRunState } from '../../src/team/runs/run-stream';
import { RunDriver } from '../../src/team/driver/run-driver';
import { randomUUID } from 'node:crypto';
import { createDefaultToolRegistry } from '../../src/team/tools/tool-registry';
import { contextOf, replayRun } from '../../src/session-replay/replay';
import { tempDir } from '../support/temp-dir';
import { comparable, driveRandomRun, NO_WAIT_RETRY, runScriptArb, scriptedModel, stateJson, launchInputOf } from './replay-support';
import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import { launchRun } from '../../src/team/commands/launch';
import { createWorkspace } from '../../src/team/tools/workspace';
import { toRunStreamId } from '../../src/team/domain/run-events';

// Session replay and checkpoints as properties over random scripted runs (fast-check): random tool
// calls (including failing ones), random verdict sequences and random limits.

jest.setTimeout(60_000);

// Random runs per property (TRIAD_PROPERTY_RUNS for a longer search).
const RUNS = Number(process.env.TRIAD_PROPERTY_RUNS ?? 20);

const fullReplay = (events: Parameters<typeof foldRun>[0], runId: string) => foldRun(events, initialRunState(runId));

describe('replayRun rebuilds what the driver held live', () => {
  it('(a) at every revision the driver appended, the replayed state equals the live state; every revision is complete', async () => {
    await fc.assert(
      fc.asyncProperty(runScriptArb, async (script) => {
        const run = await driveRandomRun(script);
        try {
          // The driver appended everything after RunLaunched, and reported every append.
          expect(run.live.flatMap((s) => s.types)).toEqual(run.events.slice(1).map((e) => e.type));
          for (const snap of run.live) {
            const { state, completeness } = replayRun(run.events, run.runId, snap.revision);
            expect(completeness).toEqual({ score: 1, events: snap.revision + 1, understood: snap.revision + 1, missing: [] });
            expect(JSON.parse(stateJson(state))).toEqual(JSON.parse(snap.state));
          }
          // Revisions inside a batch (a model call's start with its outcome) replay completely too.
          for (const e of run.events) {
            const { state, completeness } = replayRun(run.events, run.runId, e.revision);
            expect(state.revision).toBe(e.revision);
            expect(completeness.score).toBe(1);
          }
          // The context view (conversations per role, usage, machines) of the last revision is the live one.
          const { state, completeness } = replayRun(run.events, run.runId);
          expect(contextOf(state, completeness)).toEqual(contextOf(run.final, completeness));
        } finally {
          run.remove();
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('(b) a checkpoint taken at a random revision plus the tail equals the full replay (memory and SQLite stores)', async () => {
    const dir = tempDir('triad-cp-');
    const db = new Database(join(dir.path, 'cp.db'));
    const sqlite = new SqliteCheckpointStore(db);
    try {
      await fc.assert(
        fc.asyncProperty(runScriptArb, fc.nat(), fc.integer({ min: 1, max: 5 }), async (script, pick, every) => {
          // The driver takes its own checkpoints (phase boundaries, every N turns) as it goes.
          const driverCheckpoints = new InMemoryCheckpointStore();
          const run = await driveRandomRun(script, { checkpoints: driverCheckpoints, checkpointEveryTurns: every });
          try {
            const expected = comparable(fullReplay(run.events, run.runId));
            expect(comparable(run.final)).toEqual(expected);
            const warnings: string[] = [];
            const logger = { warn: (m: string) => warnings.push(m) };
            expect(comparable(await loadRunState(run.store, run.runId, driverCheckpoints, logger))).toEqual(expected);

            const k = pick % run.events.length;
            const checkpoint = takeCheckpoint(fullReplay(run.events.slice(0, k + 1), run.runId), 'manual', new Date());
            const memory = new InMemoryCheckpointStore();
            await memory.save(checkpoint);
            await sqlite.save(checkpoint);
            expect(comparable(await loadRunState(run.store, run.runId, memory, logger))).toEqual(expected);
            expect(comparable(await loadRunState(run.store, run.runId, sqlite, logger))).toEqual(expected);
            expect(warnings).toEqual([]);
          } finally {
            run.remove();
          }
        }),
        { numRuns: RUNS },
      );
    } finally {
      db.close();
      dir.remove();
    }
  });

  it('(b) a driver stopped at a random append and resumed from its checkpoint finishes the run without repeating a turn', async () => {
    await fc.assert(
      fc.asyncProperty(runScriptArb, fc.nat(), fc.integer({ min: 1, max: 4 }), async (script, pick, every) => {
        const dir = tempDir('triad-resume-');
        const store = new InMemoryEventStore();
        const checkpoints = new InMemoryCheckpointStore();
        const runId = `run_resume_${randomUUID().slice(0, 8)}`;
        await createWorkspace(dir.path, runId);
        await launchRun(commandPathFor(store), launchInputOf(script), { runId, launchedBy: 'user:ann', now: new Date(), provider: 'scripted', defaultModel: 'scripted' });
        // One model for both drivers: the script continues where the first driver stopped.
        const model = scriptedModel(script);
        let appends = 0;
        const stopAfter = 1 + (pick % 12);
        const deps = {
          store,
          model,
          tools: createDefaultToolRegistry(),
          clock: { now: () => Date.now() },
          ids: { newId: () => randomUUID() },
          workspaceRoot: dir.path,
          retry: NO_WAIT_RETRY,
          sleep: async () => undefined,
          checkpoints,
          checkpointEveryTurns: every,
        };
        try {
          const first: RunDriver = new RunDriver(runId, { ...deps, observer: { onEvents: () => ++appends === stopAfter && first.stop('test') } });
          await first.drive();
          const warnings: string[] = [];
          const second = new RunDriver(runId, { ...deps, logger: { warn: (m) => warnings.push(m) } });
          const final = await second.drive();
          const events = await store.readStream(toRunStreamId(runId));
          expect(comparable(final)).toEqual(comparable(fullReplay(events, runId)));
          expect(['awaiting_review', 'completed', 'failed', 'blocked']).toContain(runStatus(final));
          const completedCalls = events.filter((e) => e.type === 'ModelCallCompleted').map((e) => (e.data as { callId: string }).callId);
          expect(new Set(completedCalls).size).toBe(completedCalls.length);
          const completedTools = events.filter((e) => e.type === 'ToolCallCompleted').map((e) => (e.data as { toolUseId: string }).toolUseId);
          expect(new Set(completedTools).size).toBe(completedTools.length);
          // Every model call made is recorded (none was made twice, none lost).
          expect(model.calls.length).toBe(completedCalls.length + events.filter((e) => e.type === 'ModelCallFailed').length);
          expect(warnings).toEqual([]);
        } finally {
          dir.remove();
        }
      }),
      { numRuns: RUNS },
    );
  });
});

type Corruption = 'alteredState' | 'wrongHash' | 'schemaVersion0' | 'schemaVersion2' | 'header' | 'truncated' | 'notAnObject' | 'sqliteGarbage';

const CORRUPTIONS: Corruption[] = ['alteredState', 'wrongHash', 'schemaVersion0', 'schemaVersion2', 'header', 'truncated', 'notAnObject', 'sqliteGarbage'];

function corrupt(cp: Checkpoint, how: Exclude<Corruption, 'sqliteGarbage'>): string {
  const copy = JSON.parse(JSON.stringify(cp)) as Checkpoint;
  switch (how) {
    case 'alteredState': {
      // One more executor turn than the events say, hash left as it was.
      const usage = copy.state.usage as Record<string, { turns: number }>;
      usage.executor.turns += 1;
      return JSON.stringify(copy);
    }
    case 'wrongHash':
      return JSON.stringify({ ...copy, contentHash: `sha256:${'0'.repeat(64)}` });
    case 'schemaVersion0':
      return JSON.stringify({ ...copy, schemaVersion: 0 });
    case 'schemaVersion2':
      return JSON.stringify({ ...copy, schemaVersion: CHECKPOINT_SCHEMA_VERSION + 1 });
    case 'header':
      return JSON.stringify({ ...copy, revision: copy.revision + 1 });
    case 'truncated': {
      const text = JSON.stringify(copy);
      return text.slice(0, Math.floor(text.length / 2));
    }
    case 'notAnObject':
      return JSON.stringify('a checkpoint');
  }
}

describe('a checkpoint that cannot be trusted', () => {
  it('(c) falls back to a full replay with a warning, never a wrong state', async () => {
    const dir = tempDir('triad-cp-corrupt-');
    const db = new Database(join(dir.path, 'cp.db'));
    const sqlite = new SqliteCheckpointStore(db);
    const seen = new Set<Corruption>();
    try {
      await fc.assert(
        fc.asyncProperty(runScriptArb, fc.nat(), fc.constantFrom(...CORRUPTIONS), async (script, pick, how) => {
          seen.add(how);
          const run = await driveRandomRun(script);
          try {
            const expected = comparable(fullReplay(run.events, run.runId));
            const k = pick % run.events.length;
            const checkpoint = takeCheckpoint(fullReplay(run.events.slice(0, k + 1), run.runId), 'manual', new Date());
            const warnings: string[] = [];
            let store;
            if (how === 'sqliteGarbage') {
              await sqlite.save(checkpoint);
              db.prepare('UPDATE checkpoints SET body = ? WHERE run_id = ?').run('{"runId": "x", "revision": 3, oops', run.runId);
              store = sqlite;
            } else {
              const memory = new InMemoryCheckpointStore();
              memory.overwrite(run.runId, corrupt(checkpoint, how));
              store = memory;
            }
            const state = await loadRunState(run.store, run.runId, store, { warn: (m) => warnings.push(m) });
            expect(comparable(state)).toEqual(expected);
            expect(warnings).toHaveLength(1);
            expect(warnings[0]).toMatch(new RegExp(`run ${run.runId}: checkpoint .*unusable .*replaying all events`));
          } finally {
            run.remove();
          }
        }),
        { numRuns: 40 },
      );
      // Each kind of corruption was tried at least once; the explicit cases below pin them all.
      expect(seen.size).toBeGreaterThan(3);
    } finally {
      db.close();
      dir.remove();
    }
  });

  it('(c) names why: hash, schema version, header, unparseable JSON, not an object', async () => {
    const script = { ...fc.sample(runScriptArb, { seed: 42, numRuns: 1 })[0], humanGate: false };
    const run = await driveRandomRun(script);
    const dir = tempDir('triad-cp-why-');
    const db = new Database(join(dir.path, 'cp.db'));
    try {
      const checkpoint = takeCheckpoint(run.final, 'manual', new Date());
      const expected = comparable(run.final);
      const why = async (text: string) => {
        const memory = new InMemoryCheckpointStore();
        memory.overwrite(run.runId, text);
        const warnings: string[] = [];
        expect(comparable(await loadRunState(run.store, run.runId, memory, { warn: (m) => warnings.push(m) }))).toEqual(expected);
        return warnings.join('\n');
      };
      expect(await why(corrupt(checkpoint, 'alteredState'))).toMatch(/content hash does not match/);
      expect(await why(corrupt(checkpoint, 'wrongHash'))).toMatch(/content hash does not match/);
      expect(await why(corrupt(checkpoint, 'schemaVersion0'))).toMatch(/schema version 0 is not 1/);
      expect(await why(corrupt(checkpoint, 'schemaVersion2'))).toMatch(/schema version 2 is not 1/);
      expect(await why(corrupt(checkpoint, 'header'))).toMatch(/header does not match/);
      expect(await why(corrupt(checkpoint, 'truncated'))).toMatch(/unparseable checkpoint/);
      expect(await why(corrupt(checkpoint, 'notAnObject'))).toMatch(/not a JSON object/);
      expect(await why('null')).toMatch(/not a JSON object/);

      const sqlite = new SqliteCheckpointStore(db);
      await sqlite.save(checkpoint);
      db.prepare('UPDATE checkpoints SET body = ? WHERE run_id = ?').run('not json at all', run.runId);
      const warnings: string[] = [];
      expect(comparable(await loadRunState(run.store, run.runId, sqlite, { warn: (m) => warnings.push(m) }))).toEqual(expected);
      expect(warnings.join('\n')).toMatch(/unparseable checkpoint/);
    } finally {
      db.close();
      dir.remove();
      run.remove();
    }
  });
});
