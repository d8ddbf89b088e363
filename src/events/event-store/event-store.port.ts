/**
 * The event store port. Semantics are modelled on EventStoreDB:
 * - streams with a per-stream revision starting at 0;
 * - append with an expected revision, failing with a typed conflict;
 * - idempotent append by event id;
 * - one global order across streams (positions start at 1, strictly increasing in commit order,
 *   never skipping a committed event);
 * - catch-up subscriptions with durable, named checkpoints.
 *
 * `streamExtents` answers, for many streams at once, how many events each holds and its first and
 * last revisions, without reading the events: revisions are unique integers, so a stream is whole
 * (0, 1, 2 …) iff firstRevision = 0 and count = lastRevision + 1. Integrity checks find holes
 * (events deleted outside the store) that way and read only the streams that have one.
 *
 * Every adapter passes the same contract suite (test/events/event-store/event-store.contract.ts).
 */

/** Metadata carried by every event. Adapters fill defaults for missing fields. */
export interface EventMetadata {
  runId?: string;
  correlationId: string;
  causationId: string | null;
  /** Who caused the event: `user:<name>`, `agent:<role>:<runId>` or `system`. */
  actor: string;
  schemaVersion: number;
  [key: string]: unknown;
}

/** An event as a caller hands it to `append`. */
export interface NewEvent<T = unknown> {
  /** Unique id; the key of idempotent appends. Generated when absent. */
  id?: string;
  type: string;
  data: T;
  metadata?: Partial<EventMetadata>;
}

/** An event as stored and read back: the envelope. */
export interface RecordedEvent<T = unknown> {
  id: string;
  type: string;
  streamId: string;
  revision: number;
  position: number;
  data: T;
  metadata: EventMetadata;
  recordedAt: string;
}

/** `any`: no check; `no_stream`: the stream must not exist; `stream_exists`: it must; a number: its last revision. */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | number;

export interface AppendOptions {
  expectedRevision?: ExpectedRevision;
}

export interface AppendResult {
  /** Revision of the last event of the batch; pass it as the next expected revision. */
  nextExpectedRevision: number;
  /** Global position of the last event of the batch. */
  position: number;
}

/** What `streamExtents` reports of one stream. */
export interface StreamExtent {
  /** Events the stream holds. */
  count: number;
  /** Its lowest revision: 0 unless events were removed or changed outside the store. */
  firstRevision: number;
  /** Its highest revision. The stream has a hole iff firstRevision !== 0 or count !== lastRevision + 1. */
  lastRevision: number;
}

export type Direction = 'forwards' | 'backwards';

export interface ReadStreamOptions {
  /** Inclusive. Default: 0 forwards, the last revision backwards. */
  fromRevision?: number;
  direction?: Direction;
  maxCount?: number;
}

export interface ReadStreamPagesOptions {
  /** Inclusive. Default 0. */
  fromRevision?: number;
  /** Inclusive. Default: the end of the stream. */
  toRevision?: number;
  /** Events per page. Default 2,000. */
  pageSize?: number;
}

export const DEFAULT_PAGE_EVENTS = 2_000;

export interface EventFilter {
  /** Only events whose stream id starts with one of these prefixes. */
  streamPrefixes?: string[];
  /** Only events of these types. */
  types?: string[];
}

export interface ReadAllOptions {
  /** Exclusive: events with a position greater than this. Default 0 (the beginning). */
  after?: number;
  maxCount?: number;
  filter?: EventFilter;
}

export interface SubscribeOptions {
  /**
   * A durable subscription name. When given and `after` is not, the subscription resumes after
   * the position last saved under this name with `checkpoint()`.
   */
  name?: string;
  after?: number;
  filter?: EventFilter;
  /** Events fetched per read; the iterator reads the next page only when the consumer pulls. */
  batchSize?: number;
  signal?: AbortSignal;
  /**
   * Called when a read has shown that no event matching `filter` lies at or below `position`
   * beyond those already handed to the consumer (with a filter, the scan moves past events it
   * skips): a filtered reader can tell it has caught up with the store's head.
   */
  onScanned?: (position: number) => void;
  /**
   * Its consumer reacts at once to what this process appends (a launch's dispatch, an event
   * stream's client): a matching append of this process's is read within a few milliseconds.
   * Other news a subscription sees may wait a few tens of milliseconds, so that one read of the
   * store takes in more of it (SharedTail).
   */
  urgent?: boolean;
}

