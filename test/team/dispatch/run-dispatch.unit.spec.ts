import { InMemoryEventStore } from '../../../src/events/event-store/in-memory.event-store';
import { StoreUnavailableError } from '../../../src/events/errors';
import { HealthRegistry } from '../../../src/shared/health';
import { DISPATCHER_SUBSCRIPTION, placedElsewhere, RunDispatcher, runToWake, type DriverWaker } from '../../../src/team/dispatch/run-dispatch';
import type { WakeReason } from '../../../src/team/dispatch/driver-pool';
import { waitFor } from '../../support/wait-for';

// Reactions from the store: the dispatcher starts a driver for every run an event wakes, from a
// named subscription whose position survives a restart.

/**
 * A driver pool that records the runs it was asked to wake; with `slots`, it drives that many at
 * once (those of `busy` and those woken since) and queues the others.
 */
function fakeDrivers(driving = new Set<string>(), slots?: { count: number; busy: Set<string> }) {
  const asked: string[] = [];
  const whys: WakeReason[] = [];
  /** Every wake, driven or queued. */
  const tried: string[] = [];
  const listeners = new Set<() => void>();
  const drivers = {
    owner: 'proc_here',
    isDriving: (runId: string) => driving.has(runId),
    wake: async (runId: string, why: WakeReason) => {
      tried.push(runId);
      if (slots && slots.busy.size >= slots.count) return { driving: false, queued: true };
      asked.push(runId);
      whys.push(why);
      slots?.busy.add(runId);
      return { driving: true, queued: false };
    },
    onSlotFreed: (listener: () => void) => (listeners.add(listener), () => listeners.delete(listener)),
  } satisfies DriverWaker;
  /** A driver stops here: its slot frees. */
  const stopped = (runId: string) => {
    slots?.busy.delete(runId);
    for (const listener of listeners) listener();
  };
  return { drivers, asked, whys, tried, stopped, listeners };
}

const event = (type: string, data: unknown = {}) => ({ type, data });
/** An event appended by a launch placed on `owner` (RunSupervisor.place). */
const placed = (type: string, owner: string) => ({ type, data: {}, metadata: { placedOn: owner } });

async function dispatcherOn(store: InMemoryEventStore, driving?: Set<string>, slots?: { count: number; busy: Set<string> }) {
  const fake = fakeDrivers(driving, slots);
  const health = new HealthRegistry();
  const dispatcher = new RunDispatcher(store, health, fake.drivers);
  await dispatcher.start();
  return { dispatcher, health, ...fake };
}

describe('runToWake', () => {
  it.each([
    ['RunLaunched', 'run-run_a', 'run_a'],
    ['RunForked', 'run-run_b', 'run_b'],
    ['RunResumed', 'run-run_c', 'run_c'],
    ['ReviewDecided', 'run-run_d', 'run_d'],
    ['ToolApprovalDecided', 'run-run_e', 'run_e'],
  ])('given %s on %s, then it wakes %s', (type, streamId, runId) => {
    expect(runToWake({ type, streamId })).toBe(runId);
  });

  it.each([
    ['ModelCallCompleted', 'run-run_a'],
    ['DriverClaimed', 'run-run_a'],
    ['RunEnded', 'run-run_a'],
    ['ApiKeyAdded', 'apikeys'],
    ['RunLaunched', 'not-a-run'],
  ])('given %s on %s, then it wakes nothing', (type, streamId) => {
    expect(runToWake({ type, streamId })).toBeUndefined();
  });
});

describe('placedElsewhere', () => {
  it.each([
    ['placed on another process', { placedOn: 'proc_other' }, true],
    ['placed on this process', { placedOn: 'proc_here' }, false],
    ['not placed (queued, or launched by the CLI)', {}, false],
  ])('given an event %s, then it is left to another process: %s', (_, metadata, expected) => {
    expect(placedElsewhere({ metadata: { correlationId: 'c', causationId: null, actor: 'system', schemaVersion: 1, ...metadata } }, 'proc_here')).toBe(expected);
  });
});

