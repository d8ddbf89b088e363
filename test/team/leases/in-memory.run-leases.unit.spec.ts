import { InMemoryRunLeases } from '../../../src/team/leases/in-memory.run-leases';
import { runLeasesContract } from './run-leases.contract';

/** How this suite builds the adapter. */
const makeAdapter = () => new InMemoryRunLeases();

runLeasesContract('in-memory', async () => {
  // One instance stands for "the same database".
  const leases = makeAdapter();
  return { open: async () => leases, cleanup: async () => undefined };
});
