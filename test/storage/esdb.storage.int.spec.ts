import { ConfigError } from '../../src/config/config';
import { EsdbEventStore } from '../../src/events/event-store/esdb.event-store';
import { EsdbDecisionRecordRepository } from '../../src/review-gate/decision-log/esdb.decision-record.repository';
import { openStorage } from '../../src/storage/storage';
import { decisionRecordRepositoryContract } from '../review-gate/decision-log/decision-record.repository.contract';
import { esdbForFile, freshNamespace } from '../support/esdb';

// The decision log beside the events on EventStoreDB, through its repository's contract suite, and
// the storage that opens every store: one server for the whole file. The checkpoint store and the
// run leases run their contracts beside their ports (test/checkpoint/, test/team/leases/).

const esdb = esdbForFile();
const connect = esdb.connect;

decisionRecordRepositoryContract(
  'esdb',
  () => {
    const namespace = freshNamespace();
    const open = async () => new EsdbDecisionRecordRepository(connect(), namespace);
    return { open, openAnother: open, cleanup: async () => undefined };
  },
  { writers: 4, events: 60 },
);

describe('esdb storage', () => {
  it('opens every store on one connection, under one namespace, and closes once', async () => {
    const storage = await openStorage({ store: 'esdb', esdbUrl: esdb.target.url, dataDir: '/nonexistent' }, { esdbNamespace: freshNamespace() });
    expect(storage.kind).toBe('esdb');
    expect(storage.events).toBeInstanceOf(EsdbEventStore);
    await storage.events.append('run-1', [{ type: 'A', data: {} }]);
    expect(await storage.leases.tryAcquire('run_1', 'owner-a', 60_000, Date.now())).toBe(true);
    expect(await storage.leases.holder('run_1', Date.now())).toBe('owner-a');
    await Promise.all([storage.close(), storage.close()]);
    await expect(storage.events.readAll()).rejects.toMatchObject({ name: 'StoreUnavailableError', detail: 'the store is closed' });
  });

  it('needs TRIAD_ESDB_URL', async () => {
    await expect(openStorage({ store: 'esdb', dataDir: '/nonexistent' })).rejects.toBeInstanceOf(ConfigError);
  });

  it('a server that is not there fails the open in one line naming the store and the cause, without the credentials', async () => {
    const err = (await openStorage({ store: 'esdb', esdbUrl: 'esdb://admin:changeit@127.0.0.1:1?tls=false', dataDir: '/nonexistent' }).catch((e) => e)) as Error;
    expect(err.message).toBe('EventStoreDB at esdb://***@127.0.0.1:1?tls=false: not reachable');
  });

  it('a connection string that is not one is a configuration error', async () => {
    await expect(openStorage({ store: 'esdb', esdbUrl: 'http://127.0.0.1:2113', dataDir: '/nonexistent' })).rejects.toBeInstanceOf(ConfigError);
  });
});
