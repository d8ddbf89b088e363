import { ConflictError, InvalidRequestError, UnavailableError } from '../shared/errors';
import type { ExpectedRevision } from './event-store/event-store.port';

/** The stream's revision is not the one the caller expected: someone else appended first. */
export class WrongExpectedRevisionError extends ConflictError {
  override readonly name = 'WrongExpectedRevisionError';
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    /** The stream's last revision, or null when the stream does not exist. */
    readonly actual: number | null,
  ) {
    super(
      `wrong expected revision on stream '${streamId}': expected ${String(expected)}, actual ${actual === null ? 'no_stream' : actual}`,
    );
  }
}

/** The append request itself is malformed (bad stream name, revision, type or data). Nothing was written. */
export class InvalidAppendError extends InvalidRequestError {
  override readonly name = 'InvalidAppendError';
}

/** An event's serialised data and metadata exceed the store's size limit. Nothing was written. */
export class EventTooLargeError extends InvalidRequestError {
  override readonly name = 'EventTooLargeError';
  constructor(
    readonly eventType: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`event '${eventType}' is ${bytes} bytes, over the limit of ${limit} bytes`);
  }
}

/** An event id already stored with different content (or in another stream or place). Nothing was written. */
export class EventIdConflictError extends ConflictError {
  override readonly name = 'EventIdConflictError';
  constructor(readonly eventId: string, detail: string) {
    super(`event id '${eventId}' was already used: ${detail}`);
  }
}

/**
 * A recorded event (`appendRecorded`) is not at a global position the store can take: recorded
 * events are stored in their global order, after everything the store holds (the in-memory store:
 * right after it). Nothing was written.
 */
export class RecordedPositionError extends ConflictError {
  override readonly name = 'RecordedPositionError';
  constructor(
    readonly eventId: string,
    readonly position: number,
    readonly nextPosition: number,
  ) {
    super(`recorded event '${eventId}' is at position ${position}, but the store's next position is ${nextPosition}${position < nextPosition ? '' : ' (this store keeps positions dense)'}`);
  }
}

/**
 * The store cannot keep the global positions of recorded events (`appendRecorded`): EventStoreDB
 * assigns its own positions, which are offsets in its log. A copy into it would renumber every
 * event, and decision records and subscription checkpoints name events by position, so it is
 * refused before anything is written.
 */
export class RecordedPositionsNotKeptError extends InvalidRequestError {
  override readonly name = 'RecordedPositionsNotKeptError';
  constructor(readonly storeKind: string) {
    super(
      `${storeKind === 'esdb' ? 'EventStoreDB' : storeKind} cannot keep the source's global positions (it assigns its own, as offsets in its log), ` +
        'and decision records and subscription checkpoints name events by position; nothing was written (copy into SQLite or PostgreSQL)',
    );
  }
}

/**
 * The store did not answer: a dropped, refused or timed-out connection, a server shutting down,
 * a database file locked by another writer. Nothing is known about an append that failed so
 * (it may have committed): re-read, or re-append the same event ids, which is idempotent. The
 * message is generic on purpose; the driver's message stays in `detail` for logs.
 */
export class StoreUnavailableError extends UnavailableError {
  override readonly name = 'StoreUnavailableError';
  constructor(
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super('the event store is not reachable', options);
  }
}

// PostgreSQL SQLSTATE classes and codes that mean "the server or the connection", not the request:
// 08 connection exception, 53 insufficient resources, 57P01-57P03 shutdown / cannot connect now.
const PG_UNAVAILABLE_CLASSES = ['08', '53'];
const PG_UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03']);
const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const SQLITE_BUSY_CODES = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY', 'SQLITE_BUSY_TIMEOUT', 'SQLITE_LOCKED']);
// A SQLite file that cannot be used as it is (damaged, not a database, unreadable or unwritable, a
// full disk): like a server that does not answer, nothing is written, the client gets a generic
// 503 (the database's own words go to the log) and work waits until an operator mends it.
const SQLITE_FAULT_CODES = /^SQLITE_(CORRUPT|NOTADB|IOERR|FULL|CANTOPEN|READONLY)(_[A-Z]+)?$/;
// node-postgres reports a lost or slow connection with these messages and no code.
const PG_CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'Client has encountered a connection error',
  'Client was closed and is not queryable',
  'timeout expired',
];

/** True for a failure of the store itself (see StoreUnavailableError), false for a failure of the request. */
export function isStoreUnavailable(err: unknown): boolean {
  if (err instanceof StoreUnavailableError) return true;
  // Duck-typed, not `instanceof Error`: a native driver's errors may come from another realm
  // (better-sqlite3's under jest's module registries, for one).
  if (err === null || typeof err !== 'object' || typeof (err as { message?: unknown }).message !== 'string') return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (NET_CODES.has(code) || SQLITE_BUSY_CODES.has(code) || SQLITE_FAULT_CODES.test(code) || PG_UNAVAILABLE_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code) && PG_UNAVAILABLE_CLASSES.includes(code.slice(0, 2))) return true;
  }
  const message = (err as { message: string }).message;
  if (PG_CONNECTION_MESSAGES.some((m) => message.startsWith(m))) return true;
  const cause = (err as { cause?: unknown }).cause;
  return cause !== undefined && cause !== err && isStoreUnavailable(cause);
}

/** The error to throw for a store failure: StoreUnavailableError when it is one, the error itself otherwise. */
export function classifyStoreError(err: unknown): unknown {
  if (err instanceof StoreUnavailableError || !isStoreUnavailable(err)) return err;
  const e = err as Error & { code?: string };
  return new StoreUnavailableError(e.code ? `${e.code}: ${e.message}` : e.message, { cause: err });
}
