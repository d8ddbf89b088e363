import { createHash } from 'node:crypto';
import { checkpointJson, type Checkpoint } from '../checkpoint/checkpoint';
import type { EventStore, RecordedEvent } from '../events/event-store/event-store.port';
import { API_KEYS_STREAM } from '../auth/keys/api-key-events';
import { DecisionLog } from '../review-gate/decision-log/decision-log';
import { describeVerification } from '../review-gate/decision-log/describe-verification';
import { DECISION_LOG_SUBSCRIPTION, DecisionLogProjection } from '../review-gate/decision-log/decision-log.projection';
import type { DecisionRecord } from '../review-gate/decision-log/decision-record';
import { BEFORE_FIRST_SEQ } from '../review-gate/decision-log/decision-record.repository';
import { canonicalJson } from '../shared/canonical-json';
import { ConflictError } from '../shared/errors';
import { DISPATCHER_SUBSCRIPTION } from '../team/dispatch/run-dispatch';
import { runIdOfStream } from '../team/runs/run-summary';
import type { Storage } from './storage';

/**
 * `triad store copy`: a whole store copied into another — every event with its id, stream,
 * revision, global position, metadata and recorded time (the port's `appendRecorded`), the
 * decision records, the runs' latest checkpoints and the subscriptions' positions — then verified.
 * Framework-free: it works on two `Storage`s, whatever their adapters.
 *
 * Resumable: the target is first compared with the source from the beginning; when what it holds
 * is the source's first events (and first decision records), the copy continues after them.
 * Anything else in the target is refused (TargetHoldsOtherDataError) and nothing is written.
 * Positions are kept, so the decision records (which name their events' positions) and the
 * subscription checkpoints stay true in the copy — on EventStoreDB too, whose adapter keeps each
 * copied event's position in the event and reports it (see EsdbEventStore.appendRecorded).
 */

/** Subscriptions whose durable positions are copied (API keys are events, copied with them). */
export const COPIED_SUBSCRIPTIONS = [DISPATCHER_SUBSCRIPTION, DECISION_LOG_SUBSCRIPTION] as const;

export const DEFAULT_COPY_BATCH = 500;

export type CopyPhase = 'checking' | 'events' | 'decisions' | 'checkpoints' | 'verifying';

export interface CopyProgress {
  phase: CopyPhase;
  /** Events (or records, or runs) done in this phase, and how many there are. */
  done: number;
  total: number;
}

export interface StoreCopyOptions {
  /** Events per `appendRecorded` batch (one transaction each). Default 500. */
  batchEvents?: number;
  /** Called after every batch of every phase. */
  onProgress?: (progress: CopyProgress) => void;
}

/** What one side holds, as verification counts it. */
export interface StoreSummary {
  events: number;
  streams: number;
  runs: number;
  projects: number;
  /** Streams of workspace blobs (`blob-<sha256>`): file contents the runs' tools wrote. */
  blobs: number;
  apiKeyEvents: number;
  decisionRecords: number;
  runCheckpoints: number;
  /** sha256 over (id, stream, revision, type, data, metadata) of every event, in global order. */
  hash: string;
}

export interface CopyVerification {
  ok: boolean;
  source: StoreSummary;
  target: StoreSummary;
  /** The first thing that differs, when something does. */
  difference?: string;
  /** `decisions verify` on the copy. */
  decisionLog: { ok: boolean; records: number; detail?: string };
}

export interface StoreCopyReport {
  /** The source's head position the copy went up to. */
  head: number;
  events: { copied: number; alreadyInTarget: number };
  decisionRecords: { copied: number; alreadyInTarget: number };
  runCheckpoints: { copied: number; corrupt: number; newerThanCopy: number };
  subscriptionCheckpoints: number;
  verification: CopyVerification;
}

/** The target holds data that is not the beginning of the source's. Nothing was written. */
export class TargetHoldsOtherDataError extends ConflictError {
  override readonly name = 'TargetHoldsOtherDataError';
}

/** The copy cannot be made as asked (a source this build cannot copy faithfully). Nothing was written. */
export class StoreCopyError extends Error {
  override readonly name = 'StoreCopyError';
}

