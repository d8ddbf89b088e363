import type Database from 'better-sqlite3';
import type { Pool } from 'pg';
import type { EventStore } from '../events/event-store.port';
import { InMemoryCheckpointStore, PostgresCheckpointStore, SqliteCheckpointStore } from '../checkpoint/checkpoint-stores';
import type { CheckpointStore } from '../checkpoint/checkpoint-store.port';
import { InMemoryRunLeases, PostgresRunLeases, SqliteRunLeases, type RunLeases } from './leases/run-leases';

/**
 * Checkpoints and leases live next to the events, in the same database as the configured store:
 * picked here, in one place, from the store's kind.
 */
export function createRunStores(store: EventStore): { checkpoints: CheckpointStore; leases: RunLeases } {
  switch (store.kind) {
    case 'sqlite': {
      const db = (store as unknown as { db: Database.Database }).db;
      return { checkpoints: new SqliteCheckpointStore(db), leases: new SqliteRunLeases(db) };
    }
    case 'postgres': {
      const pg = store as unknown as { pool: Pool; schema: string };
      return { checkpoints: new PostgresCheckpointStore(pg.pool, pg.schema), leases: new PostgresRunLeases(pg.pool, pg.schema) };
    }
    default:
      return { checkpoints: new InMemoryCheckpointStore(), leases: new InMemoryRunLeases() };
  }
}
