import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Versioned schema. Each entry runs once, in order, inside a transaction; the applied version is
 * kept in `schema_migrations`. Append new entries, never edit old ones.
 */
const MIGRATIONS: string[] = [
  `CREATE TABLE events (
     position     INTEGER PRIMARY KEY,
     id           TEXT NOT NULL UNIQUE,
     stream_id    TEXT NOT NULL,
     revision     INTEGER NOT NULL,
     type         TEXT NOT NULL,
     data         TEXT NOT NULL,
     metadata     TEXT NOT NULL,
     content_hash TEXT NOT NULL,
     recorded_at  TEXT NOT NULL,
     UNIQUE (stream_id, revision)
   );
   CREATE INDEX events_type_position ON events (type, position);
   CREATE TABLE subscription_checkpoints (
     name       TEXT PRIMARY KEY,
     position   INTEGER NOT NULL,
     updated_at TEXT NOT NULL
   );`,
];

export const SQLITE_SCHEMA_VERSION = MIGRATIONS.length;

export interface SqliteDatabaseOptions {
  /** How long a write waits for another connection's lock before failing as unavailable (default 10 s). */
  busyTimeoutMs?: number;
}

/**
 * Opens the events database: one connection in WAL mode, as the durability scheme needs (see
 * `SqliteEventStore`). Every store of the file uses it (`src/storage/storage.ts`).
 */
export function openSqliteDatabase(file: string, options: SqliteDatabaseOptions = {}): Database.Database {
  if (!file || file === ':memory:') throw new Error('the SQLite store needs a file path');
  mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  const mode = db.pragma('journal_mode = WAL', { simple: true });
  if (mode !== 'wal') {
    db.close();
    throw new Error(`SQLite could not put ${file} in WAL mode (journal_mode is ${String(mode)}); the embedded store needs a filesystem that supports it`);
  }
  // No fsync inside a commit: WalSync makes commits durable before they are acknowledged.
  db.pragma('synchronous = NORMAL');
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 10_000))}`);
  db.pragma('foreign_keys = ON');
  return db;
}

/** Brings the event store's tables up to date; refuses a schema newer than this code. */
export function migrateSqliteEventStore(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
  const migrateTx = db.transaction(() => {
    const row = db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get() as { v: number };
    if (row.v > MIGRATIONS.length) {
      throw new Error(`the database schema is at version ${row.v}, newer than this triad (${MIGRATIONS.length}); upgrade triad`);
    }
    for (let v = row.v + 1; v <= MIGRATIONS.length; v++) {
      db.exec(MIGRATIONS[v - 1]);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(v, new Date().toISOString());
    }
  });
  migrateTx.immediate();
}
