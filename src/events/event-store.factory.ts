import { join } from 'node:path';
import type { TriadConfig } from '../config/config';
import type { EventStore } from './event-store.port';
import { InMemoryEventStore } from './in-memory.event-store';
import { PostgresEventStore } from './postgres.event-store';
import { SqliteEventStore } from './sqlite.event-store';
import type { UpcasterRegistry } from './upcasting';
import type { StoreHealthSink } from '../shared/health';

export interface EventStoreFactoryOptions {
  upcasters?: UpcasterRegistry;
  maxEventBytes?: number;
  /** PostgreSQL schema for triad's tables (default `public`); lets tests and tools isolate themselves. */
  pgSchema?: string;
  /** Told when the store stops answering and when it answers again (`GET /health`). */
  health?: StoreHealthSink;
}

/** The one place where `TRIAD_STORE` picks an adapter. */
export async function createEventStore(
  config: Pick<TriadConfig, 'store' | 'dataDir' | 'pgUrl' | 'esdbUrl'>,
  options: EventStoreFactoryOptions = {},
): Promise<EventStore> {
  const { pgSchema, health, ...storeOptions } = options;
  switch (config.store) {
    case 'sqlite':
      return new SqliteEventStore({ file: join(config.dataDir, 'triad.db'), ...storeOptions });
    case 'memory':
      return new InMemoryEventStore(storeOptions);
    case 'postgres':
      if (!config.pgUrl) throw new Error('the postgres store needs TRIAD_PG_URL');
      return PostgresEventStore.connect({ url: config.pgUrl, schema: pgSchema, health, ...storeOptions });
    case 'esdb':
      throw new Error(`the ${config.store} store is not available in this build`);
  }
}
