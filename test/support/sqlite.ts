import Database from 'better-sqlite3';

/**
 * A connection to a SQLite file set up as the event store sets up its own (WAL, synchronous=NORMAL,
 * a busy timeout), for tests that build a store adapter on a database of their own.
 */
export function openWalDatabase(file: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 10000');
  return db;
}