/** A subscription's page read from a shared tail: the events, and how far the scan reached. */
export interface TailPage {
  events: RecordedEvent[];
  /** No event matching the filter exists in (after, scannedTo] besides those returned. */
  scannedTo: number;
}

/**
 * A catch-up subscription: history first, then live events, as an async iterator. It reads a page
 * only when the consumer has drained the previous one (backpressure by pulling).
 */
export interface Subscription extends AsyncIterable<RecordedEvent> {
  /** Position of the last event handed to the consumer. */
  readonly position: number;
  /** Durably records `position` under the subscription's name (requires `name`). */
  checkpoint(position?: number): Promise<void>;
  close(): void;
}

export interface EventStore {
  readonly kind: string;
  append(streamId: string, events: NewEvent[], options?: AppendOptions): Promise<AppendResult>;
  /**
   * Stores events another store recorded, exactly as they were: each keeps its id, stream,
   * revision, global position, type, data, metadata and `recordedAt` (`triad store copy`). The
   * batch is written atomically, in its order, and must continue the store: an event not stored yet
   * goes after the store's head position (else RecordedPositionError; the SQL stores keep sparse
   * positions, such as EventStoreDB's log offsets, as they are and continue ordinary appends after
   * the highest; the in-memory store takes only head + 1) and at its stream's next revision (else
   * WrongExpectedRevisionError). EventStoreDB, which assigns every event's place in its log, keeps
   * each recorded position in the event's metadata and reports it, numbers its own appends after
   * the highest, and refuses recorded events once it holds events of its own (RecordedPositionError);
   * a store that cannot keep positions at all refuses every batch with
   * RecordedPositionsNotKeptError. An event whose id is stored already must be stored
   * identically (same stream, revision, position and content), and is skipped — so a batch written
   * again after an interruption is a no-op; any other reuse of an id is EventIdConflictError. The
   * same validation as `append` (size limit, well-formed text) applies. Returns the last event's
   * revision and position.
   */
  appendRecorded(events: readonly RecordedEvent[]): Promise<AppendResult>;
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /**
   * A stream read forwards a page at a time, for folds over long histories: every page but the
   * last is full, and only one page need be decoded at a time. An adapter may read the next page
   * while the caller works on the current one.
   */
  readStreamPages(streamId: string, options?: ReadStreamPagesOptions): AsyncIterable<RecordedEvent[]>;
  /** The last revision of a stream, or null when it does not exist. */
  streamRevision(streamId: string): Promise<number | null>;
  /**
   * The extent (event count, first and last revision) of each given stream that exists, keyed by stream
   * id; streams that do not exist are absent. Reads no event, only the (stream, revision) index.
   */
  streamExtents(streamIds: readonly string[]): Promise<Map<string, StreamExtent>>;
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /** The position of the last committed event (0 when the store is empty). */
  headPosition(): Promise<number>;
  subscribe(options?: SubscribeOptions): Subscription;
  /**
   * Optional: a live subscription's read near the head, shared by every subscription of the
   * process (SharedTail). Undefined when `after` lies before what it holds: read the store then.
   */
  readTail?(after: number, maxCount: number, filter?: EventFilter, urgent?: boolean): Promise<TailPage | undefined>;
  /**
   * Optional: someone waits for this process's subscriptions to reach the head (a query that
   * reads its own writes): the shared tail reads what is new without waiting to gather more.
   */
  expedite?(): void;
  /** Resolves when an event past `after` may exist, or after `timeoutMs`; used by subscriptions. */
  waitForEvents(after: number, timeoutMs: number, signal?: AbortSignal): Promise<void>;
  loadCheckpoint(name: string): Promise<number | null>;
  saveCheckpoint(name: string, position: number): Promise<void>;
  close(): Promise<void>;
}

export const EVENT_STORE = Symbol('EVENT_STORE');

export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;
