import { commandPathFor } from '../../src/events/command-handling';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import { runStatus, terminationReason } from '../../src/team/domain/run-state';
import { launchRun } from '../../src/team/commands/launch';
import { OfflineModelProvider } from '../../src/team/models/offline.model';
import { RunDriver } from '../../src/team/driver/run-driver';
import { createDefaultToolRegistry } from '../../src/team/tools/tool-registry';
import { createWorkspace } from '../../src/team/tools/workspace';
import { tempDir } from '../support/temp-dir';

describe('a team run with the offline model', () => {
  it('plans, executes, gets changes requested, reworks, and waits at the human gate', async () => {
    const dir = tempDir();
    const store = new InMemoryEventStore();
    const runId = 'run_offline1';
    await createWorkspace(dir.path, runId);
    await launchRun(
      commandPathFor(store),
      {
        goal: 'Write a greeting and a farewell',
        acceptanceCriteria: ['file hello.txt contains "Hello"', 'file bye.txt contains "Bye"', 'file notes/extra.md exists'],
      },
      { runId, launchedBy: 'user:ann', now: new Date(), provider: 'offline', defaultModel: 'triad-offline-1' },
    );
    const driver = new RunDriver(runId, {
      store,
      model: new OfflineModelProvider(),
      tools: createDefaultToolRegistry(),
      clock: { now: () => Date.now() },
      ids: { newId: () => randomUUID() },
      workspaceRoot: dir.path,
    });
    const state = await driver.drive();
    const types = (await store.readStream(`run-${runId}`)).map((e) => e.type);
    expect(runStatus(state)).toBe('awaiting_review');
    expect(terminationReason(state)).toBeUndefined();
    expect(types.filter((t) => t === 'VerdictSubmitted')).toHaveLength(2);
    expect(state.verdict?.verdict).toBe('APPROVE');
    expect(types).toContain('IterationStarted');
    expect(types[types.length - 1]).toBe('ReviewOpened');
    expect(readFileSync(join(dir.path, runId, 'hello.txt'), 'utf8')).toContain('Hello');
    dir.remove();
  });
});