export async function copyStore(source: Storage, target: Storage, options: StoreCopyOptions = {}): Promise<StoreCopyReport> {
  const batch = options.batchEvents ?? DEFAULT_COPY_BATCH;
  const progress = options.onProgress ?? (() => undefined);
  const [sourceFrom, targetFrom] = await Promise.all([source.decisions.approvalsFrom(), target.decisions.approvalsFrom()]);
  if (sourceFrom !== targetFrom) {
    throw new StoreCopyError(
      `the source's decision log was upgraded to record tool approvals at position ${sourceFrom}; a new store records them from ${targetFrom}, so its records would not verify`,
    );
  }
  const runIds = new Set<string>();
  const noteRun = (e: RecordedEvent) => {
    const runId = runIdOfStream(e.streamId);
    if (runId !== undefined) runIds.add(runId);
  };

  // 1. What the target holds must be the source's beginning.
  let head = await source.events.headPosition();
  const prefix = await matchedPrefix(source.events, target.events, batch, noteRun, (done) => progress({ phase: 'checking', done, total: head }));
  head = Math.max(head, prefix.lastPosition);
  const recordsThere = await matchedRecords(source, target, batch);

  // 2. The events after it, a batch per transaction.
  let copied = 0;
  for (let after = prefix.lastPosition; after < head; ) {
    const page = (await source.events.readAll({ after, maxCount: batch })).filter((e) => e.position <= head);
    if (page.length === 0) break;
    await target.events.appendRecorded(page);
    for (const e of page) noteRun(e);
    copied += page.length;
    after = page[page.length - 1].position;
    progress({ phase: 'events', done: after, total: head });
  }

  // 3. Decision records, as they are (their hashes chain them; the target checks each follows its head).
  let recordsCopied = 0;
  const lastThere = await target.decisions.last();
  for await (const record of source.decisions.iterate({ afterSeq: lastThere?.seq ?? BEFORE_FIRST_SEQ, pageSize: batch })) {
    if (record.position > head) break;
    await target.decisions.append(record);
    recordsCopied++;
    if (recordsCopied % batch === 0) progress({ phase: 'decisions', done: recordsCopied, total: recordsCopied });
  }
  progress({ phase: 'decisions', done: recordsCopied, total: recordsCopied });

  // 4. Each run's latest checkpoint (a copy without them is still whole: runs replay from events).
  const checkpoints = { copied: 0, corrupt: 0, newerThanCopy: 0 };
  let runsDone = 0;
  for (const runId of runIds) {
    const cp = await source.checkpoints.latest(runId);
    if (cp !== undefined && 'corrupt' in cp) checkpoints.corrupt++;
    else if (cp !== undefined && cp.position > head) checkpoints.newerThanCopy++;
    else if (cp !== undefined) {
      await target.checkpoints.save(cp);
      checkpoints.copied++;
    }
    if (++runsDone % batch === 0) progress({ phase: 'checkpoints', done: runsDone, total: runIds.size });
  }
  progress({ phase: 'checkpoints', done: runsDone, total: runIds.size });

  // 5. Subscription positions, never past what was copied.
  let subscriptions = 0;
  for (const name of COPIED_SUBSCRIPTIONS) {
    const position = await source.events.loadCheckpoint(name);
    if (position === null) continue;
    await target.events.saveCheckpoint(name, Math.min(position, head));
    subscriptions++;
  }

  const verification = await verifyCopy(source, target, head, runIds, { batchEvents: batch, onProgress: progress });
  return {
    head,
    events: { copied, alreadyInTarget: prefix.count },
    decisionRecords: { copied: recordsCopied, alreadyInTarget: recordsThere },
    runCheckpoints: checkpoints,
    subscriptionCheckpoints: subscriptions,
    verification,
  };
}

/** Everything of an event the copy keeps, as one comparable text. */
function envelopeText(e: RecordedEvent): string {
  return canonicalJson([e.id, e.streamId, e.revision, e.position, e.type, e.data, e.metadata, e.recordedAt]);
}

/** Reads `store` forwards, a page at a time, from the beginning. */
async function* pagesOf(store: EventStore, batch: number, upTo = Number.MAX_SAFE_INTEGER): AsyncGenerator<RecordedEvent[]> {
  for (let after = 0; after < upTo; ) {
    const page = (await store.readAll({ after, maxCount: batch })).filter((e) => e.position <= upTo);
    if (page.length === 0) return;
    yield page;
    after = page[page.length - 1].position;
  }
}

