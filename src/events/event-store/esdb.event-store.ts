// One file over 400 lines on purpose: one adapter whose parts (log-offset positions, appends idempotent by id, copy-in, resumable reads) rest on invariants stated once below.
import { createHash } from 'node:crypto';
import type { StoreHealthSink } from '../../shared/health';
import { InvalidAppendError, RecordedPositionError, StoreUnavailableError, WrongExpectedRevisionError } from '../errors';
import type { EsdbConnection, EsdbExpected, EsdbNewEvent, EsdbPosition, EsdbRecord } from '../esdb.client';
import {
  DEFAULT_MAX_EVENT_BYTES,
  type AppendOptions,
  type AppendResult,
  type EventFilter,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type ReadStreamPagesOptions,
  type RecordedEvent,
  type StreamExtent,
} from './event-store.port';
import type { StoreOptions } from './store-options';
import {
  planRecordedAppend,
  prepareEvents,
  prepareRecordedEvents,
  resolveIdempotentAppend,
  validateExpectedRevision,
  validateStreamId,
  type PreparedEvent,
  type StoredIdentity,
} from '../prepare';
import { extentBatches, matchesFilter, pagesByReadStream, scannedTo, streamWindow } from '../read-helpers';
import type { TailEvent, TailRead } from './shared-tail';
import { TailedStore } from './tailed-store';

export interface EsdbStoreOptions extends StoreOptions {
  /**
   * Prefix of every stream triad writes (default `triad`): events go to `<ns>:<streamId>`, the
   * stores beside them to `<ns>.<kind>-<key>`. `$all` reads keep only `<ns>:` streams, so other
   * applications (and tests) can share one server.
   */
  namespace?: string;
  /** Told of every call that could not reach the server, and of every one that could. */
  health?: StoreHealthSink;
}

/** Events asked of `$all` per read while filtering on this side. */
const ALL_PAGE = 1_000;
/** Stream events asked per read while looking for an id. */
const SCAN_PAGE = 500;
/** Streams asked at once by `streamExtents`. */
const EXTENT_CONCURRENCY = 32;
/** Positions remembered with their EventStoreDB position, so a resume needs no probe. */
const POSITION_CACHE = 10_000;
/** What the tail counts for an event's metadata, which the client hands over parsed. */
const METADATA_CHARS = 256;
/** Subscription checkpoints kept per name (older ones are dropped by the server's scavenge). */
const KEEP_CHECKPOINTS = 3;

const NAMESPACE = /^[A-Za-z][A-Za-z0-9_]{0,31}$/;

/**
 * What triad stores as an event's custom metadata: its own id, content hash and metadata; for an
 * event copied in from another store (`appendRecorded`), the position and time it was recorded
 * at there, which it keeps.
 */
interface Envelope {
  id: string;
  hash: string;
  metadata: EventMetadata;
  recorded?: { position: number; at: string };
}

/**
 * An entry of the position map (`<ns>.position-map`), written by `appendRecorded` before each
 * batch: `base`, the highest position copied in once the batch is written (events appended later
 * are numbered above it), and `after`, the position and `$all` place of the last event stored
 * before the batch, so a read after a copied position starts near it instead of at the beginning.
 */
interface PositionMapEntry {
  base: number;
  after: { position: number; commit: string; prepare: string } | null;
}

/**
 * EventStoreDB / KurrentDB adapter. Each triad stream is one server stream (`<ns>:<streamId>`),
 * so per-stream revisions and expected revisions are the server's own.
 *
 * Global positions. The port wants one number per event, strictly increasing in commit order,
 * that a reader can resume after. EventStoreDB orders `$all` by (commit, prepare): the events of
 * one append share the commit position (where the write began) and each has its own prepare
 * position (where its record is in the log). The prepare position is unique and, since one
 * append's records are written together, increases in `$all` order; triad's position is
 * prepare + 1 (so positions start above 0). Positions are not dense: they are log offsets.
 * Resuming after position p reads `$all` from the event's own (commit, prepare) — remembered for
 * positions this process has seen, otherwise found by one backwards read (the event before
 * (p-1, p-1) tells whether p-1 lies inside an append that began earlier) — and skips what is not
 * after it. `$all` only ever serves committed events, so a reader cannot pass a write in flight.
 *
 * Idempotent appends are decided here, not by the server's id cache: every event carries its
 * triad id and content hash in its metadata. An append at an exact revision (or `no_stream`) that
 * conflicts reads the events right after the expected revision: if they are this batch, the
 * append was already made and its original result is returned. An append with `any` or
 * `stream_exists` first looks for the batch's ids in the stream (a read of the stream; triad's
 * own writes all use exact revisions). An id reused in another stream is not detected (the
 * server has no index by id); docs/EVENTS.md says so.
 *
 * Live subscriptions share one reader of `$all` per process (SharedTail), woken by appends in this
 * process and otherwise polling (every 250 ms); a scan that reaches the end of `$all` knows the
 * head it saw, so a filtered read needs no separate read of the head.
 * The connection is handed in by the storage, which closes it after this store.
 */
