import Database from 'better-sqlite3';

/**
 * A second connection to a WAL database file, with `synchronous=OFF`, for writes that need no
 * fsync of their own, such as run checkpoints (an optimisation). Their commits skip the fsync that
 * would block the event loop — with many runs reaching a phase boundary at once, one fsync each
 * added up to tens of milliseconds of lag — and the next durable append's fsync covers the shared
 * WAL anyway. Undefined for a database that is not a WAL file: the caller keeps the shared one.
 */
export function openUnsyncedConnection(shared: Database.Database): Database.Database | undefined {
  if (shared.memory || shared.pragma('journal_mode', { simple: true }) !== 'wal') return undefined;
  const db = new Database(shared.name);
  db.pragma('busy_timeout = 10000');
  db.pragma('synchronous = OFF');
  return db;
}
