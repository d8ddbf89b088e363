import { checkpointJson, restoreCheckpoint, takeCheckpoint, type Checkpoint } from '../../src/checkpoint/checkpoint';
import type { TeamRunEvent } from '../../src/team/domain/run-events';
import { evolve, foldRun, initialRunState, type RunState } from '../../src/team/domain/run-state';
import { contextCompacted } from './checkpoint-text-support';
import { fold, modelCallCompleted, modelCallStarted, phaseStarted, planned, RUN_ID, text, toolCallCompleted, toolUse } from '../team/machines/given-when-then';
import { comparable } from './replay-support';

// A checkpoint reuses the JSON text of the messages an earlier checkpoint of the same conversation
// wrote. Whatever it reuses, its text must be exactly what serialising the state afresh writes,
// and restore to the same state — as the conversation grows, and after a compaction replaces it.

const turn = (n: number): TeamRunEvent[] => [
  modelCallStarted('executor', n, { toolResultIds: n === 1 ? [] : [`tu_${n - 1}`], content: n === 1 ? [text('task')] : [] }),
  modelCallCompleted('executor', n, [text(`step ${n}`), toolUse(`tu_${n}`, 'read_file', { path: `f${n}.txt` })]),
  toolCallCompleted('executor', n, `tu_${n}`, 'read_file', `content of f${n}.txt`),
];

/** The same state with fresh arrays and objects everywhere: nothing cached applies to it. */
const afresh = (state: RunState): RunState => ({ ...state, conversations: structuredClone(state.conversations) });

function roundTrip(cp: Checkpoint): RunState {
  return restoreCheckpoint(JSON.parse(checkpointJson(cp)) as Checkpoint);
}

describe('checkpoint text', () => {
  it('given a growing conversation checkpointed again and again, then each text equals a fresh serialisation and restores the state', () => {
    const state = foldRun([], initialRunState(RUN_ID));
    let revision = -1;
    const apply = (events: TeamRunEvent[]) => events.forEach((e) => evolve(state, e, { revision: ++revision, position: revision + 1 }));
    apply([...planned(), phaseStarted('executing')]);
    for (let n = 1; n <= 12; n++) {
      apply(turn(n));
      const cp = takeCheckpoint(state, 'turns', new Date(0));
      expect(checkpointJson(cp)).toBe(checkpointJson(takeCheckpoint(afresh(state), 'turns', new Date(0))));
      expect(comparable(roundTrip(cp))).toEqual(comparable(state));
    }
    // A compaction replaces the conversation with a new, shorter list.
    apply([contextCompacted('executor', 13, 0, 10)]);
    apply(turn(13));
    const cp = takeCheckpoint(state, 'turns', new Date(0));
    expect(state.conversations.executor.messages.length).toBeLessThan(20);
    expect(checkpointJson(cp)).toBe(checkpointJson(takeCheckpoint(afresh(state), 'turns', new Date(0))));
    expect(comparable(roundTrip(cp))).toEqual(comparable(state));
  });

  it('given a state restored from a checkpoint, then its next checkpoint is right too', () => {
    const state = fold([...planned(), phaseStarted('executing'), ...turn(1), ...turn(2)]);
    const restored = roundTrip(takeCheckpoint(state, 'turns', new Date(0)));
    let revision = restored.revision;
    for (const e of turn(3)) evolve(restored, e, { revision: ++revision, position: revision + 1 });
    const cp = takeCheckpoint(restored, 'turns', new Date(0));
    expect(checkpointJson(cp)).toBe(checkpointJson(takeCheckpoint(afresh(restored), 'turns', new Date(0))));
    expect(comparable(roundTrip(cp))).toEqual(comparable(restored));
  });
});