describe('the run dispatcher', () => {
  it('given launches placed here, placed on another process and not placed, then it asks only for those placed here or nowhere', async () => {
    const store = new InMemoryEventStore();
    const { dispatcher, asked } = await dispatcherOn(store);
    try {
      await store.append('run-run_elsewhere', [placed('RunLaunched', 'proc_other')]);
      await store.append('run-run_here', [placed('RunLaunched', 'proc_here')]);
      await store.append('run-run_queued', [event('RunLaunched')]);
      await store.append('run-run_elsewhere', [event('ReviewDecided')]);
      await waitFor('three wake-ups', async () => asked.length >= 3, 10_000, 10);
      // The decision on the run placed elsewhere was not placed: every process tries it.
      expect(asked).toEqual(['run_here', 'run_queued', 'run_elsewhere']);
    } finally {
      await dispatcher.stop();
    }
  });

  it('given a started dispatcher, when runs are launched, resumed and decided, then it asks for each run once per waking event', async () => {
    const store = new InMemoryEventStore();
    const { dispatcher, asked } = await dispatcherOn(store);
    try {
      await store.append('run-run_1', [event('RunLaunched')]);
      await store.append('run-run_1', [event('ModelCallCompleted'), event('ReviewOpened')]);
      await store.append('run-run_2', [event('RunLaunched')]);
      await store.append('run-run_1', [event('ReviewDecided'), event('IterationStarted')]);
      await waitFor('three wake-ups', async () => asked.length >= 3, 10_000, 10);
      expect(asked).toEqual(['run_1', 'run_2', 'run_1']);
    } finally {
      await dispatcher.stop();
    }
  });

  it('given a run this process drives already, then it is not asked for again', async () => {
    const store = new InMemoryEventStore();
    const { dispatcher, asked } = await dispatcherOn(store, new Set(['run_busy']));
    try {
      await store.append('run-run_busy', [event('RunResumed')]);
      await store.append('run-run_other', [event('RunLaunched')]);
      await waitFor('the other run', async () => asked.includes('run_other'), 10_000, 10);
      expect(asked).toEqual(['run_other']);
    } finally {
      await dispatcher.stop();
    }
  });

  it('given a store that never had a dispatcher, then it starts at the head: earlier launches are left to recovery', async () => {
    const store = new InMemoryEventStore();
    await store.append('run-run_old', [event('RunLaunched')]);
    const { dispatcher, asked } = await dispatcherOn(store);
    try {
      await store.append('run-run_new', [event('RunLaunched')]);
      await waitFor('the new run', async () => asked.includes('run_new'), 10_000, 10);
      expect(asked).toEqual(['run_new']);
    } finally {
      await dispatcher.stop();
    }
  });

  it('given a dispatcher stopped with its position saved, when runs are launched meanwhile, then the next one dispatches them', async () => {
    const store = new InMemoryEventStore();
    const first = await dispatcherOn(store);
    await store.append('run-run_1', [event('RunLaunched')]);
    await waitFor('the first run', async () => first.asked.includes('run_1'), 10_000, 10);
    await first.dispatcher.stop();
    expect(await store.loadCheckpoint(DISPATCHER_SUBSCRIPTION)).toBe(await store.headPosition());

    // No process dispatches while these are written: the launches wait in the store.
    await store.append('run-run_2', [event('RunLaunched')]);
    await store.append('run-run_3', [event('RunForked')]);
    const second = await dispatcherOn(store);
    try {
      await waitFor('both runs', async () => second.asked.length >= 2, 10_000, 10);
      expect(second.asked).toEqual(['run_2', 'run_3']);
    } finally {
      await second.dispatcher.stop();
    }
  });

  it('given a failure while dispatching, then /health names it, and the dispatcher restarts and is healthy once the store answers', async () => {
    const store = new InMemoryEventStore();
    const { dispatcher, asked, health } = await dispatcherOn(store);
    const save = store.saveCheckpoint.bind(store);
    let failSaves = true;
    store.saveCheckpoint = async (name, position) => {
      if (failSaves) throw new StoreUnavailableError('connection reset');
      return save(name, position);
    };
    try {
      await store.append('run-run_1', [event('RunLaunched')]);
      await waitFor('the failure to show', async () => health.assess().reasons.some((r) => r.startsWith('run dispatcher:')), 10_000, 10);
      failSaves = false;
      await waitFor('health to recover', async () => health.assess().ok, 20_000, 20);
      // The run woken before the failure may be asked for again: harmless, it is driven already.
      await store.append('run-run_2', [event('RunLaunched')]);
      await waitFor('the next run', async () => asked.includes('run_2'), 20_000, 10);
      expect(asked.filter((r) => r === 'run_1').length).toBeGreaterThanOrEqual(1);
    } finally {
      await dispatcher.stop();
    }
  });

  it('given every slot taken, when runs are launched and then a slot frees, then the dispatcher wakes the queued runs in launch order, one per free slot', async () => {
    const store = new InMemoryEventStore();
    const { dispatcher, asked, whys, tried, stopped, listeners } = await dispatcherOn(store, undefined, { count: 1, busy: new Set(['run_busy']) });
    try {
      await store.append('run-run_q1', [event('RunLaunched')]);
      await store.append('run-run_q2', [event('RunLaunched')]);
      await waitFor('both launches tried', async () => tried.length >= 2, 10_000, 10);
      expect(asked).toEqual([]);

      stopped('run_busy');
      await waitFor('the first queued run', async () => asked.length >= 1, 10_000, 10);
      expect(asked).toEqual(['run_q1']);
      expect(whys).toEqual(['queued']);

      stopped('run_q1');
      await waitFor('the second queued run', async () => asked.length >= 2, 10_000, 10);
      expect(asked).toEqual(['run_q1', 'run_q2']);
    } finally {
      await dispatcher.stop();
    }
    expect(listeners.size).toBe(0);
  });
});

