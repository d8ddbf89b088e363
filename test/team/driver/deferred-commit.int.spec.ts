import { toRunStreamId } from '../../../src/team/domain/run-events';
import { foldRun, initialRunState, runStatus } from '../../../src/team/domain/run-state';
import { ScriptedModelProvider, toolUseResponse } from '../../../src/team/models/scripted.model';
import { plan, roleScript, startRun, submitWork, verdict, type Harness } from './driver-support';

// Results of tools that are safe to repeat are committed with the next model call: one commit per
// turn. These tests pin what that may and may not change.

let harness: Harness | undefined;
afterEach(() => {
  harness?.remove();
  harness = undefined;
});

const read = (n: number) => toolUseResponse('read_file', { path: `f${n}.txt` }, { id: `tu_read_${n}` });

describe('deferred commit of repeatable tool results', () => {
  it('given a turn with a read-only tool, then its result is committed in the same append as the next model call', async () => {
    const model = new ScriptedModelProvider(
      roleScript({ architect: [plan()], executor: [read(1), read(2), read(3), submitWork()], reviewer: [verdict('APPROVE')] }),
    );
    const batches: string[][] = [];
    harness = await startRun({ model, observer: { onEvents: (_id, events) => batches.push(events.map((e) => e.type)) } });
    const appends: number[] = [];
    const original = harness.store.append.bind(harness.store);
    harness.store.append = (stream, events, options) => {
      appends.push(events.length);
      return original(stream, events, options);
    };
    const state = await harness.driver.drive();
    expect(runStatus(state)).toBe('awaiting_review');
    // Each read's Requested+Completed opens the batch of the next model call's events.
    const readCommits = batches.filter((b) => b[0] === 'ToolCallRequested');
    expect(readCommits).toHaveLength(3);
    for (const b of readCommits) expect(b).toEqual(['ToolCallRequested', 'ToolCallCompleted', 'ModelCallStarted', 'ModelCallCompleted']);
    // The live fold equals the fold of what was stored.
    const stored = foldRun(await harness.events(), initialRunState(harness.runId));
    expect(stored.conversations).toEqual(state.conversations);
    expect(stored.revision).toBe(state.revision);
  });

  it('given a concurrent write before the deferred commit, then the driver drops the uncommitted results, refolds from the store and obeys it', async () => {
    let cancelOnce = true;
    const model = new ScriptedModelProvider(
      roleScript({
        architect: [plan()],
        executor: (_request, n) => {
          // While the model answers the turn after the read, a cancel lands in the store.
          if (n === 1 && cancelOnce) {
            cancelOnce = false;
            void harness!.store.append(toRunStreamId(harness!.runId), [
              { type: 'RunEnded', data: { status: 'cancelled', reason: 'CANCELLED', message: 'test', at: new Date().toISOString() } },
            ]);
          }
          return n === 0 ? read(1) : submitWork();
        },
        reviewer: [verdict('APPROVE')],
      }),
    );
    harness = await startRun({ model });
    const state = await harness.driver.drive();
    expect(runStatus(state)).toBe('cancelled');
    const events = await harness.events();
    // The read's result was never committed: the cancel came first and nothing follows it.
    expect(events[events.length - 1].type).toBe('RunEnded');
    expect(events.filter((e) => (e.data as { toolUseId?: string }).toolUseId === 'tu_read_1')).toEqual([]);
    // ...while the model call that asked for it is recorded.
    expect(events.filter((e) => e.type === 'ModelCallCompleted' && (e.data as { role: string }).role === 'executor')).toHaveLength(1);
  });
});
