import { randomUUID } from 'node:crypto';
import { EsdbCheckpointStore } from '../../src/checkpoint/esdb.checkpoint-store';
import { EsdbConnection } from '../../src/events/esdb.client';
import { esdbTarget, freshNamespace, type EsdbTarget } from '../support/esdb';
import { checkpointStoreContract } from './checkpoint-store.contract';

// The EventStoreDB adapter through the checkpoint store contract: one server for the whole file.

let target: EsdbTarget;
const connections: EsdbConnection[] = [];

beforeAll(async () => {
  target = await esdbTarget();
});

afterAll(async () => {
  for (const c of connections.splice(0)) await c.close();
  await target.stop();
});

/** A connection of its own, as another process has. */
function connect(): EsdbConnection {
  const conn = new EsdbConnection(target.url);
  connections.push(conn);
  return conn;
}

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
