import { randomBytes } from 'node:crypto';
import { EsdbConnection } from '../../src/events/esdb.client';
import { startFakeEsdb, type FakeEsdbServer } from './esdb-server/esdb-server';

/**
 * The EventStoreDB the esdb suites run against: TRIAD_ESDB_URL when set (a real server; the
 * suites then fail, never skip, when it does not answer), otherwise an in-process server, one per
 * test file. Each harness writes under a namespace of its own, so tests sharing a server never
 * see each other's streams.
 */
export interface EsdbTarget {
  url: string;
  /** The in-process server, when one runs. */
  fake?: FakeEsdbServer;
  stop(): Promise<void>;
}

export async function esdbTarget(): Promise<EsdbTarget> {
  const real = process.env.TRIAD_ESDB_URL;
  if (real) return { url: real, stop: async () => undefined };
  const fake = await startFakeEsdb();
  return { url: fake.url, fake, stop: () => fake.stop() };
}

/** A namespace of its own for a harness or test. */
export function freshNamespace(prefix = 't'): string {
  return `${prefix}${process.pid}_${randomBytes(5).toString('hex')}`;
}

/**
 * One EventStoreDB for the whole test file (started in beforeAll, stopped in afterAll) and the
 * connections its tests open: `connect()` gives one of its own, as another process has; every one
 * is closed after the file's tests (or earlier, by `closeConnections`).
 */
export function esdbForFile(): { readonly target: EsdbTarget; connect(url?: string): EsdbConnection; closeConnections(): Promise<void> } {
  let started: EsdbTarget | undefined;
  const connections: EsdbConnection[] = [];
  beforeAll(async () => {
    started = await esdbTarget();
  });
  const closeConnections = async (): Promise<void> => {
    for (const c of connections.splice(0)) await c.close();
  };
  afterAll(async () => {
    await closeConnections();
    await started?.stop();
  });
  const target = (): EsdbTarget => {
    if (!started) throw new Error("this file's EventStoreDB starts in beforeAll");
    return started;
  };
  return {
    get target() {
      return target();
    },
    connect(url = target().url) {
      const conn = new EsdbConnection(url);
      connections.push(conn);
      return conn;
    },
    closeConnections,
  };
}
