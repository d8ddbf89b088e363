import { EsdbConnection } from '../../../src/events/esdb.client';
import { EsdbRunLeases } from '../../../src/team/leases/esdb.run-leases';
import { esdbTarget, freshNamespace, type EsdbTarget } from '../../support/esdb';
import { runLeasesContract } from './run-leases.contract';

// The EventStoreDB adapter through the run leases contract: one server for the whole file.

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

runLeasesContract(
  'esdb',
  async () => {
    const namespace = freshNamespace();
    return { open: async () => new EsdbRunLeases(connect(), namespace), cleanup: async () => undefined };
  },
  // EventStoreDB has no query over all leases: a process's load is what it advertised.
  { contenders: 8, leasesCountAsLoad: false },
);
