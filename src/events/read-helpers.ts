import { DEFAULT_PAGE_EVENTS, type EventFilter, type EventStore, type ReadStreamOptions, type ReadStreamPagesOptions, type RecordedEvent } from './event-store/event-store.port';
import { InvalidAppendError } from './errors';
import { validateStreamId } from './prepare';

export function matchesFilter(streamId: string, type: string, filter?: EventFilter): boolean {
  if (!filter) return true;
  if (filter.types && filter.types.length > 0 && !filter.types.includes(type)) return false;
  if (filter.streamPrefixes && filter.streamPrefixes.length > 0 && !filter.streamPrefixes.some((p) => streamId.startsWith(p))) {
    return false;
  }
  return true;
}

export interface StreamWindow {
  direction: 'forwards' | 'backwards';
  from: number;
  maxCount: number;
}

/**
 * How far a read of the events after `after` looked, given its last event's position: a full page
 * (`full`) only up to that event; a shorter one up to `head`, the store's head taken before the
 * read or in its snapshot (every event at or below it is committed, so no match there was left
 * out). `head` 0 for an unfiltered read, which knows no further than its last event (or `after`).
 */
export function scannedTo(after: number, last: number | undefined, full: boolean, head: number): number {
  return full ? (last ?? after) : Math.max(last ?? after, head);
}

/** Normalises read-stream options; rejects nonsense such as negative revisions. */
export function streamWindow(options: ReadStreamOptions): StreamWindow {
  const direction = options.direction ?? 'forwards';
  if (direction !== 'forwards' && direction !== 'backwards') throw new InvalidAppendError(`unknown direction '${String(direction)}'`);
  const from = options.fromRevision ?? (direction === 'forwards' ? 0 : Number.MAX_SAFE_INTEGER);
  if (!Number.isSafeInteger(from) || from < 0) throw new InvalidAppendError('fromRevision must be a non-negative integer');
  const maxCount = options.maxCount ?? Number.MAX_SAFE_INTEGER;
  if (!Number.isSafeInteger(maxCount) || maxCount < 0) throw new InvalidAppendError('maxCount must be a non-negative integer');
  return { direction, from, maxCount };
}

/** Slices an in-memory stream (rows indexed by revision) per the read options. */
export function pageStream<T>(stream: T[], options: ReadStreamOptions): T[] {
  const w = streamWindow(options);
  if (w.direction === 'forwards') return stream.slice(w.from, w.from + Math.min(w.maxCount, stream.length));
  const start = Math.min(w.from, stream.length - 1);
  const out: T[] = [];
  for (let i = start; i >= 0 && out.length < w.maxCount; i--) out.push(stream[i]);
  return out;
}

export interface PagesWindow {
  from: number;
  /** Inclusive; undefined for the end of the stream. */
  to?: number;
  pageSize: number;
}

/** Normalises paged-read options; rejects nonsense such as a page of no events. */
export function pagesWindow(options: ReadStreamPagesOptions): PagesWindow {
  const from = options.fromRevision ?? 0;
  if (!Number.isSafeInteger(from) || from < 0) throw new InvalidAppendError('fromRevision must be a non-negative integer');
  const to = options.toRevision;
  if (to !== undefined && (!Number.isSafeInteger(to) || to < -1)) throw new InvalidAppendError('toRevision must be an integer of -1 or more');
  const pageSize = options.pageSize ?? DEFAULT_PAGE_EVENTS;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1) throw new InvalidAppendError('pageSize must be a positive integer');
  return { from, to, pageSize };
}

/** Events still to read from `at` for a page, given the window (0 when the window is done). */
export function pageCount(w: PagesWindow, at: number): number {
  return w.to === undefined ? w.pageSize : Math.max(0, Math.min(w.pageSize, w.to + 1 - at));
}

/** `readStreamPages` on top of `readStream`: one read per page, as the caller pulls. */
export async function* pagesByReadStream(
  store: Pick<EventStore, 'readStream'>,
  streamId: string,
  options: ReadStreamPagesOptions = {},
): AsyncGenerator<RecordedEvent[]> {
  const w = pagesWindow(options);
  for (let at = w.from; ; ) {
    const count = pageCount(w, at);
    if (count === 0) return;
    const page = await store.readStream(streamId, { fromRevision: at, maxCount: count });
    if (page.length > 0) yield page;
    if (page.length < count) return;
    at += page.length;
  }
}

/** Streams asked of the database per statement by `streamExtents`: bounds the statement's size. */
export const EXTENT_BATCH_STREAMS = 500;

/** The ids of a `streamExtents` call, validated, without repeats, in batches of EXTENT_BATCH_STREAMS. */
export function extentBatches(streamIds: readonly string[]): string[][] {
  const unique = [...new Set(streamIds.map((id) => validateStreamId(id)))];
  const batches: string[][] = [];
  for (let i = 0; i < unique.length; i += EXTENT_BATCH_STREAMS) batches.push(unique.slice(i, i + EXTENT_BATCH_STREAMS));
  return batches;
}
