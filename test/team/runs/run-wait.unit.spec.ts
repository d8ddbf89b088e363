import { InMemoryEventStore } from '../../../src/events/event-store/in-memory.event-store';
import { toRunStreamId, type RunStatus } from '../../../src/team/domain/run-events';
import type { RunSummary } from '../../../src/team/runs/run-summary';
import { waitAnswer, waitForRunToSettle } from '../../../src/team/runs/run-wait';

// A wait answers from the run's stream (docs/API.md "Waiting for a run"): when it settles, or at its timeout.

const RUN = 'run_wait';
const STARTED = '2026-01-01T00:00:00.000Z';

const summary = (status: RunStatus): RunSummary =>
  ({ runId: RUN, status, startedAt: STARTED, endedAt: status === 'completed' || status === 'failed' ? '2026-01-01T00:01:00.000Z' : null, terminationReason: status === 'failed' ? 'ERROR' : status === 'completed' ? 'COMPLETED' : undefined }) as unknown as RunSummary;

/** A read model over the store: the run is completed once its stream holds RunEnded; counts its reads. */
function readModel(store: InMemoryEventStore, onRead: (n: number) => void = () => {}) {
  let reads = 0;
  const read = async () => {
    const events = await store.readStream(toRunStreamId(RUN));
    onRead(++reads);
    return summary(events.some((e) => e.type === 'RunEnded') ? 'completed' : 'executing');
  };
  return { read, reads: () => reads };
}

async function launched(): Promise<InMemoryEventStore> {
  const store = new InMemoryEventStore();
  await store.append(toRunStreamId(RUN), [{ type: 'RunLaunched', data: {} }]);
  return store;
}

const end = (store: InMemoryEventStore) => store.append(toRunStreamId(RUN), [{ type: 'RunEnded', data: { status: 'completed' } }]);

describe('waitAnswer', () => {
  it('given a completed run, then ok; given one ended otherwise, then error with its reason', () => {
    expect(waitAnswer(summary('completed'))).toMatchObject({ status: 'ok', runStatus: 'completed', terminationReason: 'COMPLETED' });
    expect(waitAnswer(summary('failed'))).toMatchObject({ status: 'error', runStatus: 'failed', terminationReason: 'ERROR' });
  });

  it('given a run waiting for a human, then waiting with no end', () => {
    expect(waitAnswer(summary('awaiting_approval'))).toEqual({ status: 'waiting', runStatus: 'awaiting_approval', startedAt: STARTED, endedAt: null });
  });

  it('given a run still going, then timeout', () => {
    expect(waitAnswer(summary('suspended'))).toMatchObject({ status: 'timeout', runStatus: 'suspended' });
  });
});

describe('waitForRunToSettle', () => {
  it('given a run that has ended, then answered from one read', async () => {
    const store = await launched();
    await end(store);
    const model = readModel(store);
    expect(await waitForRunToSettle(store, RUN, model.read, 600_000)).toMatchObject({ status: 'ok' });
    expect(model.reads()).toBe(1);
  });

  it('given a run that ends right after the first read, then answered when its stream says so, long before the timeout', async () => {
    const store = await launched();
    // The end is appended between the first read and the subscription: it must not be missed.
    const model = readModel(store, (n) => void (n === 1 && end(store)));
    const started = Date.now();
    expect(await waitForRunToSettle(store, RUN, model.read, 600_000)).toMatchObject({ status: 'ok', runStatus: 'completed' });
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(model.reads()).toBe(2);
  });

  it('given a run that goes on, then timeout once timeoutMs has passed, the run read once', async () => {
    const store = await launched();
    const model = readModel(store);
    const started = Date.now();
    expect(await waitForRunToSettle(store, RUN, model.read, 100)).toMatchObject({ status: 'timeout', runStatus: 'executing' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    expect(model.reads()).toBe(1);
  });

  it('given a timeout of 0, then the run as it stands at once', async () => {
    const store = await launched();
    expect(await waitForRunToSettle(store, RUN, readModel(store).read, 0)).toMatchObject({ status: 'timeout' });
  });

  it('given an unknown run, then the read model\'s refusal', async () => {
    const store = new InMemoryEventStore();
    await expect(waitForRunToSettle(store, RUN, () => Promise.reject(new Error('run not found')), 1000)).rejects.toThrow('run not found');
  });
});