export class EsdbEventStore extends TailedStore implements EventStore {
  readonly kind = 'esdb';
  readonly namespace: string;
  private readonly prefix: string;
  private readonly maxEventBytes: number;
  private readonly positions = new Map<number, EsdbPosition>();
  private readonly checkpointStreams = new Set<string>();
  private closed = false;
  /** The highest position copied in (0: none): events of this store's own are numbered above it. */
  private base: number | undefined;
  private baseLoading: Promise<void> | undefined;
  /** The position map's `after` places, in order: where reads after a copied position start. */
  private mapIndex: { position: number; at: EsdbPosition }[] | undefined;

  constructor(
    private readonly conn: EsdbConnection,
    private readonly options: EsdbStoreOptions = {},
  ) {
    super();
    this.namespace = options.namespace ?? 'triad';
    if (!NAMESPACE.test(this.namespace)) throw new Error(`invalid EventStoreDB namespace '${this.namespace}'`);
    this.prefix = `${this.namespace}:`;
    this.maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  }

  /**
   * Events another store recorded, each keeping its id, stream, revision, position and time.
   * EventStoreDB assigns every event's place in its log, so the position and time are kept in the
   * event's triad metadata and read back from there; the position map records, before each batch,
   * the highest position copied (events appended later are numbered above it) and where in `$all`
   * the batch begins. Each stream's events are appended at their exact revision; a batch is
   * written stream run by stream run, in its order, so an interrupted batch leaves a prefix of it
   * (a resumed copy skips what is there, and events already stored identically are skipped here).
   * Refused once the store holds events of its own (RecordedPositionError): positions copied in
   * must all come before them.
   */
  async appendRecorded(events: readonly RecordedEvent[]): Promise<AppendResult> {
    const prepared = prepareRecordedEvents(events, this.maxEventBytes);
    await this.ready();
    const streams = [...new Set(prepared.map((e) => e.streamId))];
    const heads = new Map<string, number>();
    const stored: StoredIdentity[] = [];
    for (const streamId of streams) {
      const name = this.prefix + streamId;
      const [last] = await this.call(() => this.conn.readStream(name, 'end', { direction: 'backwards', maxCount: 1 }));
      if (!last) continue;
      heads.set(streamId, Number(last.revision));
      const mine = prepared.filter((e) => e.streamId === streamId);
      const from = Math.min(...mine.map((e) => e.revision));
      if (from > Number(last.revision)) continue;
      const there = await this.call(() => this.conn.readStream(name, BigInt(from), { maxCount: mine.length }));
      for (const r of there) {
        const envelope = envelopeOf(r);
        if (envelope) stored.push({ id: envelope.id, streamId, revision: Number(r.revision), position: this.positionOf(r), contentHash: envelope.hash });
      }
    }
    const lastRecord = await this.lastRecord();
    const head = lastRecord ? this.positionOf(lastRecord) : 0;
    const { write, result } = planRecordedAppend(prepared, stored, heads, head);
    if (write.length === 0) return result;
    if (lastRecord && !envelopeOf(lastRecord)?.recorded) {
      // The store has events of its own: a copied event after them would be numbered below them.
      const err = new RecordedPositionError(write[0].id, write[0].position, head + 1);
      err.message = `recorded event '${write[0].id}' cannot be copied in: this EventStoreDB store holds events of its own (head ${head}), and copied events must come before them`;
      throw err;
    }
    const entry: PositionMapEntry = {
      base: Math.max(this.base ?? 0, write[write.length - 1].position),
      after: lastRecord?.position ? { position: head, commit: String(lastRecord.position.commit), prepare: String(lastRecord.position.prepare) } : null,
    };
    await this.call(() => this.conn.append(this.positionMapStream(), [{ id: uuidFor(`${this.positionMapStream()}@${entry.base}@${head}`), type: 'PositionMapped', data: json(entry), metadata: json({}) }], 'any'));
    this.base = entry.base;
    if (entry.after && this.mapIndex) this.mapIndex.push({ position: entry.after.position, at: lastRecord!.position! });
    for (let i = 0; i < write.length; ) {
      let j = i + 1;
      while (j < write.length && write[j].streamId === write[i].streamId) j++;
      const run = write.slice(i, j);
      const first = run[0];
      const outcome = await this.call(() =>
        this.conn.append(
          this.prefix + first.streamId,
          run.map((e) => this.encode(e, { position: e.position, at: e.recordedAt })),
          first.revision === 0 ? 'no_stream' : BigInt(first.revision - 1),
        ),
      );
      if (!outcome.ok) throw new WrongExpectedRevisionError(first.streamId, first.revision === 0 ? 'no_stream' : first.revision - 1, outcome.actual === null ? null : Number(outcome.actual));
      i = j;
    }
    this.notifier.notify(result.position);
    return result;
  }

