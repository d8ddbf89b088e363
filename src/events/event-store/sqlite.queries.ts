import type Database from 'better-sqlite3';
import type { EventFilter, RecordedEvent } from './event-store.port';
import { decodeStreamPage, ROW_COLUMNS, STREAM_ROW_COLUMNS } from '../prepare';
import type { UpcasterRegistry } from '../upcasting';

/** The statements `SqliteEventStore` runs on every call, prepared once on its connection. */
export function sqliteStatements(db: Database.Database) {
  return {
    head: db.prepare('SELECT MAX(revision) AS revision FROM events WHERE stream_id = ?'),
    byId: db.prepare('SELECT id, stream_id, revision, position, content_hash FROM events WHERE id = ?'),
    insert: db.prepare(
      'INSERT INTO events (id, stream_id, revision, type, data, metadata, content_hash, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    insertRecorded: db.prepare(
      'INSERT INTO events (position, id, stream_id, revision, type, data, metadata, content_hash, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    // Raw rows (arrays): no row object per event before its envelope is built.
    forwards: db.prepare(`SELECT ${STREAM_ROW_COLUMNS} FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision ASC LIMIT ?`).raw(true),
    backwards: db.prepare(`SELECT ${STREAM_ROW_COLUMNS} FROM events WHERE stream_id = ? AND revision <= ? ORDER BY revision DESC LIMIT ?`).raw(true),
    headPosition: db.prepare('SELECT COALESCE(MAX(position), 0) AS position FROM events'),
    loadCheckpoint: db.prepare('SELECT position FROM subscription_checkpoints WHERE name = ?'),
    saveCheckpoint: db.prepare(
      `INSERT INTO subscription_checkpoints (name, position, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at`,
    ),
  };
}

/** Count, first and last revision of each of `n` streams, read from the (stream_id, revision) index alone. */
export function extentsQuery(n: number): string {
  return `SELECT stream_id, count(*), min(revision), max(revision) FROM events WHERE stream_id IN (${new Array<string>(n).fill('?').join(', ')}) GROUP BY stream_id`;
}

export function readAllQuery(filter?: EventFilter): { sql: string; params: (string | number)[] } {
  const where = ['position > ?'];
  const params: (string | number)[] = [];
  const clause = filter ? filterClause(filter, params) : undefined;
  if (clause) where.push(clause);
  return {
    sql: `SELECT ${ROW_COLUMNS} FROM events WHERE ${where.join(' AND ')} ORDER BY position ASC LIMIT ?`,
    params,
  };
}

/** The shared tail's read: events after a position matching any of `filters` (parameters: after, the filters', the limit). */
export function tailQuery(filters: readonly EventFilter[]): { sql: string; params: (string | number)[] } {
  const params: (string | number)[] = [];
  const clauses = filters.map((f) => filterClause(f, params) ?? '1');
  const match = clauses.length > 0 ? clauses.map((c) => `(${c})`).join(' OR ') : '0';
  return { sql: `SELECT ${ROW_COLUMNS} FROM events WHERE position > ? AND (${match}) ORDER BY position ASC LIMIT ?`, params };
}

/** A filter as SQL (its parameters pushed on `params`); undefined when it lets every event through. */
function filterClause(filter: EventFilter, params: (string | number)[]): string | undefined {
  const where: string[] = [];
  if (filter.types && filter.types.length > 0) {
    where.push(`type IN (${filter.types.map(() => '?').join(', ')})`);
    params.push(...filter.types);
  }
  if (filter.streamPrefixes && filter.streamPrefixes.length > 0) {
    where.push(`(${filter.streamPrefixes.map(() => 'substr(stream_id, 1, ?) = ?').join(' OR ')})`);
    for (const p of filter.streamPrefixes) params.push(p.length, p);
  }
  return where.length > 0 ? where.join(' AND ') : undefined;
}

/** A page from the read-ahead thread, or undefined when its text is not that page's rows (read it here). */
export function decodePageText(streamId: string, text: string, upcasters: UpcasterRegistry | undefined, from: number): RecordedEvent[] | undefined {
  try {
    return decodeStreamPage(streamId, text, upcasters, from);
  } catch (err) {
    if (err instanceof SyntaxError) return undefined;
    throw err;
  }
}
