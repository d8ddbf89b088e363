import { CommandPath, commandPathFor, EVENT_SCHEMA_VERSION } from '../../src/events/command-handling';
import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import { WrongExpectedRevisionError } from '../../src/events/errors';
import { toRunStreamId, type RunForkedData, type TeamRunEvent } from '../../src/team/domain/run-events';
import { foldRun, runStatus, type RunState } from '../../src/team/domain/run-state';
import { launchRun } from '../../src/team/commands/launch';
import { runContext, runStream } from '../../src/team/runs/run-stream';

// The one command path: read, fold, decide, append at the revision read, metadata built in one place.

const cancel = (): TeamRunEvent[] => [{ type: 'RunEnded', data: { status: 'cancelled', reason: 'CANCELLED', at: '2026-01-01T00:00:00.000Z' } }];

const handleRunCommand = (store: InMemoryEventStore, runId: string, decide: (state: RunState) => TeamRunEvent[], options: { actor: string; maxAttempts: number }) =>
  commandPathFor(store).handle(runStream(store, runId), decide, runContext(runId, options.actor), { maxAttempts: options.maxAttempts });

async function withParent() {
  const store = new InMemoryEventStore();
  await launchRun(commandPathFor(store), { goal: 'g', acceptanceCriteria: ['c'] }, { runId: 'run_parent', launchedBy: 'user:bob', now: new Date(), provider: 'offline', defaultModel: 'm' });
  return store;
}

describe('the command path', () => {
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
    // The state returned is the one after the decision: the other writer's event, then ours.
    expect(state.revision).toBe(2);
    expect(runStatus(state)).toBe('cancelled');
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

  it('given a decision, then every event carries the metadata built in one place: actor, correlation, causation, process, schema version', async () => {
    const store = await withParent();
    const path = new CommandPath(store, 'host:1:abcd', { newId: () => '0190a000-0000-7000-8000-000000000001' }, { now: () => Date.parse('2026-02-03T04:05:06.000Z') });
    const { events } = await path.handle(runStream(store, 'run_parent'), () => cancel(), runContext('run_parent', 'user:ann'));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ id: '0190a000-0000-7000-8000-000000000001', type: 'RunEnded', revision: 1, recordedAt: '2026-02-03T04:05:06.000Z' });
    const [, stored] = await store.readStream(toRunStreamId('run_parent'));
    expect(stored.metadata).toEqual({ runId: 'run_parent', correlationId: 'run_parent', causationId: null, actor: 'user:ann', process: 'host:1:abcd', schemaVersion: EVENT_SCHEMA_VERSION });
    expect(stored.position).toBe(events[0].position);
  });

  it('given a launch placed on a process, then RunLaunched names it in its metadata; an unplaced launch names none', async () => {
    const store = new InMemoryEventStore();
    const ctx = { launchedBy: 'user:bob', now: new Date(), provider: 'offline', defaultModel: 'm' };
    await launchRun(commandPathFor(store), { goal: 'g', acceptanceCriteria: ['c'] }, { ...ctx, runId: 'run_placed', placedOn: 'host:2:beef' });
    await launchRun(commandPathFor(store), { goal: 'g', acceptanceCriteria: ['c'] }, { ...ctx, runId: 'run_unplaced' });
    const [placed] = await store.readStream(toRunStreamId('run_placed'));
    const [unplaced] = await store.readStream(toRunStreamId('run_unplaced'));
    expect(placed.metadata.placedOn).toBe('host:2:beef');
    expect(unplaced.metadata).not.toHaveProperty('placedOn');
  });

  it('given a decision of nothing, then nothing is written and the state read is returned', async () => {
    const store = await withParent();
    const head = await store.headPosition();
    const { state, events } = await handleRunCommand(store, 'run_parent', () => [], { actor: 'user:ann', maxAttempts: 1 });
    expect(events).toEqual([]);
    expect(state.revision).toBe(0);
    expect(await store.headPosition()).toBe(head);
  });

  it('given assumeNew and a stream that exists after all, then it reads the stream and decides again', async () => {
    const store = await withParent();
    const seen: number[] = [];
    const { events } = await commandPathFor(store).handle(
      runStream(store, 'run_parent'),
      (s) => (seen.push(s.revision), s.launched ? [] : cancel()),
      runContext('run_parent', 'user:ann'),
      { assumeNew: true },
    );
    // First on the initial state without a read, then on the stream as it is.
    expect(seen).toEqual([-1, 0]);
    expect(events).toEqual([]);
  });
});

/** A store whose next appends commit, then lose the connection before answering (the outcome unknown to the writer). */
class DroppingStore extends InMemoryEventStore {
  drops = 0;
  override async append(...args: Parameters<InMemoryEventStore['append']>) {
    const result = await super.append(...args);
    if (this.drops > 0) {
      this.drops--;
      throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    }
    return result;
  }
}

describe('the durable append', () => {
  const event = (path: CommandPath) => path.toNewEvents([{ type: 'Noted', data: {} }], { actor: 'system', correlationId: 'c' });

  it('given a store that drops the connection after two commits, then the append is made again with the same ids and recorded once, the outage told once', async () => {
    const store = new DroppingStore();
    const path = commandPathFor(store);
    store.drops = 2;
    let outages = 0;
    const result = await path.append('notes-1', event(path), 'no_stream', { signal: new AbortController().signal, onOutage: () => outages++ });
    expect(result.nextExpectedRevision).toBe(0);
    expect(await store.readStream('notes-1')).toHaveLength(1);
    expect(outages).toBe(1);
  });

  it('given a conflict, then it is not waited out: the caller decides again', async () => {
    const store = new InMemoryEventStore();
    const path = commandPathFor(store);
    await path.append('notes-1', event(path), 'no_stream');
    await expect(path.append('notes-1', event(path), 'no_stream', { signal: new AbortController().signal })).rejects.toBeInstanceOf(WrongExpectedRevisionError);
  });

  it('given a store away, when the writer stops, then the last fault is rethrown and nothing more is tried', async () => {
    const store = new DroppingStore();
    const path = commandPathFor(store);
    store.drops = 100;
    const stop = new AbortController();
    await expect(path.append('notes-1', event(path), 'no_stream', { signal: stop.signal, onOutage: () => stop.abort() })).rejects.toThrow('ECONNRESET');
    expect(store.drops).toBe(99);
  });
});
