import { join } from 'node:path';
import { SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import {
  type Child,
  crashScene,
  jsonLines,
  killHard,
  type ModelCallLine,
  runEvents,
  spawnChild,
  statusOf,
  terminate,
  waitFor,
} from '../../recovery/crash-support';

// One kill -9 after a sub-agent completed: the process that takes the run over continues it from
// the log, and never runs the finished sub-agent again.
jest.setTimeout(300_000);

describe('a crash after a sub-agent completed', () => {
  it('the next process finishes the run without calling the sub-agent\'s model again', async () => {
    const { dir, dataDir, callsLog, env } = crashScene('triad-subagent-crash-', {
      TRIAD_LEASE_TTL_MS: '300',
      CRASH_LATENCY_MS: '1-5',
    });
    const launch = { goal: 'Delegate hello.txt', acceptanceCriteria: ['delegate to a coder: file hello.txt contains "Hello"'], reviewPolicy: { humanGate: true } };
    const children: Child[] = [];
    let store: SqliteEventStore | undefined;
    try {
      // Calls: architect 2, executor 2 (read, spawn), sub-agent 3 (read, write, answer); the 8th
      // (the executor's submit) never answers, so the process is certainly mid-run when killed.
      const first = spawnChild({ ...env, CRASH_LAUNCH: JSON.stringify([launch]), CRASH_PAUSE_AFTER: '7' });
      children.push(first);
      const [runId] = (await first.ready).launched;
      store = new SqliteEventStore({ file: join(dataDir, 'triad.db') });
      await waitFor('the sub-agent to complete', async () => (await runEvents(store!, runId)).some((e) => e.type === 'SubAgentCompleted'), 120_000);
      await killHard(first);

      const second = spawnChild(env);
      children.push(second);
      const { pid } = await second.ready;
      await waitFor('the run to reach its review', async () => (await statusOf(store!, runId)) === 'awaiting_review', 120_000);

      const events = await runEvents(store, runId);
      expect(events.filter((e) => e.type === 'SubAgentSpawned')).toHaveLength(1);
      expect(events.filter((e) => e.type === 'SubAgentCompleted')).toHaveLength(1);
      expect(events.filter((e) => e.type === 'SubAgentModelCalled')).toHaveLength(3);
      const spawnResults = events.filter((e) => e.type === 'ToolCallCompleted' && (e.data as { name: string }).name === 'spawn_sub_agent');
      expect(spawnResults).toHaveLength(1);
      expect((spawnResults[0].data as { isError: boolean }).isError).toBe(false);
      const calls = jsonLines<ModelCallLine & { subAgent?: string }>(callsLog);
      expect(calls.filter((c) => c.pid === pid && c.subAgent)).toEqual([]);
    } finally {
      for (const c of children) await terminate(c, 2_000).catch(() => killHard(c));
      await store?.close();
      dir.remove();
    }
  });
});
