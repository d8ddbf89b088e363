import type { ExpectedRevision } from './event-store.port';

/** The stream's revision is not the one the caller expected: someone else appended first. */
export class WrongExpectedRevisionError extends Error {
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
export class InvalidAppendError extends Error {
  override readonly name = 'InvalidAppendError';
}

/** An event's serialised data and metadata exceed the store's size limit. Nothing was written. */
export class EventTooLargeError extends Error {
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
export class EventIdConflictError extends Error {
  override readonly name = 'EventIdConflictError';
  constructor(readonly eventId: string, detail: string) {
    super(`event id '${eventId}' was already used: ${detail}`);
  }
}
