import { uuidv7 } from '../shared/uuidv7';
import { canonicalJson, sha256Hex } from '../shared/canonical-json';
import type { AppendResult, EventMetadata, ExpectedRevision, NewEvent, RecordedEvent } from './event-store/event-store.port';
import { EventIdConflictError, EventTooLargeError, InvalidAppendError, RecordedPositionError, WrongExpectedRevisionError } from './errors';
import type { UpcasterRegistry } from './upcasting';
import { describeIllFormed, findIllFormedText, isWellFormedText } from '../shared/text';
import { deepFreeze } from '../shared/deep-freeze';

/**
 * Validation, serialisation and idempotency rules shared by every adapter, so that they differ
 * only in how they persist.
 */

export interface PreparedEvent {
  id: string;
  type: string;
  data: string;
  metadata: string;
  /** sha256 over type, data and metadata: decides whether a re-append with the same id is the same event. */
  contentHash: string;
}

const STREAM_ID_MAX = 512;
const TYPE_MAX = 256;
const UUIDISH = /^[A-Za-z0-9_.:-]{1,128}$/;

export function validateStreamId(streamId: unknown): string {
  if (typeof streamId !== 'string' || streamId.length === 0) {
    throw new InvalidAppendError('stream id must be a non-empty string');
  }
  if (streamId.length > STREAM_ID_MAX) throw new InvalidAppendError(`stream id is longer than ${STREAM_ID_MAX} characters`);
  if (/[\u0000-\u001f\u007f]/.test(streamId)) throw new InvalidAppendError('stream id contains control characters');
  if (!isWellFormedText(streamId)) throw new InvalidAppendError(`stream id ${describeIllFormed(streamId)}`);
  if (streamId.startsWith('$')) throw new InvalidAppendError("stream ids starting with '$' are reserved");
  return streamId;
}

export function validateExpectedRevision(expected: unknown): ExpectedRevision {
  if (expected === undefined) return 'any';
  if (expected === 'any' || expected === 'no_stream' || expected === 'stream_exists') return expected;
  if (typeof expected === 'number' && Number.isSafeInteger(expected) && expected >= 0) return expected;
  throw new InvalidAppendError(
    `expected revision must be 'any', 'no_stream', 'stream_exists' or a non-negative integer, got ${safeDescribe(expected)}`,
  );
}

function safeDescribe(v: unknown): string {
  try {
    return typeof v === 'string' ? `'${v}'` : String(v);
  } catch {
    return typeof v;
  }
}

export function prepareEvents(events: unknown, maxEventBytes: number): PreparedEvent[] {
  if (!Array.isArray(events) || events.length === 0) throw new InvalidAppendError('append needs at least one event');
  const ids = new Set<string>();
  const firstId = typeof events[0]?.id === 'string' ? events[0].id : undefined;
  let correlationDefault: string | undefined = firstId;
  let shared: { raw: NewEvent['metadata']; metadata: EventMetadata; text: string } | undefined;
  return events.map((raw: NewEvent, index) => {
    if (raw === null || typeof raw !== 'object') throw new InvalidAppendError(`event ${index} is not an object`);
    const id = raw.id ?? uuidv7();
    if (typeof id !== 'string' || !UUIDISH.test(id)) {
      throw new InvalidAppendError(`event ${index} has an invalid id (1-128 characters of [A-Za-z0-9_.:-])`);
    }
    if (ids.has(id)) throw new InvalidAppendError(`event id '${id}' appears twice in one append`);
    ids.add(id);
    correlationDefault ??= id;
    if (typeof raw.type !== 'string' || raw.type.length === 0 || raw.type.length > TYPE_MAX) {
      throw new InvalidAppendError(`event ${index} needs a type of 1-${TYPE_MAX} characters`);
    }
    if (!isWellFormedText(raw.type)) throw new InvalidAppendError(`event ${index} has a type that ${describeIllFormed(raw.type)}`);
    if (raw.data === undefined) throw new InvalidAppendError(`event ${index} (${raw.type}) has no data`);
    if (raw.metadata !== undefined && (raw.metadata === null || typeof raw.metadata !== 'object' || Array.isArray(raw.metadata))) {
      throw new InvalidAppendError(`event ${index} (${raw.type}) metadata must be an object`);
    }
    // The events of an append usually share one metadata object (the command path makes one per
    // append), and the defaults merged into it are the same for all: its text is made once.
    const reused = shared !== undefined && shared.raw === raw.metadata ? shared : undefined;
    const metadata = reused?.metadata ?? withDefaults(index, raw.type, raw.metadata, correlationDefault);
    const data = serialised(index, raw.type, raw.data);
    const meta = reused?.text ?? serialised(index, raw.type, metadata);
    if (!reused) shared = { raw: raw.metadata, metadata, text: meta };
    if (maybeIllFormed(data) || maybeIllFormed(meta)) refuseIllFormed(index, raw.type, raw.data, metadata);
    const bytes = Buffer.byteLength(data) + Buffer.byteLength(meta);
    if (bytes > maxEventBytes) throw new EventTooLargeError(raw.type, bytes, maxEventBytes);
    return { id, type: raw.type, data, metadata: meta, contentHash: sha256Hex(`${raw.type}\n${data}\n${meta}`) };
  });
}