  async append(streamId: string, events: NewEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    validateStreamId(streamId);
    const expected = validateExpectedRevision(options.expectedRevision);
    const prepared = prepareEvents(events, this.maxEventBytes);
    await this.ready();
    const name = this.prefix + streamId;
    if (expected === 'any' || expected === 'stream_exists') {
      const stored = await this.findIds(name, prepared);
      const replay = resolveIdempotentAppend(streamId, prepared, stored);
      if (replay) return replay;
    }
    const outcome = await this.call(() => this.conn.append(name, prepared.map((e) => this.encode(e)), toEsdbExpected(expected)));
    if (!outcome.ok) {
      const from = typeof expected === 'number' ? expected + 1 : 0;
      if (expected === 'no_stream' || typeof expected === 'number') {
        const after = await this.call(() => this.conn.readStream(name, BigInt(from), { maxCount: prepared.length }));
        const replay = resolveIdempotentAppend(streamId, prepared, this.identities(after, prepared));
        if (replay) return replay;
      }
      throw new WrongExpectedRevisionError(streamId, expected, outcome.actual === null ? null : Number(outcome.actual));
    }
    // The position is read back from the stream: what `$all` reports for the event, whatever the
    // server version puts in the append's answer.
    const [last] = await this.call(() => this.conn.readStream(name, outcome.revision, { maxCount: 1 }));
    const position = last ? this.positionOf(last) : 0;
    // Readers waiting for these events (urgent ones) get them at once, not after the lazy gather.
    this.tail.appended(prepared.map((e) => ({ streamId, type: e.type })));
    this.notifier.notify(position);
    return { nextExpectedRevision: Number(outcome.revision), position };
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    validateStreamId(streamId);
    const w = streamWindow(options);
    if (w.maxCount === 0) return [];
    await this.ready();
    const name = this.prefix + streamId;
    const forwards = w.direction === 'forwards';
    const from = !forwards && w.from >= Number.MAX_SAFE_INTEGER ? 'end' : BigInt(w.from);
    const records = await this.call(() =>
      this.conn.readStream(name, from, { direction: w.direction, maxCount: w.maxCount >= Number.MAX_SAFE_INTEGER ? undefined : w.maxCount }),
    );
    return records.map((r) => this.decode(r));
  }

  readStreamPages(streamId: string, options?: ReadStreamPagesOptions): AsyncIterable<RecordedEvent[]> {
    return pagesByReadStream(this, streamId, options);
  }

  async streamRevision(streamId: string): Promise<number | null> {
    validateStreamId(streamId);
    const [last] = await this.call(() => this.conn.readStream(this.prefix + streamId, 'end', { direction: 'backwards', maxCount: 1 }));
    return last ? Number(last.revision) : null;
  }

