// Orders test files for a suite run on a machine with few cores: the files that mostly wait (store
// cuts and freezes, real-time review timeouts, crash restarts) start first, so their waiting
// overlaps the CPU-bound files instead of being the tail of the run. The rest keeps jest's order
// (slowest known first, else largest first).
const Sequencer = require('@jest/test-sequencer').default;

const WAIT_BOUND_FIRST = [
  'test/faults/pg-freeze.int.spec.ts',
  'test/faults/pg-cut-15s.int.spec.ts',
  'test/review-gate/gate/review-timeouts.e2e.spec.ts',
  'test/recovery/crash.int.spec.ts',
  'test/faults/lease-load.int.spec.ts',
  'test/events/event-store/postgres.event-store.int.spec.ts',
  'test/faults/pg-cut-1s.int.spec.ts',
];

class WaitBoundFirst extends Sequencer {
  sort(tests) {
    const rank = (t) => {
      const i = WAIT_BOUND_FIRST.findIndex((p) => t.path.endsWith(p));
      return i === -1 ? WAIT_BOUND_FIRST.length : i;
    };
    const rest = super.sort(tests.filter((t) => rank(t) === WAIT_BOUND_FIRST.length));
    const first = tests.filter((t) => rank(t) < WAIT_BOUND_FIRST.length).sort((a, b) => rank(a) - rank(b));
    return [...first, ...rest];
  }
}

module.exports = WaitBoundFirst;
