import type { EventFilter, ReadAllOptions } from './event-store.port';
import { quoteIdent } from '../shared/postgres-tables';

const ROW_COLUMNS = 'id, stream_id, revision, position, type, data, metadata, recorded_at';

/** The SQL `PostgresEventStore` runs, on the tables of `schema`. */
export function postgresStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    append: `SELECT outcome, event_id, event_stream, event_revision, event_position, event_hash
               FROM ${s}.append_events($1, $2, $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])`,
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
  const filter: EventFilter | undefined = options.filter;
  const values: unknown[] = [options.after ?? 0];
  const where = ['position > $1'];
  if (filter?.types && filter.types.length > 0) {
    values.push(filter.types);
    where.push(`type = ANY ($${values.length}::text[])`);
  }
  if (filter?.streamPrefixes && filter.streamPrefixes.length > 0) {
    values.push(filter.streamPrefixes);
    // left(...) = prefix compares literally: no LIKE wildcards to escape.
    where.push(`EXISTS (SELECT 1 FROM unnest($${values.length}::text[]) AS p(prefix) WHERE left(stream_id, length(p.prefix)) = p.prefix)`);
  }
  // LIMIT NULL is LIMIT ALL; a negative count means no limit, as in the SQLite adapter.
  values.push(options.maxCount === undefined || options.maxCount < 0 ? null : options.maxCount);
  return {
    text: `SELECT ${ROW_COLUMNS} FROM ${table} WHERE ${where.join(' AND ')} ORDER BY position ASC LIMIT $${values.length}`,
    values,
  };
}
