import { EsdbRunLeases } from '../../../src/team/leases/esdb.run-leases';
import { esdbForFile, freshNamespace } from '../../support/esdb';
import { runLeasesContract } from './run-leases.contract';

// The EventStoreDB adapter through the run leases contract: one server for the whole file.

const esdb = esdbForFile();
const connect = esdb.connect;

runLeasesContract(
  'esdb',
  async () => {
    const namespace = freshNamespace();
    return { open: async () => new EsdbRunLeases(connect(), namespace), cleanup: async () => undefined };
  },
  // EventStoreDB has no query over all leases: a process's load is what it advertised.
  { contenders: 8, leasesCountAsLoad: false },
);
