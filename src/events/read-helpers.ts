import type { EventFilter, ReadStreamOptions } from './event-store.port';
import { InvalidAppendError } from './errors';

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
