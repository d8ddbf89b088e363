import Database from 'better-sqlite3';

/**
 * A second connection to a WAL database file for writes that need no fsync of their own, such as
 * run checkpoints (an optimisation). `synchronous=NORMAL`: in WAL mode its commits do not fsync
 * (the event store's next group sync covers the shared WAL), while anything that copies the WAL
 * into the database file is synced. `wal_autocheckpoint=0`: such copies are left to the store's
 * connection. (With `synchronous=OFF`, a WAL checkpoint run by this connection would copy
 * acknowledged events into the database file without syncing it; the WAL then starts over, and a
 * power cut could lose those events.) Undefined for a database that is not a WAL file: the caller
 * keeps the shared one.
 */
export function openUnsyncedConnection(shared: Database.Database): Database.Database | undefined {
  if (shared.memory || shared.pragma('journal_mode', { simple: true }) !== 'wal') return undefined;
  const db = new Database(shared.name);
  db.pragma('busy_timeout = 10000');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 0');
  return db;
}