  /** Two reads of one event per stream (its first and its last), a few dozen streams at a time. */
  async streamExtents(streamIds: readonly string[]): Promise<Map<string, StreamExtent>> {
    const ids = extentBatches(streamIds).flat();
    const out = new Map<string, StreamExtent>();
    const found = new Map<string, StreamExtent>();
    let next = 0;
    const worker = async () => {
      while (next < ids.length) {
        const id = ids[next++];
        const name = this.prefix + id;
        const [first] = await this.call(() => this.conn.readStream(name, 'start', { maxCount: 1 }));
        if (!first) continue;
        const [last] = await this.call(() => this.conn.readStream(name, 'end', { direction: 'backwards', maxCount: 1 }));
        const firstRevision = Number(first.revision);
        const lastRevision = Number((last ?? first).revision);
        found.set(id, { count: lastRevision - firstRevision + 1, firstRevision, lastRevision });
      }
    };
    await Promise.all(Array.from({ length: Math.min(EXTENT_CONCURRENCY, ids.length) }, worker));
    // In the order asked, as the SQL adapters answer.
    for (const id of ids) {
      const extent = found.get(id);
      if (extent) out.set(id, extent);
    }
    return out;
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const after = options.after ?? 0;
    if (!Number.isSafeInteger(after) || after < 0) throw new InvalidAppendError('after must be a non-negative integer');
    const max = options.maxCount ?? Number.MAX_SAFE_INTEGER;
    if (!Number.isSafeInteger(max) || max < 0) throw new InvalidAppendError('maxCount must be a non-negative integer');
    if (max === 0) return [];
    const filter = options.filter;
    return (await this.scanAll(after, max, filter ? [filter] : undefined)).events.map((held) => held.event);
  }

  /**
   * The triad events after `after` that match any of `filters` (every one when undefined), at most
   * `max`, read from `$all` and filtered on this side (the client's reads take no filter), and how
   * far the scan looked: the last event's position when `max` were found, else the position of the
   * last triad event in `$all` as the scan saw it (it read to the end), or `after` without one.
   */
  private async scanAll(after: number, max: number, filters: readonly EventFilter[] | undefined): Promise<TailRead> {
    await this.ready();
    const out: TailEvent[] = [];
    let seen = after;
    const done = () => ({ events: out, scannedTo: scannedTo(after, out.at(-1)?.event.position, out.length >= max, seen) });
    // `skip`: everything at or before it in $all order has been read (or is not after `after`).
    let skip: EsdbPosition | undefined = after > 0 ? await this.resumeAt(after) : undefined;
    let from: EsdbPosition | 'start' = skip ?? 'start';
    // The first read asks for what the caller wants (plus the event resumed from); later ones, when
    // other streams' events or events the filters leave out were skipped, for four times more, up
    // to a full page: a filtered page of a few events costs a few reads, not one of the whole log.
    let size = Math.min(ALL_PAGE, max + 1);
    for (;;) {
      const pageSize = size;
      const page = await this.call(() => this.conn.readAll(from, { maxCount: pageSize }));
      for (const r of page) {
        if (!r.position || (skip && !isAfter(r.position, skip))) continue;
        if (!r.stream.startsWith(this.prefix)) continue;
        // Reads resumed inside copied events start at the map entry before `after`.
        const position = this.positionOf(r);
        if (position <= after) continue;
        seen = position;
        const streamId = r.stream.slice(this.prefix.length);
        if (filters && !filters.some((filter) => matchesFilter(streamId, r.type, filter))) continue;
        out.push({ event: this.decode(r, position), storedType: r.type, size: r.data.length + METADATA_CHARS });
        if (out.length >= max) return done();
      }
      if (page.length < pageSize) return done();
      const last = page[page.length - 1].position;
      if (!last) return done();
      skip = last;
      from = last;
      size = Math.min(ALL_PAGE, size * 4);
    }
  }

  /** The position of the last triad event in `$all` (0 when there is none). */
  async headPosition(): Promise<number> {
    await this.ready();
    const last = await this.lastRecord();
    return last ? this.positionOf(last) : 0;
  }

  /**
   * The last triad event in `$all`. Often the very last record (a store writing alone), so the
   * first read asks for one and later ones for 64 (past a checkpoint or the server's own events).
   */
  private async lastRecord(): Promise<EsdbRecord | undefined> {
    let from: EsdbPosition | 'end' = 'end';
    for (let size = 1; ; size = 64) {
      const page = await this.call(() => this.conn.readAll(from, { direction: 'backwards', maxCount: size }));
      for (const r of page) if (r.position && r.stream.startsWith(this.prefix)) return r;
      if (page.length < size) return undefined;
      const last = page[page.length - 1].position;
      if (!last) return undefined;
      from = last;
    }
  }

  /** Loads, once, the highest position copied in (the position map's last entry; 0 without one). */
  private ready(): Promise<void> {
    if (this.base !== undefined) return Promise.resolve();
    this.baseLoading ??= (async () => {
      const [last] = await this.call(() => this.conn.readStream(this.positionMapStream(), 'end', { direction: 'backwards', maxCount: 1 }));
      this.base = last ? mapEntryOf(last).base : 0;
    })().finally(() => {
      this.baseLoading = undefined;
    });
    return this.baseLoading;
  }

