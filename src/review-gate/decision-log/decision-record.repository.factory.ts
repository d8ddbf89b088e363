import type Database from 'better-sqlite3';
import type { Pool } from 'pg';
import type { EventStore } from '../../events/event-store.port';
import type { DecisionRecordRepository } from './decision-record.repository';
import { InMemoryDecisionRecordRepository } from './in-memory.decision-record.repository';
import { PostgresDecisionRecordRepository } from './postgres.decision-record.repository';
import { SqliteDecisionRecordRepository } from './sqlite.decision-record.repository';

/**
 * The one place the decision log's repository is chosen: from the configured event store, so
 * the records live in the same database as the events (the same SQLite file; the same PostgreSQL
 * database and schema, on the store's pool).
 */
export async function createDecisionRecordRepository(store: EventStore): Promise<DecisionRecordRepository> {
  switch (store.kind) {
    case 'sqlite': {
      const db = (store as unknown as { db?: Database.Database }).db;
      if (!db) throw new Error('the SQLite event store does not expose its database');
      return new SqliteDecisionRecordRepository(db);
    }
    case 'postgres': {
      const pg = store as unknown as { pool?: Pool; schema?: string };
      if (!pg.pool) throw new Error('the PostgreSQL event store does not expose its pool');
      return PostgresDecisionRecordRepository.open(pg.pool, pg.schema ?? 'public');
    }
    case 'memory':
      return new InMemoryDecisionRecordRepository();
    default:
      throw new Error(`the decision log has no adapter for the ${store.kind} store`);
  }
}