/** An event's metadata: the caller's, over the defaults. */
function withDefaults(index: number, type: string, given: NewEvent['metadata'], correlationId: string): EventMetadata {
  const metadata = { correlationId, causationId: null, actor: 'system', schemaVersion: 1, ...(given ?? {}) } as EventMetadata;
  if (!Number.isSafeInteger(metadata.schemaVersion) || metadata.schemaVersion < 1) {
    throw new InvalidAppendError(`event ${index} (${type}) schemaVersion must be a positive integer`);
  }
  return metadata;
}

/** A value's canonical JSON, or InvalidAppendError naming the event. */
function serialised(index: number, type: string, value: unknown): string {
  try {
    return canonicalJson(value);
  } catch (err) {
    throw new InvalidAppendError(`event ${index} (${type}) is not serialisable: ${(err as Error).message}`);
  }
}

/**
 * Canonical JSON escapes a NUL as `\u0000` and an unpaired surrogate as `\udXXX` (lower case;
 * paired surrogates stay as they are), so one test over each serialised text finds every string
 * that may break the well-formed-text rule, keys included: the hot path costs one substring scan
 * (`includes` is several times faster than the regex, which only runs where a `\u` escape is).
 * A hit may be an escaped backslash followed by `u0000` as text; the walk decides.
 */
const MAYBE_ILL_FORMED = /\\u(?:0000|d[89a-f])/;

function maybeIllFormed(json: string): boolean {
  return json.includes('\\u') && MAYBE_ILL_FORMED.test(json);
}

function refuseIllFormed(index: number, type: string, data: unknown, metadata: EventMetadata): void {
  const found = findIllFormedText(data, 'data') ?? findIllFormedText(metadata, 'metadata');
  if (found) {
    throw new InvalidAppendError(`event ${index} (${type}): ${found.path} ${found.problem}; text in events must be well-formed Unicode without NUL`);
  }
}

/** Checks an expected revision against the stream's current last revision (null: no stream). */
export function checkExpectedRevision(streamId: string, expected: ExpectedRevision, actual: number | null): void {
  const ok =
    expected === 'any' ||
    (expected === 'no_stream' && actual === null) ||
    (expected === 'stream_exists' && actual !== null) ||
    (typeof expected === 'number' && actual === expected);
  if (!ok) throw new WrongExpectedRevisionError(streamId, expected, actual);
}

/** What an adapter found stored under the ids of a batch. */
export interface StoredIdentity {
  id: string;
  streamId: string;
  revision: number;
  position: number;
  contentHash: string;
}

/**
 * Decides an append whose ids are (partly) stored already. The same batch appended again to the
 * same stream returns the original result and writes nothing; anything else that reuses an id is
 * an error, because silently dropping or duplicating part of a batch would lose data.
 * Returns null when none of the ids is stored (a normal append).
 */
export function resolveIdempotentAppend(
  streamId: string,
  prepared: PreparedEvent[],
  stored: StoredIdentity[],
): AppendResult | null {
  if (stored.length === 0) return null;
  const byId = new Map(stored.map((s) => [s.id, s]));
  let previous: StoredIdentity | undefined;
  for (const event of prepared) {
    const found = byId.get(event.id);
    if (!found) {
      throw new EventIdConflictError(
        prepared.find((e) => byId.has(e.id))!.id,
        'this batch mixes already-stored and new events; re-append exactly the original batch',
      );
    }
    if (found.streamId !== streamId) throw new EventIdConflictError(event.id, `it belongs to stream '${found.streamId}'`);
    if (found.contentHash !== event.contentHash) throw new EventIdConflictError(event.id, 'stored with different content');
    if (previous && found.revision !== previous.revision + 1) {
      throw new EventIdConflictError(event.id, 'stored in a different order or batch');
    }
    previous = found;
  }
  return { nextExpectedRevision: previous!.revision, position: previous!.position };
}