/** Pairs two page streams event by event. */
async function* paired(a: AsyncGenerator<RecordedEvent[]>, b: AsyncGenerator<RecordedEvent[]>): AsyncGenerator<[RecordedEvent | undefined, RecordedEvent | undefined]> {
  let pa: RecordedEvent[] = [];
  let pb: RecordedEvent[] = [];
  let ia = 0;
  let ib = 0;
  let doneA = false;
  let doneB = false;
  for (;;) {
    if (ia === pa.length && !doneA) {
      const n = await a.next();
      if (n.done) doneA = true;
      else [pa, ia] = [n.value, 0];
    }
    if (ib === pb.length && !doneB) {
      const n = await b.next();
      if (n.done) doneB = true;
      else [pb, ib] = [n.value, 0];
    }
    const ea = ia < pa.length ? pa[ia++] : undefined;
    const eb = ib < pb.length ? pb[ib++] : undefined;
    if (ea === undefined && eb === undefined) return;
    yield [ea, eb];
  }
}

/** How many of the target's events are the source's first ones; throws when the target holds others. */
async function matchedPrefix(
  source: EventStore,
  target: EventStore,
  batch: number,
  noteSource: (e: RecordedEvent) => void,
  progress: (done: number) => void,
): Promise<{ count: number; lastPosition: number }> {
  let count = 0;
  let lastPosition = 0;
  const targetHead = await target.headPosition();
  if (targetHead === 0) return { count, lastPosition };
  for await (const [s, t] of paired(pagesOf(source, batch, targetHead), pagesOf(target, batch))) {
    if (t === undefined) break;
    if (s === undefined || envelopeText(s) !== envelopeText(t)) {
      const at = s === undefined ? `it has ${targetHead - lastPosition} event(s) past the source's last` : `its event at position ${t.position} (${t.id}) is not the source's (${s.id})`;
      throw new TargetHoldsOtherDataError(`the target holds other data: ${at}`);
    }
    noteSource(s);
    count++;
    lastPosition = s.position;
    if (count % batch === 0) progress(lastPosition);
  }
  return { count, lastPosition };
}

/** How many of the target's decision records are the source's first ones; throws when it holds others. */
async function matchedRecords(source: Storage, target: Storage, batch: number): Promise<number> {
  const there = await target.decisions.count();
  if (there === 0) return 0;
  const fromSource = source.decisions.iterate({ pageSize: batch })[Symbol.asyncIterator]();
  let n = 0;
  for await (const t of target.decisions.iterate({ pageSize: batch })) {
    const s = (await fromSource.next()).value as DecisionRecord | undefined;
    if (!s || s.seq !== t.seq || s.hash !== t.hash) {
      throw new TargetHoldsOtherDataError(`the target holds other data: its decision record ${t.seq} is not the source's`);
    }
    n++;
  }
  await fromSource.return?.(undefined);
  return n;
}

/**
 * Compares the copy with the source up to `head`: every event's envelope in global order (and a
 * hash over each side's), counts per kind, the decision records, the runs' checkpoints; then runs
 * the decision log's own verification on the copy.
 */
