import type { EventFilter, ReadAllOptions } from './event-store.port';
import { quoteIdent } from '../../shared/postgres-tables';

const ROW_COLUMNS = 'id, stream_id, revision, position, type, data, metadata, recorded_at';

/** The SQL `PostgresEventStore` runs, on the tables of `schema`. */
export function postgresStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    append: `SELECT outcome, event_id, event_stream, event_revision, event_position, event_hash
               FROM ${s}.append_events_quiet($1, $2, $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])`,
    appendBatch: `SELECT ord, outcome, event_id, event_stream, event_revision, event_position, event_hash
                    FROM ${s}.append_batch_quiet($1::text[], $2::bigint[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])`,
    head: `SELECT max(revision) AS revision FROM ${s}.events WHERE stream_id = $1`,
    forwards: `SELECT ${ROW_COLUMNS} FROM ${s}.events WHERE stream_id = $1 AND revision >= $2 ORDER BY revision ASC LIMIT $3`,
    backwards: `SELECT ${ROW_COLUMNS} FROM ${s}.events WHERE stream_id = $1 AND revision <= $2 ORDER BY revision DESC LIMIT $3`,
    // Unnamed (an id list): planned with the actual ids, as an index lookup per stream.
    extents: `SELECT stream_id, count(*) AS count, min(revision) AS first, max(revision) AS last FROM ${s}.events WHERE stream_id = ANY ($1::text[]) GROUP BY stream_id`,
    headPosition: `SELECT coalesce(max(position), 0) AS position FROM ${s}.events`,
    loadCheckpoint: `SELECT position FROM ${s}.subscription_checkpoints WHERE name = $1`,
    saveCheckpoint: `INSERT INTO ${s}.subscription_checkpoints (name, position, updated_at) VALUES ($1, $2, now())
                       ON CONFLICT (name) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at`,
    events: `${s}.events`,
    globalPosition: `${s}.global_position`,
  };
}

export function readAllQuery(table: string, options: ReadAllOptions): { text: string; values: unknown[] } {
  const values: unknown[] = [options.after ?? 0];
  const where = ['position > $1'];
  const clause = options.filter ? filterClause(options.filter, values) : undefined;
  if (clause) where.push(clause);
  // LIMIT NULL is LIMIT ALL; a negative count means no limit, as in the SQLite adapter.
  values.push(options.maxCount === undefined || options.maxCount < 0 ? null : options.maxCount);
  return {
    text: `SELECT ${ROW_COLUMNS} FROM ${table} WHERE ${where.join(' AND ')} ORDER BY position ASC LIMIT $${values.length}`,
    values,
  };
}

/** A filter as SQL over `values` (its parameters pushed there); undefined when it lets every event through. */
function filterClause(filter: EventFilter, values: unknown[]): string | undefined {
  const where: string[] = [];
  if (filter.types && filter.types.length > 0) {
    values.push(filter.types);
    where.push(`type = ANY ($${values.length}::text[])`);
  }
  if (filter.streamPrefixes && filter.streamPrefixes.length > 0) {
    values.push(filter.streamPrefixes);
    // left(...) = prefix compares literally: no LIKE wildcards to escape.
    where.push(`EXISTS (SELECT 1 FROM unnest($${values.length}::text[]) AS p(prefix) WHERE left(stream_id, length(p.prefix)) = p.prefix)`);
  }
  return where.length > 0 ? where.join(' AND ') : undefined;
}

/**
 * The shared tail's read: the events after `after` matching any of `filters`, at most `maxCount`,
 * beside the store's head seen in the same statement (one snapshot: every event at or below it is
 * committed, since position order is commit order). Always one row at least: with no match, one
 * whose event columns are null.
 */
export function tailQuery(table: string, after: number, maxCount: number, filters: readonly EventFilter[]): { text: string; values: unknown[] } {
  const values: unknown[] = [after, maxCount];
  const clauses = filters.map((f) => filterClause(f, values) ?? 'true');
  const match = clauses.length > 0 ? clauses.map((c) => `(${c})`).join(' OR ') : 'false';
  return {
    text:
      `SELECT h.head, e.* FROM (SELECT coalesce(max(position), 0) AS head FROM ${table}) h ` +
      `LEFT JOIN LATERAL (SELECT ${ROW_COLUMNS} FROM ${table} WHERE position > $1 AND (${match}) ORDER BY position ASC LIMIT $2) e ON true`,
    values,
  };
}
