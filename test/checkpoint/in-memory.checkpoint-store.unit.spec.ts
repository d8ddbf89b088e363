import { InMemoryCheckpointStore } from '../../src/checkpoint/in-memory.checkpoint-store';
import { checkpointStoreContract } from './checkpoint-store.contract';

/** How this suite builds the adapter. */
const makeAdapter = () => new InMemoryCheckpointStore();

checkpointStoreContract('in-memory', async () => {
  // One instance stands for "the same database".
  const store = makeAdapter();
  return {
    open: async () => store,
    overwrite: async (runId, text) => store.overwrite(runId, text),
    cleanup: async () => undefined,
  };
});
