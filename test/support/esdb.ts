import { randomBytes } from 'node:crypto';
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
