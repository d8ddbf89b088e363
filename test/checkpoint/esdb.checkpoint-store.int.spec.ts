import { randomUUID } from 'node:crypto';
import { EsdbCheckpointStore } from '../../src/checkpoint/esdb.checkpoint-store';
import { esdbForFile, freshNamespace } from '../support/esdb';
import { checkpointStoreContract } from './checkpoint-store.contract';

// The EventStoreDB adapter through the checkpoint store contract: one server for the whole file.

const esdb = esdbForFile();
const connect = esdb.connect;

checkpointStoreContract('esdb', async () => {
  const namespace = freshNamespace();
  return {
    open: async () => new EsdbCheckpointStore(connect(), namespace),
    overwrite: async (runId, text) => {
      const stream = new EsdbCheckpointStore(connect(), namespace).stream(runId);
      await connect().append(stream, [{ id: randomUUID(), type: 'RunCheckpoint', data: Buffer.from(text), metadata: Buffer.from('{"revision":3}') }], 'any');
    },
    cleanup: async () => undefined,
  };
});