  /** The position map's places, read once (only reads after a copied position need them). */
  private async loadMapIndex(): Promise<{ position: number; at: EsdbPosition }[]> {
    if (this.mapIndex) return this.mapIndex;
    const records = await this.call(() => this.conn.readStream(this.positionMapStream(), 'start'));
    const index: { position: number; at: EsdbPosition }[] = [];
    for (const r of records) {
      const after = mapEntryOf(r).after;
      if (after) index.push({ position: after.position, at: { commit: BigInt(after.commit), prepare: BigInt(after.prepare) } });
    }
    this.mapIndex = index;
    return index;
  }

  private positionMapStream(): string {
    return `${this.namespace}.position-map`;
  }

  /** The shared tail's read: a scan that reads to the end of `$all` sees the head, so no read of it first. */
  protected readAfter(after: number, maxCount: number, filters: readonly EventFilter[] | undefined): Promise<TailRead> {
    return this.scanAll(after, maxCount, filters);
  }

  async loadCheckpoint(name: string): Promise<number | null> {
    const [last] = await this.call(() => this.conn.readStream(this.checkpointStream(name), 'end', { direction: 'backwards', maxCount: 1 }));
    if (!last) return null;
    const value = JSON.parse(Buffer.from(last.data).toString('utf8')) as { position?: unknown };
    return typeof value.position === 'number' ? value.position : null;
  }