export async function verifyCopy(
  source: Storage,
  target: Storage,
  head: number,
  runIds: Iterable<string>,
  options: StoreCopyOptions = {},
): Promise<CopyVerification> {
  const batch = options.batchEvents ?? DEFAULT_COPY_BATCH;
  const progress = options.onProgress ?? (() => undefined);
  const sides = [new SideCount(), new SideCount()] as const;
  let difference: string | undefined;
  let n = 0;
  for await (const [s, t] of paired(pagesOf(source.events, batch, head), pagesOf(target.events, batch))) {
    if (s) sides[0].add(s);
    if (t) sides[1].add(t);
    if (difference === undefined) {
      if (!t) difference = `the target lacks the source's event at position ${s!.position} (${s!.id})`;
      else if (!s) difference = `the target holds an event the source has not copied: position ${t.position} (${t.id})`;
      else if (envelopeText(s) !== envelopeText(t)) difference = `the event at position ${s.position} differs (source ${s.id}, target ${t.id})`;
    }
    if (++n % batch === 0) progress({ phase: 'verifying', done: s?.position ?? t!.position, total: head });
  }

  const records = await compareRecords(source, target, head, batch);
  sides[0].decisionRecords = records.source;
  sides[1].decisionRecords = records.target;
  difference ??= records.difference;

  for (const runId of runIds) {
    const cp = await source.checkpoints.latest(runId);
    if (cp === undefined || 'corrupt' in cp || cp.position > head) continue;
    sides[0].runCheckpoints++;
    const copied = await target.checkpoints.latest(runId);
    if (copied === undefined || 'corrupt' in copied) continue;
    sides[1].runCheckpoints++;
    if (checkpointJson(copied as Checkpoint) !== checkpointJson(cp)) difference ??= `the checkpoint of run ${runId} differs`;
  }

  const decisionLog = await verifyDecisionLog(target);
  const [a, b] = [sides[0].summary(), sides[1].summary()];
  const sameCounts = (Object.keys(a) as (keyof StoreSummary)[]).every((k) => a[k] === b[k]);
  if (!sameCounts) difference ??= `the counts differ: ${(Object.keys(a) as (keyof StoreSummary)[]).filter((k) => a[k] !== b[k]).join(', ')}`;
  progress({ phase: 'verifying', done: head, total: head });
  return { ok: difference === undefined && decisionLog.ok, source: a, target: b, difference, decisionLog };
}

class SideCount {
  private readonly hash = createHash('sha256');
  private readonly streams = new Set<string>();
  private events = 0;
  private runs = 0;
  private projects = 0;
  private blobs = 0;
  private apiKeyEvents = 0;
  decisionRecords = 0;
  runCheckpoints = 0;

  add(e: RecordedEvent): void {
    this.hash.update(canonicalJson([e.id, e.streamId, e.revision, e.type, e.data, e.metadata]));
    this.hash.update('\n');
    this.events++;
    if (!this.streams.has(e.streamId)) {
      this.streams.add(e.streamId);
      if (runIdOfStream(e.streamId) !== undefined) this.runs++;
      else if (e.streamId.startsWith('project-')) this.projects++;
      else if (e.streamId.startsWith('blob-')) this.blobs++;
    }
    if (e.streamId === API_KEYS_STREAM) this.apiKeyEvents++;
  }

  summary(): StoreSummary {
    return {
      events: this.events,
      streams: this.streams.size,
      runs: this.runs,
      projects: this.projects,
      blobs: this.blobs,
      apiKeyEvents: this.apiKeyEvents,
      decisionRecords: this.decisionRecords,
      runCheckpoints: this.runCheckpoints,
      hash: this.hash.digest('hex'),
    };
  }
}

/** The source's records of decisions up to `head` against the target's, seq by seq. */
async function compareRecords(source: Storage, target: Storage, head: number, batch: number): Promise<{ source: number; target: number; difference?: string }> {
  const fromTarget = target.decisions.iterate({ pageSize: batch })[Symbol.asyncIterator]();
  let s = 0;
  let t = 0;
  let difference: string | undefined;
  for await (const r of source.decisions.iterate({ pageSize: batch })) {
    if (r.position > head) break;
    s++;
    const copied = (await fromTarget.next()).value as DecisionRecord | undefined;
    if (!copied) {
      difference ??= `the target lacks decision record ${r.seq}`;
      continue;
    }
    t++;
    if (copied.seq !== r.seq || copied.hash !== r.hash) difference ??= `decision record ${r.seq} differs`;
  }
  for (let next = await fromTarget.next(); !next.done; next = await fromTarget.next()) {
    t++;
    difference ??= `the target holds decision record ${(next.value as DecisionRecord).seq}, which the source has not`;
  }
  return { source: s, target: t, difference };
}

/** `decisions verify` on the copy: the chain, cross-checked with the copy's own events. */
async function verifyDecisionLog(target: Storage): Promise<CopyVerification['decisionLog']> {
  const projection = new DecisionLogProjection(target.events, target.decisions);
  projection.start();
  try {
    const result = await new DecisionLog(target.events, target.decisions, projection).verify();
    return { ok: result.ok, records: result.checked, ...(result.ok ? {} : { detail: describeVerification(result).split('\n')[0] }) };
  } finally {
    await projection.stop();
  }
}
