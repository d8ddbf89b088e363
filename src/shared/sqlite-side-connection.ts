import Database from 'better-sqlite3';

/**
 * A second connection to a WAL database file, with `synchronous=OFF`, for writes that need no
 * fsync of their own, such as run checkpoints (an optimisation). Their commits never sync on the
 * event loop — not even in a WAL checkpoint this connection happens to run — and the event
 * store's next group sync covers the shared WAL anyway. Undefined for a database that is not a
 * WAL file: the caller keeps the shared one.
 */
export function openUnsyncedConnection(shared: Database.Database): Database.Database | undefined {
  if (shared.memory || shared.pragma('journal_mode', { simple: true }) !== 'wal') return undefined;
  const db = new Database(shared.name);
  db.pragma('busy_timeout = 10000');
  db.pragma('synchronous = OFF');
  return db;
}