  async saveCheckpoint(name: string, position: number): Promise<void> {
    const stream = this.checkpointStream(name);
    await this.call(() =>
      this.conn.append(stream, [{ id: uuidFor(`${stream}@${Date.now()}@${Math.random()}`), type: 'SubscriptionCheckpoint', data: json({ position }), metadata: json({}) }], 'any'),
    );
    if (!this.checkpointStreams.has(stream)) {
      await this.call(() => this.conn.keepLast(stream, KEEP_CHECKPOINTS));
      this.checkpointStreams.add(stream);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.notifier.releaseAll();
  }

  private checkpointStream(name: string): string {
    return `${this.namespace}.position-${name}`;
  }

  /**
   * Where to read `$all` from to get the events after `after`, found without reading it all; at
   * or before it inside copied events (the reader skips what is not after it), undefined for the
   * beginning.
   */
  private async resumeAt(after: number): Promise<EsdbPosition | undefined> {
    const known = this.positions.get(after);
    if (known) return known;
    const base = this.base ?? 0;
    if (after <= base) {
      const index = await this.loadMapIndex();
      let found: EsdbPosition | undefined;
      for (const entry of index) if (entry.position <= after) found = entry.at;
      return found;
    }
    const q = BigInt(after - base - 1);
    const [before] = await this.call(() => this.conn.readAll({ commit: q, prepare: q }, { direction: 'backwards', maxCount: 1 }));
    // The event before (q, q) in $all order began its append before q and has its record at or
    // after q: q lies inside that append, whose commit position is the event's.
    if (before?.position && before.position.commit < q && before.position.prepare >= q) return { commit: before.position.commit, prepare: q };
    return { commit: q, prepare: q };
  }

  /** The batch's ids as stored in the stream (read backwards, a page at a time). */
  private async findIds(name: string, prepared: PreparedEvent[]): Promise<StoredIdentity[]> {
    const wanted = new Set(prepared.map((e) => e.id));
    const found: StoredIdentity[] = [];
    let from: bigint | 'end' = 'end';
    for (;;) {
      const page = await this.call(() => this.conn.readStream(name, from, { direction: 'backwards', maxCount: SCAN_PAGE }));
      found.push(...this.identities(page, prepared).filter((s) => wanted.has(s.id)));
      if (found.length === wanted.size || page.length < SCAN_PAGE) return found;
      const lowest = page[page.length - 1].revision;
      if (lowest === 0n) return found;
      from = lowest - 1n;
    }
  }

  private identities(records: EsdbRecord[], prepared: PreparedEvent[]): StoredIdentity[] {
    const wanted = new Set(prepared.map((e) => e.id));
    const out: StoredIdentity[] = [];
    for (const r of records) {
      const envelope = envelopeOf(r);
      if (!envelope || !wanted.has(envelope.id)) continue;
      out.push({
        id: envelope.id,
        streamId: r.stream.slice(this.prefix.length),
        revision: Number(r.revision),
        position: this.positionOf(r),
        contentHash: envelope.hash,
      });
    }
    return out;
  }

  private encode(e: PreparedEvent, recorded?: Envelope['recorded']): EsdbNewEvent {
    // The metadata text is spliced in as the prepare step wrote it (canonical JSON).
    const kept = recorded ? `,"recorded":${JSON.stringify({ position: recorded.position, at: recorded.at })}` : '';
    const envelope = `{"id":${JSON.stringify(e.id)},"hash":"${e.contentHash}","metadata":${e.metadata}${kept}}`;
    return { id: uuidFor(e.id), type: e.type, data: Buffer.from(e.data, 'utf8'), metadata: Buffer.from(envelope, 'utf8') };
  }

  /** The triad event a record holds; `position` when the caller has already worked it out. */
  private decode(r: EsdbRecord, position?: number): RecordedEvent {
    const envelope = envelopeOf(r);
    if (!envelope) throw new Error(`event ${r.stream}@${r.revision} was not written by triad (no triad metadata)`);
    const data = JSON.parse(Buffer.from(r.data).toString('utf8')) as unknown;
    const base = {
      id: envelope.id,
      streamId: r.stream.slice(this.prefix.length),
      revision: Number(r.revision),
      position: position ?? this.positionOf(r),
      recordedAt: envelope.recorded?.at ?? new Date(r.created).toISOString(),
    };
    const upcasters = this.options.upcasters;
    if (!upcasters || upcasters.size === 0) return { ...base, type: r.type, data, metadata: envelope.metadata };
    const up = upcasters.apply(r.type, data, envelope.metadata);
    return { ...base, type: up.type, data: up.data, metadata: up.metadata };
  }

  /**
   * An event's position: the one it was recorded at, for an event copied in; else its log offset
   * (prepare + 1) above the highest position copied in.
   */
  private positionOf(r: EsdbRecord): number {
    if (!r.position) throw new Error(`the server gave no $all position for ${r.stream}@${r.revision}`);
    const kept = envelopeOf(r)?.recorded?.position;
    const position = typeof kept === 'number' ? kept : Number(r.position.prepare) + 1 + (this.base ?? 0);
    if (this.positions.size >= POSITION_CACHE) this.positions.delete(this.positions.keys().next().value!);
    this.positions.set(position, r.position);
    return position;
  }

  /** Every call to the server: its reachability goes to the health sink. */
  private async call<T>(run: () => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreUnavailableError('the store is closed');
    try {
      const result = await run();
      this.options.health?.storeAnswered();
      return result;
    } catch (err) {
      if (err instanceof StoreUnavailableError) this.options.health?.storeFailed(err.detail);
      else this.options.health?.storeAnswered();
      throw err;
    }
  }
}

function toEsdbExpected(expected: ExpectedRevision): EsdbExpected {
  return typeof expected === 'number' ? BigInt(expected) : expected;
}

function isAfter(p: EsdbPosition, q: EsdbPosition): boolean {
  return p.commit > q.commit || (p.commit === q.commit && p.prepare > q.prepare);
}

function mapEntryOf(r: EsdbRecord): PositionMapEntry {
  const value = JSON.parse(Buffer.from(r.data).toString('utf8')) as Partial<PositionMapEntry>;
  if (typeof value.base !== 'number' || !Number.isSafeInteger(value.base) || value.base < 0) throw new Error(`the position map entry ${r.stream}@${r.revision} is not triad's`);
  return { base: value.base, after: value.after ?? null };
}

function envelopeOf(r: EsdbRecord): Envelope | undefined {
  const m = r.metadata as Partial<Envelope> | undefined;
  if (!m || typeof m !== 'object' || typeof m.id !== 'string' || typeof m.hash !== 'string' || typeof m.metadata !== 'object') return undefined;
  return m as Envelope;
}

export function json(value: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(value), 'utf8');
}

/**
 * EventStoreDB wants UUID event ids; triad's are any 1-128 characters of [A-Za-z0-9_.:-]. The
 * server's id is derived from triad's (sha256, shaped as a version 8 UUID), so the same triad id
 * always gives the same server id.
 */
export function uuidFor(id: string): string {
  const h = createHash('sha256').update(id).digest();
  h[6] = (h[6] & 0x0f) | 0x80;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}
