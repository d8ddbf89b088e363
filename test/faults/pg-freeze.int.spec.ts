import { waitFor } from './serve-support';
import { withScenario } from './pg-fault-scenario';

// See pg-fault-scenario.ts: 30 runs in flight on a real `triad serve`, the process frozen with SIGSTOP for 25 s:
// every run finishes, no model turn twice, no run changes drivers, /health 503 during, 200 after.

jest.setTimeout(240_000);

describe('store faults under 30 runs in flight (PostgreSQL through a TCP proxy)', () => {
  it('the process frozen (SIGSTOP) for 25 s', () =>
    withScenario('freeze', async ({ serve }) => {
      const frozenAt = Date.now();
      serve.process.kill('SIGSTOP');
      try {
        await waitFor('the freeze to last 25 s', async () => Date.now() - frozenAt >= 25_000, 30_000, 200);
      } finally {
        serve.process.kill('SIGCONT');
      }
    }));
});