/** A recorded event ready to be stored as it was (`appendRecorded`). */
export interface PreparedRecordedEvent extends PreparedEvent {
  streamId: string;
  revision: number;
  position: number;
  /** As Date#toISOString writes it. */
  recordedAt: string;
}

/**
 * Validates and serialises recorded events for `appendRecorded`: the same checks as `append`
 * (ids, types, size, well-formed text), plus the envelope's stream, revision, position and time,
 * and positions that increase through the batch.
 */
export function prepareRecordedEvents(events: unknown, maxEventBytes: number): PreparedRecordedEvent[] {
  if (!Array.isArray(events) || events.length === 0) throw new InvalidAppendError('appendRecorded needs at least one event');
  const recorded = events as RecordedEvent[];
  const prepared = prepareEvents(
    recorded.map((e) => ({ id: e?.id, type: e?.type, data: e?.data, metadata: e?.metadata })),
    maxEventBytes,
  );
  return prepared.map((p, i) => {
    const e = recorded[i];
    validateStreamId(e.streamId);
    if (!Number.isSafeInteger(e.revision) || e.revision < 0) throw new InvalidAppendError(`recorded event ${i} has an invalid revision`);
    if (!Number.isSafeInteger(e.position) || e.position < 1) throw new InvalidAppendError(`recorded event ${i} has an invalid position`);
    if (i > 0 && !(e.position > recorded[i - 1].position)) throw new InvalidAppendError(`recorded event ${i} is not at a position after the event before it`);
    const at = typeof e.recordedAt === 'string' ? new Date(e.recordedAt) : undefined;
    if (!at || Number.isNaN(at.getTime())) throw new InvalidAppendError(`recorded event ${i} has an invalid recordedAt`);
    return { ...p, streamId: e.streamId, revision: e.revision, position: e.position, recordedAt: at.toISOString() };
  });
}

/**
 * Decides which recorded events of a batch to write, given what the store holds: the ids of the
 * batch already stored, the current last revision of each of the batch's streams (absent: no
 * stream) and the store's head position. Stored events must be identical and are skipped; the
 * others must continue the global order and their streams. Throws, writing nothing, otherwise.
 *
 * `positions`: `dense` (the in-memory store, whose positions are its row numbers) takes only the
 * head's next position; `increasing` (the SQL stores, which store each position as given and
 * continue ordinary appends after the highest) takes any position after the head, so the sparse
 * positions of a source such as EventStoreDB (log offsets) are kept as they were.
 */
export function planRecordedAppend(
  prepared: PreparedRecordedEvent[],
  stored: StoredIdentity[],
  streamHeads: ReadonlyMap<string, number>,
  headPosition: number,
  positions: 'dense' | 'increasing' = 'increasing',
): { write: PreparedRecordedEvent[]; result: AppendResult } {
  const byId = new Map(stored.map((s) => [s.id, s]));
  const heads = new Map(streamHeads);
  let position = headPosition;
  const write: PreparedRecordedEvent[] = [];
  for (const e of prepared) {
    const found = byId.get(e.id);
    if (found) {
      if (found.streamId !== e.streamId || found.revision !== e.revision || found.position !== e.position || found.contentHash !== e.contentHash) {
        throw new EventIdConflictError(e.id, `it is stored as a different event (stream '${found.streamId}', revision ${found.revision}, position ${found.position})`);
      }
      continue;
    }
    if (positions === 'dense' ? e.position !== position + 1 : e.position <= position) throw new RecordedPositionError(e.id, e.position, position + 1);
    const head = heads.get(e.streamId);
    if (e.revision !== (head ?? -1) + 1) throw new WrongExpectedRevisionError(e.streamId, e.revision === 0 ? 'no_stream' : e.revision - 1, head ?? null);
    heads.set(e.streamId, e.revision);
    position = e.position;
    write.push(e);
  }
  const last = prepared[prepared.length - 1];
  return { write, result: { nextExpectedRevision: last.revision, position: last.position } };
}

/** Row shape shared by the SQL adapters. */
export interface StoredRow {
  id: string;
  stream_id: string;
  revision: number | string;
  position: number | string;
  type: string;
  data: string;
  metadata: string;
  recorded_at: string | Date;
}

export function decodeRow(row: StoredRow, upcasters: UpcasterRegistry | undefined): RecordedEvent {
  return decodeFields(row.id, row.stream_id, row.revision, row.position, row.type, row.data, row.metadata, row.recorded_at, upcasters);
}

