import { commandPathFor } from '../../src/events/command-handling';
import { randomUUID } from 'node:crypto';
import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import type { AppendOptions, AppendResult, NewEvent, ReadStreamOptions, RecordedEvent } from '../../src/events/event-store/event-store.port';
import { runStatus } from '../../src/team/domain/run-state';
import { launchRun } from '../../src/team/commands/launch';
import type { ModelRequest, ModelResponse } from '../../src/team/models/model.port';
import { OfflineModelProvider } from '../../src/team/models/offline.model';
import { RunDriver } from '../../src/team/driver/run-driver';
import { createDefaultToolRegistry } from '../../src/team/tools/tool-registry';
import { createWorkspace } from '../../src/team/tools/workspace';
import { tempDir } from '../support/temp-dir';

// A driver whose store drops connections: appends that fail before committing, appends that
// commit and then lose their answer, reads that fail. The run must neither end nor repeat anything.

/** What node-postgres throws when the server goes away mid-query. */
const dropped = () => new Error('Connection terminated unexpectedly');

class DroppingStore extends InMemoryEventStore {
  appends = 0;
  reads = 0;
  faults = 0;

  override async append(streamId: string, events: NewEvent[], options?: AppendOptions): Promise<AppendResult> {
    const n = ++this.appends;
    if (n % 5 === 0) {
      this.faults++;
      throw dropped();
    }
    const result = await super.append(streamId, events, options);
    if (n % 3 === 0) {
      // Committed, but the answer is lost on the way back.
      this.faults++;
      throw dropped();
    }
    return result;
  }

  /** The stream as stored, without faults. */
  stored(streamId: string): Promise<RecordedEvent[]> {
    return super.readStream(streamId);
  }

  override async readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    if (++this.reads % 4 === 0) {
      this.faults++;
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    }
    return super.readStream(streamId, options);
  }
}

class CountingModel extends OfflineModelProvider {
  calls = 0;
  override async complete(request: ModelRequest): Promise<ModelResponse> {
    this.calls++;
    return super.complete(request);
  }
}

describe('a run driver whose store drops connections', () => {
  it('waits the store out and finishes the run without recording or making any model turn twice', async () => {
    const dir = tempDir();
    try {
      const store = new DroppingStore();
      const runId = 'run_dropping1';
      await createWorkspace(dir.path, runId);
      await launchRun(
        commandPathFor(store),
        { goal: 'Write three files', acceptanceCriteria: ['file a.txt contains "alpha"', 'file b.txt contains "beta"', 'file c.txt exists'] },
        { runId, launchedBy: 'user:ann', now: new Date(), provider: 'offline', defaultModel: 'triad-offline-1' },
      );
      const model = new CountingModel();
      const warnings: string[] = [];
      const driver = new RunDriver(runId, {
        store,
        model,
        tools: createDefaultToolRegistry(),
        clock: { now: () => Date.now() },
        ids: { newId: () => randomUUID() },
        workspaceRoot: dir.path,
        owner: 'host:1:test',
        logger: { warn: (m) => warnings.push(m) },
      });
      const state = await driver.drive();
      const events = await store.stored(`run-${runId}`);
      expect(runStatus(state)).toBe('awaiting_review');
      expect(store.faults).toBeGreaterThan(10);
      expect(warnings.some((w) => w.includes('not reachable'))).toBe(true);
      const ids = events.map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
      const completed = events.filter((e) => e.type === 'ModelCallCompleted');
      // Every model call made is recorded once: none was made again after a lost answer.
      expect(model.calls).toBe(completed.length);
      const callIds = completed.map((e) => (e.data as { callId: string }).callId);
      expect(new Set(callIds).size).toBe(callIds.length);
      expect(events.filter((e) => e.type === 'DriverClaimed')).toHaveLength(1);
      expect(state.revision).toBe(events.length - 1);
    } finally {
      dir.remove();
    }
  });
});
