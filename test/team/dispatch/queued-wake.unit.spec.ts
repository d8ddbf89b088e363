import { commandPathFor } from '../../../src/events/command-handling';
import { HealthRegistry } from '../../../src/shared/health';
import { RunDispatcher } from '../../../src/team/dispatch/run-dispatch';
import { launchRun } from '../../../src/team/commands/launch';
import { waitFor } from '../../support/wait-for';
import { poolWith, recordingLogger } from './dispatch-fakes';

// A queued launch (every slot taken when it came) is started by the dispatcher, through the pool's
// wake, as soon as a slot frees here: not left for recovery's next scan (no recovery runs here).

describe('a queued run', () => {
  it('given a process at its cap, when runs are launched and a driver stops, then the dispatcher wakes the oldest queued run into the freed slot', async () => {
    const { pool, store, clock, drivers } = poolWith({ cap: 1 });
    const dispatcher = new RunDispatcher(store, new HealthRegistry(), pool, recordingLogger().logger);
    await dispatcher.start();
    const path = commandPathFor(store, 'proc_here');
    const launch = (runId: string) =>
      launchRun(path, { goal: 'Write hello.txt', acceptanceCriteria: ['hello.txt exists'] }, { runId, launchedBy: 'user:ann', now: new Date(clock.now()), provider: 'offline', defaultModel: 'offline' });
    const wakes = jest.spyOn(pool, 'wake');
    try {
      await launch('run_first');
      await waitFor('the first run driven', async () => drivers.get('run_first')?.driving, 10_000, 5);
      await launch('run_second');
      await launch('run_third');
      await waitFor('both later launches tried', async () => wakes.mock.calls.length >= 3, 10_000, 5);
      expect(pool.activeRunIds).toEqual(['run_first']);

      drivers.get('run_first')!.finish();
      await waitFor('the second run driven', async () => drivers.get('run_second')?.driving, 10_000, 5);
      expect(pool.activeRunIds).toEqual(['run_second']);
      // Woken as queued; the third, tried next, found the slot taken again and stays queued.
      expect(wakes.mock.calls.slice(3)).toEqual([
        ['run_second', 'queued'],
        ['run_third', 'queued'],
      ]);

      drivers.get('run_second')!.finish();
      await waitFor('the third run driven', async () => drivers.get('run_third')?.driving, 10_000, 5);
      expect(pool.activeRunIds).toEqual(['run_third']);
      expect(wakes.mock.calls.slice(5)).toEqual([['run_third', 'queued']]);
      drivers.get('run_third')!.finish();
    } finally {
      await dispatcher.stop();
      await pool.onApplicationShutdown();
    }
  });
});