/** SQLite's raw rows: the columns of ROW_COLUMNS, in that order. */
export type RawRow = [string, string, number, number, string, string, string, string];
export const ROW_COLUMNS = 'id, stream_id, revision, position, type, data, metadata, recorded_at';

export function decodeRawRow(r: RawRow, upcasters: UpcasterRegistry | undefined): RecordedEvent {
  return decodeFields(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], upcasters);
}

/** SQLite's raw rows of one stream (whose id the reader already has): STREAM_ROW_COLUMNS, in order. */
export type RawStreamRow = [string, number, number, string, string, string, string];
export const STREAM_ROW_COLUMNS = 'id, revision, position, type, data, metadata, recorded_at';

export function decodeRawStreamRow(streamId: string, r: RawStreamRow, upcasters: UpcasterRegistry | undefined): RecordedEvent {
  return decodeFields(r[0], streamId, r[1], r[2], r[3], r[4], r[5], r[6], upcasters);
}

/** A page as the read-ahead thread sends it (see `SqliteReadAhead`): `n` rows, `k` metadata texts. */
interface PageText {
  n: number;
  k: number;
  m: EventMetadata[];
  r: [id: string, revision: number, position: number, type: string, recordedAt: string, data: unknown, metadata: number][];
}

/**
 * Decodes a page of one stream sent by the read-ahead thread, starting at revision `from`: one
 * parse for the whole page. Undefined when the text parses to something else than the rows the
 * thread read: the stored data and metadata are spliced in as they are, so a value that is not
 * one JSON value (a row written around the store) adds or moves elements, which the counts, the
 * seven fields of each row and its revision show. The caller then reads the page itself.
 */
export function decodeStreamPage(
  streamId: string,
  text: string,
  upcasters: UpcasterRegistry | undefined,
  from: number,
): RecordedEvent[] | undefined {
  const page = JSON.parse(text) as PageText;
  if (!Array.isArray(page.r) || !Array.isArray(page.m) || page.r.length !== page.n || page.m.length !== page.k) return undefined;
  // Shared by the page's events that carry the same text, like decodeMetadata's, hence frozen.
  for (const m of page.m) deepFreeze(m);
  const out = new Array<RecordedEvent>(page.r.length);
  const upcast = upcasters !== undefined && upcasters.size > 0;
  for (let i = 0; i < out.length; i++) {
    const row = page.r[i];
    if (!Array.isArray(row) || row.length !== 7 || row[1] !== from + i || !(row[6] >= 0 && row[6] < page.k && Number.isInteger(row[6]))) return undefined;
    if (typeof row[0] !== 'string' || typeof row[3] !== 'string' || typeof row[4] !== 'string' || typeof row[2] !== 'number') return undefined;
    const [id, revision, position, type, recordedAt, data, m] = row;
    const metadata = page.m[m];
    if (!upcast) {
      out[i] = { id, streamId, revision, position, recordedAt, type, data, metadata };
      continue;
    }
    const up = upcasters.apply(type, data, metadata);
    out[i] = { id, streamId, revision, position, recordedAt, type: up.type, data: up.data, metadata: up.metadata };
  }
  return out;
}

/**
 * The metadata of consecutive events is mostly the same text (one actor, correlation and run, one
 * schema version for a whole turn or phase): the last text decoded is remembered, and an event
 * carrying the same text gets the same object. It is frozen, so sharing it cannot leak a change
 * from one event to another.
 */
let lastMetadataText: string | undefined;
let lastMetadata: EventMetadata | undefined;

function decodeMetadata(text: string): EventMetadata {
  if (text === lastMetadataText) return lastMetadata!;
  const metadata = deepFreeze(JSON.parse(text) as EventMetadata);
  lastMetadataText = text;
  lastMetadata = metadata;
  return metadata;
}

/** One envelope per row, built in one object literal (this is on every replay's path). */
function decodeFields(
  id: string,
  streamId: string,
  revision: number | string,
  position: number | string,
  type: string,
  dataText: string,
  metadataText: string,
  recordedAt: string | Date,
  upcasters: UpcasterRegistry | undefined,
): RecordedEvent {
  const metadata = decodeMetadata(metadataText);
  const data = JSON.parse(dataText) as unknown;
  const at = recordedAt instanceof Date ? recordedAt.toISOString() : recordedAt;
  if (!upcasters || upcasters.size === 0) {
    return { id, streamId, revision: Number(revision), position: Number(position), recordedAt: at, type, data, metadata };
  }
  const up = upcasters.apply(type, data, metadata);
  return { id, streamId, revision: Number(revision), position: Number(position), recordedAt: at, type: up.type, data: up.data, metadata: up.metadata };
}
