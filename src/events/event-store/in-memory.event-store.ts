import {
  DEFAULT_MAX_EVENT_BYTES,
  type AppendOptions,
  type AppendResult,
  type EventStore,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type ReadStreamPagesOptions,
  type RecordedEvent,
  type StreamExtent,
  type SubscribeOptions,
  type Subscription,
} from './event-store.port';
import { PositionNotifier } from '../position-notifier';
import {
  checkExpectedRevision,
  decodeRow,
  planRecordedAppend,
  prepareEvents,
  prepareRecordedEvents,
  resolveIdempotentAppend,
  validateExpectedRevision,
  validateStreamId,
  type StoredRow,
} from '../prepare';
import { extentBatches, matchesFilter, pageStream, pagesByReadStream } from '../read-helpers';
import { CatchUpSubscription } from '../subscription';
import type { StoreOptions } from './store-options';

interface MemoryRow extends StoredRow {
  contentHash: string;
}

/**
 * In-memory adapter for unit tests. Stores the same serialised rows the SQL adapters store, so
 * what a test reads back has been through the same JSON round trip.
 */
export class InMemoryEventStore implements EventStore {
  readonly kind = 'memory';
  private readonly rows: MemoryRow[] = [];
  private readonly streams = new Map<string, MemoryRow[]>();
  private readonly byId = new Map<string, MemoryRow>();
  private readonly checkpoints = new Map<string, number>();
  private readonly notifier = new PositionNotifier();
  private readonly maxEventBytes: number;

  constructor(private readonly options: StoreOptions = {}) {
    this.maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  }

  async append(streamId: string, events: NewEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    validateStreamId(streamId);
    const expected = validateExpectedRevision(options.expectedRevision);
    const prepared = prepareEvents(events, this.maxEventBytes);
    const stored = prepared
      .map((e) => this.byId.get(e.id))
      .filter((r): r is MemoryRow => r !== undefined)
      .map((r) => ({ id: r.id, streamId: r.stream_id, revision: Number(r.revision), position: Number(r.position), contentHash: r.contentHash }));
    const replay = resolveIdempotentAppend(streamId, prepared, stored);
    if (replay) return replay;
    const stream = this.streams.get(streamId) ?? [];
    checkExpectedRevision(streamId, expected, stream.length === 0 ? null : stream.length - 1);
    const recordedAt = new Date().toISOString();
    for (const e of prepared) {
      const row: MemoryRow = {
        id: e.id,
        stream_id: streamId,
        revision: stream.length,
        position: this.rows.length + 1,
        type: e.type,
        data: e.data,
        metadata: e.metadata,
        recorded_at: recordedAt,
        contentHash: e.contentHash,
      };
      stream.push(row);
      this.rows.push(row);
      this.byId.set(e.id, row);
    }
    this.streams.set(streamId, stream);
    this.notifier.notify(this.rows.length);
    return { nextExpectedRevision: stream.length - 1, position: this.rows.length };
  }

  async appendRecorded(events: readonly RecordedEvent[]): Promise<AppendResult> {
    const prepared = prepareRecordedEvents(events, this.maxEventBytes);
    const stored = prepared
      .map((e) => this.byId.get(e.id))
      .filter((r): r is MemoryRow => r !== undefined)
      .map((r) => ({ id: r.id, streamId: r.stream_id, revision: Number(r.revision), position: Number(r.position), contentHash: r.contentHash }));
    const heads = new Map<string, number>();
    for (const e of prepared) {
      const stream = this.streams.get(e.streamId);
      if (stream && stream.length > 0) heads.set(e.streamId, stream.length - 1);
    }
    const { write, result } = planRecordedAppend(prepared, stored, heads, this.rows.length, 'dense');
    for (const e of write) {
      const row: MemoryRow = {
        id: e.id,
        stream_id: e.streamId,
        revision: e.revision,
        position: e.position,
        type: e.type,
        data: e.data,
        metadata: e.metadata,
        recorded_at: e.recordedAt,
        contentHash: e.contentHash,
      };
      const stream = this.streams.get(e.streamId) ?? [];
      stream.push(row);
      this.streams.set(e.streamId, stream);
      this.rows.push(row);
      this.byId.set(e.id, row);
    }
    if (write.length > 0) this.notifier.notify(this.rows.length);
    return result;
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    validateStreamId(streamId);
    const stream = this.streams.get(streamId) ?? [];
    return pageStream(stream, options).map((r) => decodeRow(r, this.options.upcasters));
  }

  readStreamPages(streamId: string, options?: ReadStreamPagesOptions): AsyncIterable<RecordedEvent[]> {
    return pagesByReadStream(this, streamId, options);
  }

  async streamRevision(streamId: string): Promise<number | null> {
    const stream = this.streams.get(streamId);
    return stream && stream.length > 0 ? stream.length - 1 : null;
  }

  async streamExtents(streamIds: readonly string[]): Promise<Map<string, StreamExtent>> {
    const out = new Map<string, StreamExtent>();
    for (const batch of extentBatches(streamIds)) {
      for (const streamId of batch) {
        const stream = this.streams.get(streamId);
        if (stream && stream.length > 0) {
          out.set(streamId, { count: stream.length, firstRevision: Number(stream[0].revision), lastRevision: Number(stream[stream.length - 1].revision) });
        }
      }
    }
    return out;
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const after = options.after ?? 0;
    const max = options.maxCount ?? Number.MAX_SAFE_INTEGER;
    const out: RecordedEvent[] = [];
    for (let i = Math.max(0, after); i < this.rows.length && out.length < max; i++) {
      const row = this.rows[i];
      if (matchesFilter(row.stream_id, row.type, options.filter)) out.push(decodeRow(row, this.options.upcasters));
    }
    return out;
  }

  async headPosition(): Promise<number> {
    return this.rows.length;
  }

  subscribe(options: SubscribeOptions = {}): Subscription {
    return new CatchUpSubscription(this, options);
  }

  waitForEvents(after: number, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return this.notifier.wait(after, timeoutMs, signal);
  }

  async loadCheckpoint(name: string): Promise<number | null> {
    return this.checkpoints.get(name) ?? null;
  }

  async saveCheckpoint(name: string, position: number): Promise<void> {
    this.checkpoints.set(name, position);
  }

  async close(): Promise<void> {
    this.notifier.releaseAll();
  }
}
