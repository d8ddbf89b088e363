import { commandPathFor } from '../../src/events/command-handling';
import { randomUUID } from 'node:crypto';
import type { AppendOptions, EventStore, NewEvent } from '../../src/events/event-store/event-store.port';
import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import { toRunStreamId, type DriverClaimedData } from '../../src/team/domain/run-events';
import { runStatus } from '../../src/team/domain/run-state';
import { launchRun } from '../../src/team/commands/launch';
import type { ModelProvider, ModelRequest, ModelResponse } from '../../src/team/models/model.port';
import { OfflineModelProvider } from '../../src/team/models/offline.model';
import { RunDriver } from '../../src/team/driver/run-driver';
import type { RunDriverDeps } from '../../src/team/driver/step-context';
import { createDefaultToolRegistry } from '../../src/team/tools/tool-registry';
import { createWorkspace } from '../../src/team/tools/workspace';
import { tempDir } from '../support/temp-dir';
import { waitFor } from './crash-support';

// Fencing with DriverClaimed, in one process: a driver whose lease expired (it stalled) and the
// driver that took over, racing on the run's stream.

/** The offline model, but its first call waits until released: the old driver "stalls" in it. */
class GatedModel implements ModelProvider {
  readonly name = 'offline';
  private readonly inner = new OfflineModelProvider();
  private gate?: Promise<void>;
  release!: () => void;
  calls = 0;

  constructor(gated: boolean) {
    if (gated) this.gate = new Promise((resolve) => (this.release = resolve));
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.calls++;
    const gate = this.gate;
    this.gate = undefined;
    if (gate) await gate;
    return this.inner.complete(request);
  }
}

/** A store through which `beforeFirstAppend` runs once, just before the first append. */
function interceptFirstAppend(store: EventStore, beforeFirstAppend: () => Promise<void>): EventStore {
  let first = true;
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop !== 'append') {
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return async (streamId: string, events: NewEvent[], options?: AppendOptions) => {
        if (first) {
          first = false;
          await beforeFirstAppend();
        }
        return target.append(streamId, events, options);
      };
    },
  });
}

describe('DriverClaimed fencing', () => {
  it('the old driver writing between the new driver’s load and its claim does not stop the new driver; the old one is fenced', async () => {
    const dir = tempDir('triad-fencing-');
    const store = new InMemoryEventStore();
    const runId = 'run_fencing_1';
    const stream = toRunStreamId(runId);
    try {
      await createWorkspace(dir.path, runId);
      await launchRun(commandPathFor(store), { goal: 'Write two files', acceptanceCriteria: ['file a.txt exists', 'file b.txt exists'] }, {
        runId,
        launchedBy: 'user:ann',
        now: new Date(),
        provider: 'offline',
        defaultModel: 'triad-offline-1',
      });
      const base = (model: ModelProvider, owner: string, s: EventStore): RunDriverDeps => ({
        store: s,
        model,
        owner,
        tools: createDefaultToolRegistry(),
        clock: { now: () => Date.now() },
        ids: { newId: () => randomUUID() },
        workspaceRoot: dir.path,
      });

      // A claims the run and stalls in its first model call.
      const stalled = new GatedModel(true);
      const a = new RunDriver(runId, base(stalled, 'A', store));
      const aDone = a.drive();
      await waitFor('A to call the model', async () => stalled.calls === 1, 2000, 5);

      // B takes over (A's lease expired). Between B's load and B's claim, A wakes up and records its turn.
      const bStore = interceptFirstAppend(store, async () => {
        const before = await store.streamRevision(stream);
        stalled.release();
        await waitFor('A to record its model turn', async () => (await store.streamRevision(stream))! > before!, 2000, 2);
      });
      const b = new RunDriver(runId, base(new OfflineModelProvider(), 'B', bStore));
      const finalB = await b.drive();
      await aDone;

      expect(a.fenced).toBe(true);
      expect(b.fenced).toBe(false);
      // B carried on to the human gate; nothing of A's follows B's claim.
      expect(runStatus(finalB)).toBe('awaiting_review');
      const events = await store.readStream(stream);
      const claims = events.filter((e) => e.type === 'DriverClaimed');
      expect(claims.map((e) => (e.data as DriverClaimedData).owner)).toEqual(['A', 'B']);
      const afterB = events.filter((e) => e.revision > claims[1].revision);
      expect(afterB.length).toBeGreaterThan(10);
      expect(afterB.filter((e) => e.type === 'DriverClaimed')).toEqual([]);
    } finally {
      dir.remove();
    }
  });
});
