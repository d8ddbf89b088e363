import { cutLine, withScenario } from './pg-fault-scenario';

// See pg-fault-scenario.ts: 30 runs in flight on a real `triad serve`, the line to PostgreSQL cut for 15 s:
// every run finishes, no model turn twice, no run changes drivers, /health 503 during, 200 after.

jest.setTimeout(240_000);

describe('store faults under 30 runs in flight (PostgreSQL through a TCP proxy)', () => {
  it('a 15 s cut of the connection to PostgreSQL', () => withScenario('cut15s', (s) => cutLine(s, 15_000)));
});
