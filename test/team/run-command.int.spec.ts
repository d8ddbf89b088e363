import { InMemoryEventStore } from '../../src/events/in-memory.event-store';
import { WrongExpectedRevisionError } from '../../src/events/errors';
import { toRunStreamId, type RunForkedData, type TeamRunEvent } from '../../src/team/domain/run-events';
import { foldRun, runStatus } from '../../src/team/domain/run-state';
import { launchRun } from '../../src/team/launch';
import { handleRunCommand } from '../../src/team/run-command';

// The command path for writes from outside a run's driver (cancel, decisions).

const cancel = (): TeamRunEvent[] => [{ type: 'RunEnded', data: { status: 'cancelled', reason: 'CANCELLED', at: '2026-01-01T00:00:00.000Z' } }];

async function withParent() {
  const store = new InMemoryEventStore();
  await launchRun(store, { goal: 'g', acceptanceCriteria: ['c'] }, { runId: 'run_parent', launchedBy: 'user:bob', now: new Date(), provider: 'offline', defaultModel: 'm' });
  return store;
}

describe('handleRunCommand', () => {
  it('given a forked run, then it decides on the parent history plus the fork and appends to the fork only', async () => {
    const store = await withParent();
    const parent = foldRun(await store.readStream(toRunStreamId('run_parent')));
    const fork: RunForkedData = {
      runId: 'run_fork',
      parent: { runId: 'run_parent', revision: 0, turn: 0 },
      overrides: {},
      forkedBy: 'user:ann',
      at: new Date().toISOString(),
      view: { launched: parent.launched!, team: null },
    };
    await store.append(toRunStreamId('run_fork'), [{ type: 'RunForked', data: fork }]);
    let seen: string | undefined;
    const { state } = await handleRunCommand(store, 'run_fork', (s) => ((seen = s.launched?.goal), cancel()), { actor: 'user:ann', maxAttempts: 1 });
    expect(seen).toBe('g');
    expect(state.runId).toBe('run_fork');
    expect((await store.readStream(toRunStreamId('run_fork'))).map((e) => e.type)).toEqual(['RunForked', 'RunEnded']);
    expect((await store.readStream(toRunStreamId('run_parent'))).map((e) => e.type)).toEqual(['RunLaunched']);
  });

  it('given a concurrent append, then it decides again on what was written, up to maxAttempts', async () => {
    const store = await withParent();
    let calls = 0;
    const { state } = await handleRunCommand(
      store,
      'run_parent',
      (s) => {
        calls++;
        // The first decision races with another writer that lands first.
        if (calls === 1) void store.append(toRunStreamId('run_parent'), [{ type: 'RunResumed', data: { by: 'other', at: 'x' } }]);
        return runStatus(s) === 'cancelled' ? [] : cancel();
      },
      { actor: 'user:ann', maxAttempts: 3 },
    );
    expect(calls).toBe(2);
    expect(state.revision).toBe(1);
    expect((await store.readStream(toRunStreamId('run_parent'))).map((e) => e.type)).toEqual(['RunLaunched', 'RunResumed', 'RunEnded']);
  });

  it('given conflicts on every attempt, then the last conflict is rethrown and nothing of ours is written', async () => {
    const store = await withParent();
    const attempt = handleRunCommand(
      store,
      'run_parent',
      () => {
        void store.append(toRunStreamId('run_parent'), [{ type: 'RunResumed', data: { by: 'other', at: 'x' } }]);
        return cancel();
      },
      { actor: 'user:ann', maxAttempts: 2 },
    );
    await expect(attempt).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    expect((await store.readStream(toRunStreamId('run_parent'))).some((e) => e.type === 'RunEnded')).toBe(false);
  });
});
