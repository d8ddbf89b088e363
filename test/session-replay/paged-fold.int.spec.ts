import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import { toRunStreamId, type RunForkedData, type TeamRunEvent } from '../../src/team/domain/run-events';
import { foldRun, initialRunState } from '../../src/team/domain/run-state';
import { loadRunState } from '../../src/team/runs/run-stream';
import { FOLD_PAGE_EVENTS } from '../../src/team/runs/run-history';
import { modelCallCompleted, modelCallStarted, phaseStarted, planned, RUN_ID, toolCallCompleted, toolCallRequested, toolUse, text } from '../team/machines/given-when-then';
import { stateJson } from './replay-support';

// A long run is folded a page at a time (FOLD_PAGE_EVENTS events): the state must be exactly the
// fold of the whole history at once — across page boundaries, for a forked run whose parent
// history spans several pages, and when resuming from a revision in the middle of a page.

function executorTurns(from: number, to: number): TeamRunEvent[] {
  const out: TeamRunEvent[] = [];
  for (let n = from; n <= to; n++) {
    out.push(
      modelCallStarted('executor', n, { toolResultIds: n === 1 ? [] : [`tu_${n - 1}`], content: n === 1 ? [text('task')] : [] }),
      modelCallCompleted('executor', n, [text(`step ${n}`), toolUse(`tu_${n}`, 'read_file', { path: `f${n % 7}.txt` })]),
      toolCallRequested('executor', n, `tu_${n}`, 'read_file', { path: `f${n % 7}.txt` }),
      toolCallCompleted('executor', n, `tu_${n}`, 'read_file', `content ${n}`),
    );
  }
  return out;
}

async function appendAll(store: InMemoryEventStore, runId: string, events: TeamRunEvent[]): Promise<void> {
  for (let i = 0; i < events.length; i += 500) await store.append(toRunStreamId(runId), events.slice(i, i + 500).map((e) => ({ type: e.type, data: e.data })));
}

describe('folding a long history page by page', () => {
  const history: TeamRunEvent[] = [...planned({ maxTurns: 10_000 } as never), phaseStarted('executing', { maxTurns: 10_000 }), ...executorTurns(1, 1_300)];

  it('given more events than several pages, when the run is loaded, then its state is the fold of the whole history', async () => {
    expect(history.length).toBeGreaterThan(2 * FOLD_PAGE_EVENTS + 1);
    const store = new InMemoryEventStore();
    await appendAll(store, RUN_ID, history);
    const all = await store.readStream(toRunStreamId(RUN_ID));
    const loaded = await loadRunState(store, RUN_ID);
    expect(loaded.revision).toBe(history.length - 1);
    expect(stateJson(loaded)).toBe(stateJson(foldRun(all, initialRunState(RUN_ID))));
  });

  it('given a fork whose parent history spans pages, then the fork folds the parent up to the fork point, then its own events', async () => {
    const store = new InMemoryEventStore();
    await appendAll(store, RUN_ID, history);
    // In the middle of the second page, on a turn's last event.
    let forkAt = FOLD_PAGE_EVENTS + 30;
    while (history[forkAt].type !== 'ToolCallCompleted') forkAt++;
    const parentEvents = await store.readStream(toRunStreamId(RUN_ID), { maxCount: forkAt + 1 });
    expect(parentEvents[forkAt].type).toBe('ToolCallCompleted');
    const parentState = foldRun(parentEvents, initialRunState(RUN_ID));
    const forked: RunForkedData = {
      runId: 'run_fork',
      parent: { runId: RUN_ID, revision: forkAt, turn: parentState.usage.executor.turns },
      overrides: {},
      forkedBy: 'user:ann',
      at: '2025-01-02T00:00:00.000Z',
      view: { launched: parentState.launched!, team: {} },
    };
    const nextTurn = parentState.usage.executor.turns + 1;
    await appendAll(store, 'run_fork', [{ type: 'RunForked', data: forked }, ...executorTurns(nextTurn, nextTurn + 2)]);
    const loaded = await loadRunState(store, 'run_fork');
    // The parent up to the fork point, then the fork's own stream: read directly, not paged.
    const expected = foldRun([...parentEvents, ...(await store.readStream(toRunStreamId('run_fork')))], initialRunState('run_fork'));
    expect(loaded.runId).toBe('run_fork');
    expect(stateJson(loaded)).toBe(stateJson(expected));
  });
});
