import { randomUUID } from 'node:crypto';
import { dirname } from 'node:path';
import type { Checkpoint } from '../../src/checkpoint/checkpoint';
import { takeCheckpoint } from '../../src/checkpoint/checkpoint';
import { InMemoryCheckpointStore } from '../../src/checkpoint/in-memory.checkpoint-store';
import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import { foldRun, initialRunState, runStatus } from '../../src/team/domain/run-state';
import type { LoopInput } from '../../src/team/commands/launch';
import { OfflineModelProvider } from '../../src/team/models/offline.model';
import { loadRunState } from '../../src/team/runs/run-stream';
import { RunDriver } from '../../src/team/driver/run-driver';
import { createDefaultToolRegistry } from '../../src/team/tools/tool-registry';
import { contextOf, replayRun } from '../../src/session-replay/replay';
import { dataOf, startRun, type Harness } from '../team/driver/driver-support';
import { comparable, stateJson } from './replay-support';

// Runs of each loop strategy replay exactly: at every append the replayed state is the driver's
// live one, a checkpoint taken in the middle of the plan plus the tail is the full replay, and a
// driver stopped in the middle of a step resumes in that step without redoing a finished one.

const CRITERIA = ['file a.txt contains "A"', 'file b.txt contains "B"', 'fail the first step once'];
const fullReplay = (events: RecordedEvent[], runId: string) => foldRun(events, initialRunState(runId));

interface Live {
  revision: number;
  state: string;
}

async function drive(loop: LoopInput, options: { stopAt?: (events: RecordedEvent[]) => boolean; checkpoints?: InMemoryCheckpointStore } = {}) {
  const live: Live[] = [];
  // The observer reads the driver the harness creates.
  const ref: { harness?: Harness } = {};
  const h = await startRun({
    model: new OfflineModelProvider(),
    checkpoints: options.checkpoints,
    launch: { goal: 'Write two files', acceptanceCriteria: CRITERIA, team: { executor: { loop }, reviewer: { loop } } },
    observer: {
      onEvents: (_id, events) => {
        live.push({ revision: events[events.length - 1].revision, state: stateJson(ref.harness!.driver.snapshot) });
        if (options.stopAt?.(events)) ref.harness!.driver.stop('crash');
      },
    },
  });
  ref.harness = h;
  const final = await h.driver.drive();
  return { h, live, final };
}

describe.each<[string, LoopInput]>([
  ['plan_execute', { strategy: 'plan_execute' }],
  ['hybrid', { strategy: 'hybrid' }],
  ['auto', { strategy: 'auto' }],
])('loop strategy %s', (_name, loop) => {
  it('replays exactly at every append, and a checkpoint taken mid-plan plus the tail is the full replay', async () => {
    const { h, live, final } = await drive(loop);
    try {
      const events = await h.events();
      expect(runStatus(final)).toBe('awaiting_review');
      expect(events.some((e) => e.type === 'LoopReplanned')).toBe(true);
      for (const snap of live) {
        const { state, completeness } = replayRun(events, h.runId, snap.revision);
        expect(completeness.score).toBe(1);
        expect(JSON.parse(stateJson(state))).toEqual(JSON.parse(snap.state));
      }
      const { state, completeness } = replayRun(events, h.runId);
      expect(contextOf(state, completeness)).toEqual(contextOf(final, completeness));

      // Mid-plan: the executor's first step of the new plan has started, none of its steps is done.
      const k = events.findIndex((e) => e.type === 'LoopStepStarted' && (e.data as { role: string }).role === 'executor' && events.slice(0, e.revision).some((p) => p.type === 'LoopReplanned'));
      const midPlan = fullReplay(events.slice(0, k + 1), h.runId);
      expect(midPlan.stepLoop).toMatchObject({ planned: true, inStep: true, current: 0, replans: 1 });
      const checkpoints = new InMemoryCheckpointStore();
      await checkpoints.save(takeCheckpoint(midPlan, 'manual', new Date()));
      expect(comparable(await loadRunState(h.store, h.runId, checkpoints))).toEqual(comparable(fullReplay(events, h.runId)));
    } finally {
      h.remove();
    }
  });

  it('stopped in the middle of a step, a new driver resumes in that step and never redoes a finished one', async () => {
    const reference = await drive(loop);
    const expectedTypes = await reference.h.types();
    reference.h.remove();

    const checkpoints = new InMemoryCheckpointStore();
    // Stop right after the executor's second step started (its first is done and checkpointed or not).
    const stopAt = (events: RecordedEvent[]) => events.some((e) => e.type === 'LoopStepStarted' && (e.data as { role: string; index: number }).role === 'executor' && (e.data as { index: number }).index === 2);
    const { h } = await drive(loop, { stopAt, checkpoints });
    try {
      const before = await h.events();
      expect(runStatus(fullReplay(before, h.runId))).toBe('executing');
      const saved: Checkpoint[] = [];
      const resumed = new RunDriver(h.runId, {
        store: h.store,
        model: new OfflineModelProvider(),
        tools: createDefaultToolRegistry(),
        clock: { now: () => Date.now() },
        ids: { newId: () => randomUUID() },
        workspaceRoot: dirname(h.workspace),
        checkpoints: { save: async (cp) => void saved.push(cp), latest: (id) => checkpoints.latest(id), close: async () => undefined },
      });
      const final = await resumed.drive();
      expect(runStatus(final)).toBe('awaiting_review');
      const events = await h.events();
      // The same course as the run that was never stopped: nothing redone, nothing skipped.
      expect(events.map((e) => e.type)).toEqual(expectedTypes);
      const executorSteps = dataOf<{ role: string; index: number }>(events, 'LoopStepCompleted').filter((d) => d.role === 'executor');
      expect(new Set(executorSteps.map((d) => d.index)).size).toBe(executorSteps.length);
    } finally {
      h.remove();
    }
  });
});
