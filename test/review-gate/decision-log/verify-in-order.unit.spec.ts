import fc from 'fast-check';
import type { EventStore, ReadAllOptions, RecordedEvent, StreamExtent } from '../../../src/events/event-store/event-store.port';
import { canonicalContent, hashRecord, recordFrom, type DecisionEvent } from '../../../src/review-gate/decision-log/chain';
import { expectationFrom, InOrderCheck, verifyChain, verifyInOrder, type ChainVerification } from '../../../src/review-gate/decision-log/chain-verification';
import { DecisionLog } from '../../../src/review-gate/decision-log/decision-log';
import type { DecisionLogProjection } from '../../../src/review-gate/decision-log/decision-log.projection';
import { DECISION_RECORD_FIELDS, type DecisionRecord } from '../../../src/review-gate/decision-log/decision-record';
import { iterateByPages, type DecisionRecordRepository } from '../../../src/review-gate/decision-log/decision-record.repository';
import { canonicalJson, sha256Hex } from '../../../src/shared/canonical-json';
import { chainOf, decisionEvent, rechain } from './fixtures';

/**
 * The in-order check (the fast path of DecisionLog.verify) must never say more than the complete
 * check (verifyChain against expectationFrom): whenever it concludes, its answer is the complete
 * check's, and DecisionLog.verify always answers exactly what the complete check answers — for
 * intact logs and for logs tampered in any of the ways below.
 */

/** Every field of a record (the tampering below may change any of them). */
const CONTENT_KEYS = DECISION_RECORD_FIELDS;

/** Decision events of every shape the projector meets: run streams, other streams, timeouts (policy). */
const arbEvents: fc.Arbitrary<DecisionEvent[]> = fc
  .array(fc.record({ policy: fc.boolean(), plainReason: fc.boolean(), stream: fc.constantFrom('run', 'metadata', 'reviewId', 'none') }), { maxLength: 9 })
  .map((shapes) =>
    shapes.map((shape, k) => {
      const i = k + 1;
      // The fixture's reason needs escaping (quotes); a plain one takes the other encoding path.
      const e = decisionEvent(i, {
        ...(shape.policy ? { policy: 'auto_approve', decider: 'system', deciderKind: 'system' } : {}),
        ...(shape.plainReason ? { reason: `reason ${i}` } : {}),
      });
      if (shape.stream === 'run') return e;
      const other = { ...e, streamId: `review-${i}` };
      if (shape.stream === 'metadata') return other;
      if (shape.stream === 'reviewId') return { ...other, metadata: {} };
      return { ...other, metadata: {}, data: { ...(e.data as object), reviewId: `not-a-review-id-${i}` } };
    }),
  );

/** Values a field may be changed to, in the database or in memory: of the same type or not. */
function arbValueFor(original: unknown): fc.Arbitrary<unknown> {
  const same: unknown[] = [];
  if (typeof original === 'string') {
    same.push(`${original}x`, original.slice(1), original.toUpperCase(), Number.isFinite(Number(original)) ? Number(original) : original);
  }
  if (typeof original === 'number') same.push(String(original), original + 1, -original, original + 0.5, Number.NaN, Number.POSITIVE_INFINITY);
  if (Array.isArray(original)) {
    same.push(JSON.stringify(original), [...original, 'x'], original.slice(1), original.map((x) => `${x}`.toUpperCase()), [...original.slice(0, -1), 1], [original.join(',')]);
  }
  return fc.oneof(
    // Values that look the same, or nearly (a number as text, criteria as JSON text), most often.
    { weight: 3, arbitrary: same.length > 0 ? fc.constantFrom(...same) : fc.constant(original) },
    { weight: 1, arbitrary: fc.constantFrom(original, null, undefined, 0, -0, 1, '1', true, [], {}, { a: 1 }, Buffer.from('blob')) },
    { weight: 1, arbitrary: fc.oneof(fc.string(), fc.integer(), fc.double(), fc.array(fc.string(), { maxLength: 3 })) },
  );
}

type Tamper =
  | { kind: 'alter'; at: number; key: (typeof CONTENT_KEYS)[number]; value: unknown; remove: boolean; rehash: boolean }
  | { kind: 'remove'; at: number }
  | { kind: 'swap'; at: number; other: number; seqOnly: boolean }
  | { kind: 'insert'; at: number; known: boolean; chained: boolean }
  | { kind: 'duplicate'; at: number; other: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'appendLate'; at: number; known: boolean; chained: boolean }
  | { kind: 'rechain' };

const arbTamper: fc.Arbitrary<Tamper> = fc.oneof(
  fc
    .record({
      at: fc.nat(),
      // The chain's own fields (and the position, which upToPosition is compared with) more often.
      key: fc.oneof(fc.constantFrom(...CONTENT_KEYS), fc.constantFrom('hash' as const, 'prevHash' as const, 'seq' as const, 'position' as const)),
      remove: fc.boolean(),
      rehash: fc.boolean(),
    })
    .map((t) => ({ kind: 'alter' as const, ...t, value: undefined })),
  fc.record({ at: fc.nat() }).map((t) => ({ kind: 'remove' as const, ...t })),
  fc.record({ at: fc.nat(), other: fc.nat(), seqOnly: fc.boolean() }).map((t) => ({ kind: 'swap' as const, ...t })),
  fc.record({ at: fc.nat(), known: fc.boolean(), chained: fc.boolean() }).map((t) => ({ kind: 'insert' as const, ...t })),
  fc.record({ at: fc.nat(), other: fc.nat() }).map((t) => ({ kind: 'duplicate' as const, ...t })),
  fc.record({ at: fc.nat() }).map((t) => ({ kind: 'truncate' as const, ...t })),
  fc.record({ at: fc.nat(), known: fc.boolean(), chained: fc.boolean() }).map((t) => ({ kind: 'appendLate' as const, ...t })),
  fc.constant({ kind: 'rechain' as const }),
);

/** A tamper with its new value drawn for the field it changes (the value depends on the original). */
function arbTamperOn(records: DecisionRecord[]): fc.Arbitrary<Tamper> {
  return arbTamper.chain((t) => {
    if (t.kind !== 'alter' || records.length === 0) return fc.constant(t);
    const original = (records[t.at % records.length] as unknown as Record<string, unknown>)[t.key];
    return arbValueFor(original).map((value) => ({ ...t, value }));
  });
}

function tryRehash(r: DecisionRecord): DecisionRecord {
  try {
    return { ...r, hash: hashRecord(r) };
  } catch {
    return r;
  }
}

function applyTamper(records: DecisionRecord[], t: Tamper, events: DecisionEvent[]): DecisionRecord[] {
  const out = [...records];
  const n = out.length;
  switch (t.kind) {
    case 'alter': {
      if (n === 0) return out;
      const at = t.at % n;
      const changed = { ...out[at] } as unknown as Record<string, unknown>;
      if (t.remove) delete changed[t.key];
      else changed[t.key] = t.value;
      out[at] = t.rehash ? tryRehash(changed as unknown as DecisionRecord) : (changed as unknown as DecisionRecord);
      return out;
    }
    case 'remove':
      if (n > 0) out.splice(t.at % n, 1);
      return out;
    case 'swap': {
      if (n < 2) return out;
      const [i, j] = [t.at % n, t.other % n];
      const [a, b] = [out[i], out[j]];
      out[i] = t.seqOnly ? { ...b, seq: a.seq } : b;
      out[j] = t.seqOnly ? { ...a, seq: b.seq } : a;
      return out;
    }
    case 'insert': {
      const at = t.at % (n + 1);
      const known = events.length > 0 && t.known ? events[t.at % events.length] : undefined;
      const source = known ?? decisionEvent(90 + (t.at % 9), { decisionId: `forged-${t.at}` });
      let forged: DecisionRecord;
      try {
        forged = recordFrom(source, t.chained ? (out[at - 1] ?? null) : null);
      } catch {
        // The record before holds something no hash can be made of.
        forged = recordFrom(source, null);
      }
      out.splice(at, 0, forged);
      return out;
    }
    case 'duplicate':
      if (n > 0) out.splice(t.at % (n + 1), 0, { ...out[t.other % n] });
      return out;
    case 'truncate':
      return out.slice(0, t.at % (n + 1));
    case 'appendLate': {
      // A record claiming a position after every decision event: of a known decision, or of none.
      const source = n > 0 && t.known ? out[t.at % n] : recordFrom(decisionEvent(95, { decisionId: `late-${t.at}` }), null);
      const late = { ...source, position: 10_000 + t.at, seq: (out[n - 1]?.seq ?? 0) + 1, prevHash: t.chained ? (out[n - 1]?.hash ?? source.prevHash) : source.prevHash };
      out.push(tryRehash(late));
      return out;
    }
    case 'rechain':
      try {
        return rechain(out);
      } catch {
        return out;
      }
  }
}

/** Changes to the decision events themselves (the reference), which the complete check may throw on. */
type EventTamper =
  | { kind: 'none' }
  | { kind: 'duplicateId' | 'criteriaAsText' | 'noCriteria' | 'noReason' | 'numericIteration' | 'samePosition' | 'swapPositions'; at: number; other: number };

const arbEventTamper: fc.Arbitrary<EventTamper> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'none' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constantFrom(
        'duplicateId' as const,
        'criteriaAsText' as const,
        'noCriteria' as const,
        'noReason' as const,
        'numericIteration' as const,
        // Out of position order (no store hands events out so; verifyInOrder is given them anyway).
        'samePosition' as const,
        'swapPositions' as const,
      ),
      at: fc.nat(),
      other: fc.nat(),
    }),
  },
);

function applyEventTamper(events: DecisionEvent[], t: EventTamper): DecisionEvent[] {
  if (t.kind === 'none' || events.length === 0) return events;
  const out = [...events];
  const at = t.at % out.length;
  const data = { ...(out[at].data as Record<string, unknown>) };
  if (t.kind === 'duplicateId') data.decisionId = (out[t.other % out.length].data as { decisionId: string }).decisionId;
  if (t.kind === 'criteriaAsText') data.acceptanceCriteria = 'ab';
  if (t.kind === 'noCriteria') delete data.acceptanceCriteria;
  if (t.kind === 'noReason') delete data.reason;
  if (t.kind === 'numericIteration') data.iteration = '1';
  const other = t.other % out.length;
  const position = t.kind === 'samePosition' || t.kind === 'swapPositions' ? out[other].position : out[at].position;
  if (t.kind === 'swapPositions') out[other] = { ...out[other], position: out[at].position };
  out[at] = { ...out[at], data, position };
  return out;
}

type Outcome = { result: ChainVerification } | { error: string };

function outcome(fn: () => ChainVerification): Outcome {
  try {
    return { result: fn() };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

async function outcomeAsync(fn: () => Promise<ChainVerification>): Promise<Outcome> {
  try {
    return { result: await fn() };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** A case: decision events (the store), the records as stored, and the position read up to. */
interface Case {
  events: DecisionEvent[];
  records: DecisionRecord[];
  upTo: number | undefined;
  tampered: boolean;
}

const arbCase: fc.Arbitrary<Case> = arbEvents.chain((intactEvents) =>
  fc
    .record({
      // Records of the last events may be newer than the position verification reads up to.
      upToIndex: fc.option(fc.integer({ min: 0, max: intactEvents.length }), { nil: undefined }),
      eventTamper: arbEventTamper,
      // As a projector writes them from the (changed) events, or as they were written before.
      fromChangedEvents: fc.boolean(),
      tampers: fc.array(arbTamperOn(chainOf(intactEvents)), { maxLength: 2 }),
    })
    .map(({ upToIndex, eventTamper, fromChangedEvents, tampers }) => {
      const events = applyEventTamper(intactEvents, eventTamper);
      let records = chainOf(intactEvents);
      if (fromChangedEvents) {
        try {
          records = chainOf(events);
        } catch {
          // Events no record can be made from.
        }
      }
      for (const t of tampers) records = applyTamper(records, t, intactEvents);
      const upTo = upToIndex === undefined ? undefined : upToIndex === 0 ? 0 : intactEvents[upToIndex - 1].position;
      return { events, records, upTo, tampered: tampers.length > 0 || eventTamper.kind !== 'none' };
    }),
);

describe('the in-order check (verifyInOrder) against the complete check', () => {
  it('an intact log: ok, every record checked, as the complete check says', () => {
    fc.assert(
      fc.property(arbEvents, (events) => {
        const records = chainOf(events);
        const fast = verifyInOrder(events, records);
        expect(fast).toEqual({ ok: true, checked: events.length });
        expect(fast).toEqual(verifyChain(records, expectationFrom(events)));
      }),
    );
  });

  it('records of decisions after upToPosition (appended while verifying) are left out, as the complete check does', () => {
    fc.assert(
      fc.property(arbEvents, fc.nat(), (events, k) => {
        const records = chainOf(events);
        const m = events.length === 0 ? 0 : k % (events.length + 1);
        const upTo = m === 0 ? 0 : events[m - 1].position;
        const fast = verifyInOrder(events, records, upTo);
        expect(fast).toEqual({ ok: true, checked: m });
        expect(fast).toEqual(verifyChain(records, expectationFrom(events, upTo)));
      }),
    );
  });

  it('property: whatever was tampered, it concludes only what the complete check concludes (and never throws)', () => {
    let concluded = 0;
    let deferred = 0;
    fc.assert(
      fc.property(arbCase, ({ events, records, upTo }) => {
        const complete = outcome(() => verifyChain(records, expectationFrom(events, upTo)));
        const fast = verifyInOrder(events, records, upTo);
        if (fast === undefined) {
          deferred++;
          return;
        }
        concluded++;
        expect(complete).toEqual({ result: fast });
        expect(fast.ok).toBe(true);
      }),
      { numRuns: 3000 },
    );
    expect(concluded).toBeGreaterThan(100);
    expect(deferred).toBeGreaterThan(100);
  });

  it('gives up at the first difference the complete check reports, for every kind of problem', () => {
    const events = Array.from({ length: 6 }, (_, i) => decisionEvent(i + 1));
    const intact = chainOf(events);
    const cases: Array<[string, DecisionRecord[], DecisionEvent[]]> = [
      ['altered', intact.map((r, i) => (i === 2 ? { ...r, reason: 'changed' } : r)), events],
      ['altered: a number stored as text', intact.map((r, i) => (i === 2 ? { ...r, iteration: '1' as unknown as number } : r)), events],
      ['altered: null for an absent policy', intact.map((r, i) => (i === 2 ? { ...r, policy: null as unknown as undefined } : r)), events],
      ['altered: criteria as JSON text', intact.map((r, i) => (i === 2 ? { ...r, acceptanceCriteria: JSON.stringify(r.acceptanceCriteria) as unknown as string[] } : r)), events],
      ['altered and re-hashed', intact.map((r, i) => (i === 2 ? tryRehash({ ...r, reason: 'changed' }) : r)), events],
      ['the last record re-hashed with a number as text', intact.map((r, i) => (i === 5 ? tryRehash({ ...r, iteration: '1' as unknown as number }) : r)), events],
      ['the chain rebuilt with a number as text', rechain(intact.map((r, i) => (i === 2 ? { ...r, iteration: '1' as unknown as number } : r))), events],
      ['the chain rebuilt with text as a number', rechain(intact.map((r, i) => (i === 2 ? { ...r, reason: 12 as unknown as string } : r))), events.map((e, i) => (i === 2 ? { ...e, data: { ...(e.data as object), reason: '12' } } : e))],
      ['the chain rebuilt with criteria as JSON text', rechain(intact.map((r, i) => (i === 2 ? { ...r, acceptanceCriteria: JSON.stringify(r.acceptanceCriteria) as unknown as string[] } : r))), events],
      ['the chain rebuilt with a policy where there was none', rechain(intact.map((r, i) => (i === 2 ? { ...r, policy: 'auto_approve' as const } : r))), events],
      ['the chain rebuilt without a field', rechain(intact.map((r, i) => (i === 2 ? { ...r, executor: undefined as unknown as string } : r))), events],
      ['removed', intact.filter((_, i) => i !== 2), events],
      ['reordered', [intact[0], intact[3], intact[2], intact[1], intact[4], intact[5]], events],
      ['inserted', [...intact.slice(0, 3), recordFrom({ ...decisionEvent(50, { decisionId: 'forged' }), position: 34 }, intact[2]), ...intact.slice(3)], events],
      ['missing tail', intact.slice(0, 4), events],
      ['events out of position order', chainOf([events[1], events[0], ...events.slice(2)]), [events[1], events[0], ...events.slice(2)]],
      ['a decision id twice among the events', intact, events.map((e, i) => (i === 4 ? { ...e, data: { ...(e.data as object), decisionId: 'dec-2' } } : e))],
      ['the hash of the last record changed', intact.map((r, i) => (i === 5 ? { ...r, hash: 'f'.repeat(64) } : r)), events],
      ['a record of a known decision claiming a later position', [...intact, tryRehash({ ...intact[1], seq: 7, prevHash: intact[5].hash, position: 10_000 })], events],
    ];
    const upTo = events[5].position;
    for (const [name, records, evs] of cases) {
      const complete = outcome(() => verifyChain(records, expectationFrom(evs, upTo)));
      expect([name, verifyInOrder(evs, records, upTo)]).toEqual([name, undefined]);
      expect([name, 'result' in complete && complete.result.ok]).toEqual([name, false]);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// DecisionLog.verify over a store and a repository that behave as the real ones do

/** The store's side: decision events in position order, read page by page. */
function storeOf(events: DecisionEvent[]): EventStore {
  const recorded = events.map((e) => ({ ...e, id: `evt-${e.position}`, revision: 0, recordedAt: '', metadata: { correlationId: 'c', causationId: null, actor: 'system', schemaVersion: 1, ...e.metadata } }));
  return {
    kind: 'array',
    readAll: async (o: ReadAllOptions = {}) => {
      const after = recorded.filter((e) => e.position > (o.after ?? 0));
      return after.slice(0, o.maxCount ?? after.length) as RecordedEvent[];
    },
    // Streams without revision gaps (the stream check finds nothing here).
    streamExtents: async (streamIds: string[]) => {
      const extents = new Map<string, StreamExtent>();
      for (const id of streamIds) {
        const count = recorded.filter((e) => e.streamId === id).length;
        if (count > 0) extents.set(id, { count, firstRevision: 0, lastRevision: count - 1 });
      }
      return extents;
    },
  } as unknown as EventStore;
}

/**
 * The repository's side, as a database holds it: records by seq (unique), listed in seq order after
 * `afterSeq`. `last()` answers the record with the highest seq among the first `visible`; the rest
 * were appended after (while verifying).
 */
class ArrayRepository implements DecisionRecordRepository {
  readonly kind = 'array';
  readonly calls = { list: 0, iterate: 0 };
  private readonly rows: DecisionRecord[];

  constructor(
    records: DecisionRecord[],
    private readonly visible: number,
  ) {
    this.rows = [...records].sort((a, b) => a.seq - b.seq);
  }

  async append(): Promise<never> {
    throw new Error('read only');
  }

  async get(decisionId: string): Promise<DecisionRecord | null> {
    return this.rows.find((r) => r.decisionId === decisionId) ?? null;
  }

  async getByHash(hash: string): Promise<DecisionRecord | null> {
    return this.rows.find((r) => r.hash === hash) ?? null;
  }

  async approvalsFrom(): Promise<number> {
    return 0;
  }

  async last(): Promise<DecisionRecord | null> {
    const shown = this.rows.slice(0, this.visible);
    return shown[shown.length - 1] ?? null;
  }

  async list(_filter = {}, page: { afterSeq?: number; limit?: number } = {}): Promise<DecisionRecord[]> {
    this.calls.list++;
    return this.page(page.afterSeq ?? Number.MIN_SAFE_INTEGER, page.limit ?? 1000);
  }

  iterate(options: { pageSize?: number } = {}): AsyncIterable<DecisionRecord> {
    this.calls.iterate++;
    return iterateByPages(async (after, limit) => this.page(after, limit), options.pageSize);
  }

  async count(): Promise<number> {
    return this.rows.length;
  }

  async close(): Promise<void> {}

  /** Every row, in seq order, as the database hands them out. */
  all(): DecisionRecord[] {
    return [...this.rows];
  }

  private page(after: number, limit: number): DecisionRecord[] {
    return this.rows.filter((r) => r.seq > after).slice(0, limit);
  }
}

const projectionAt = (head: number) => ({ catchUp: async () => head }) as unknown as DecisionLogProjection;

/** A store hands events out in strictly increasing position order. */
const inStoreOrder = (events: DecisionEvent[]) => events.every((e, i) => i === 0 || e.position > events[i - 1].position);

/** A database cannot hold two records with one seq, nor a seq that is not an integer. */
const storable = (records: DecisionRecord[]) =>
  records.every((r) => Number.isSafeInteger(r.seq)) && new Set(records.map((r) => r.seq)).size === records.length;

describe('the in-order check compares every field', () => {
  const events = Array.from({ length: 4 }, (_, i) => decisionEvent(i + 1));
  const intact = chainOf(events);
  const last = intact[3];
  // A change to each field of the last record, re-hashed so that only the comparison with the
  // event (or the seq, or the link) can show it.
  const changes: Array<[string, Partial<Record<string, unknown>>]> = [
    ['decisionId', { decisionId: 'dec-x' }],
    ['runId', { runId: 'run_x' }],
    ['runId cut short', { runId: last.runId.slice(1) }],
    ['reviewId', { reviewId: 'rev_run_x_1' }],
    ['iteration', { iteration: 2 }],
    ['iteration as text', { iteration: '1' }],
    ['executor', { executor: 'agent:executor:run_x' }],
    ['decider', { decider: 'user:mallory' }],
    ['deciderKind', { deciderKind: 'system' }],
    ['outcome', { outcome: 'waived' }],
    ['reason', { reason: 'changed' }],
    ['policy added', { policy: 'auto_approve' }],
    ['policy null', { policy: null }],
    ['criteria shortened', { acceptanceCriteria: last.acceptanceCriteria!.slice(0, -1) }],
    ['criteria lengthened', { acceptanceCriteria: [...last.acceptanceCriteria!, 'x'] }],
    ['criteria as JSON text', { acceptanceCriteria: JSON.stringify(last.acceptanceCriteria) }],
    ['artifactHash', { artifactHash: 'sha256:x' }],
    ['charterVersion', { charterVersion: 'sha256:x' }],
    ['decidedAt', { decidedAt: '2030-01-01T00:00:00.000Z' }],
    ['position', { position: last.position + 1 }],
    ['position as text', { position: String(last.position) }],
    ['seq', { seq: 9 }],
    ['seq as text', { seq: '4' }],
    ['prevHash', { prevHash: intact[1].hash }],
    ['a field removed', { reason: undefined }],
  ];

  it.each(changes)('%s changed (and re-hashed) in the last record: the complete check decides', (_name, change) => {
    const records = [...intact.slice(0, 3), tryRehash({ ...last, ...change } as DecisionRecord)];
    const upTo = last.position + 1;
    const complete = outcome(() => verifyChain(records, expectationFrom(events, upTo)));
    expect('result' in complete && complete.result.ok).toBe(false);
    expect(verifyInOrder(events, records, upTo)).toBeUndefined();
  });

  it('an event past upToPosition is never paired', () => {
    const check = new InOrderCheck(events[0].position);
    expect(check.pair(events[0], intact[0])).toBe(true);
    expect(check.pair(events[1], intact[1])).toBe(false);
  });
});

describe('the in-order check with decision events no record can be made from', () => {
  // payloadOf copies acceptanceCriteria with a spread: text becomes its characters, and nothing
  // cannot be copied at all (the complete check throws). The in-order check must not conclude.
  const withData = (e: DecisionEvent, change: (d: Record<string, unknown>) => void): DecisionEvent => {
    const data = { ...(e.data as Record<string, unknown>) };
    change(data);
    return { ...e, data };
  };
  const sameAsEvent = (r: DecisionRecord, change: (x: Record<string, unknown>) => void): DecisionRecord => {
    const x = { ...r } as unknown as Record<string, unknown>;
    change(x);
    return tryRehash(x as unknown as DecisionRecord);
  };

  it('an event of another type (the complete check throws)', () => {
    const events = [decisionEvent(1), { ...decisionEvent(2), type: 'RunEnded' }];
    const records = chainOf([decisionEvent(1), decisionEvent(2)]);
    expect(outcome(() => verifyChain(records, expectationFrom(events)))).toEqual({ error: expect.stringMatching(/ReviewDecided/) });
    expect(verifyInOrder(events, records)).toBeUndefined();
  });

  it.each([
    ['criteria as text', (d: Record<string, unknown>) => (d.acceptanceCriteria = 'ab')],
    ['no criteria', (d: Record<string, unknown>) => delete d.acceptanceCriteria],
  ])('%s, stored the same way in the record', (_name, change) => {
    const events = [decisionEvent(1), withData(decisionEvent(2), change)];
    const intact = chainOf([decisionEvent(1), decisionEvent(2)]);
    const records = [intact[0], sameAsEvent(intact[1], change)];
    const complete = outcome(() => verifyChain(records, expectationFrom(events)));
    expect('result' in complete && complete.result.ok).toBe(false);
    expect(verifyInOrder(events, records)).toBeUndefined();
  });
});

describe('DecisionLog.verify: the in-order check, then the complete check when needed', () => {
  it('property: answers exactly what the complete check answers, for intact and tampered logs, at any page size', async () => {
    let fastOnly = 0;
    let fellBack = 0;
    await fc.assert(
      fc.asyncProperty(
        arbCase.filter((c) => storable(c.records) && inStoreOrder(c.events)),
        fc.nat(),
        fc.nat(),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 4 }),
        async ({ events, records, upTo, tampered }, visibleSeed, headSeed, eventPageSize, recordPageSize) => {
          const repo = new ArrayRepository(records, records.length - (visibleSeed % 3 === 0 ? visibleSeed % (records.length + 1) : 0));
          const caughtUp = upTo ?? (headSeed % 2 === 0 ? (events[events.length - 1]?.position ?? 0) : headSeed % 200);
          const log = new DecisionLog(storeOf(events), repo, projectionAt(caughtUp), { eventPageSize, recordPageSize });
          const last = await repo.last();
          const expectedUpTo = Math.max(caughtUp, typeof last?.position === 'number' ? last.position : 0);
          const complete = outcome(() => verifyChain(repo.all(), expectationFrom(events, expectedUpTo)));
          expect(await outcomeAsync(() => log.verify())).toEqual(complete);
          if (repo.calls.iterate === 0) fastOnly++;
          else fellBack++;
          // The complete check runs only when the in-order check could not conclude, and an intact
          // log is always concluded by the in-order check.
          if ('result' in complete && !complete.result.ok) expect(repo.calls.iterate).toBe(1);
          if (!tampered) expect(repo.calls.iterate).toBe(0);
        },
      ),
      { numRuns: 1500 },
    );
    expect(fastOnly).toBeGreaterThan(50);
    expect(fellBack).toBeGreaterThan(50);
  });

  it('an intact log is verified by the in-order check alone (no expectation built, no second read)', async () => {
    const events = Array.from({ length: 25 }, (_, i) => decisionEvent(i + 1));
    const repo = new ArrayRepository(chainOf(events), 25);
    const log = new DecisionLog(storeOf(events), repo, projectionAt(events[24].position), { eventPageSize: 4, recordPageSize: 7 });
    expect(await log.verify()).toEqual({ ok: true, checked: 25 });
    expect(repo.calls).toEqual({ list: 4, iterate: 0 });
  });

  it('decision events committed after the head catchUp read (not projected yet) are not expected', async () => {
    const events = Array.from({ length: 12 }, (_, i) => decisionEvent(i + 1));
    const repo = new ArrayRepository(chainOf(events.slice(0, 7)), 7);
    const log = new DecisionLog(storeOf(events), repo, projectionAt(events[6].position), { eventPageSize: 3, recordPageSize: 2 });
    expect(await log.verify()).toEqual({ ok: true, checked: 7 });
    expect(repo.calls.iterate).toBe(0);
  });

  it('a record altered at the very end: the complete check runs and names it', async () => {
    const events = Array.from({ length: 10 }, (_, i) => decisionEvent(i + 1));
    const records = chainOf(events);
    records[9] = { ...records[9], decidedAt: '2030-01-01T00:00:00.000Z' };
    const repo = new ArrayRepository(records, 10);
    const log = new DecisionLog(storeOf(events), repo, projectionAt(events[9].position), { eventPageSize: 3, recordPageSize: 3 });
    expect(await log.verify()).toEqual({
      ok: false,
      checked: 9,
      firstBadRecord: { seq: 10, decisionId: 'dec-10', problem: 'altered', detail: expect.stringMatching(/content differs/) },
    });
    expect(repo.calls.iterate).toBe(1);
  });
});

describe('the canonical encoding behind both checks', () => {
  it('equals canonicalJson for strings JSON escapes (quotes, backslashes, control characters, lone and paired surrogates) in any field', () => {
    const tricky = fc.string({ unit: fc.constantFrom('a', 'é', '"', '\\', '\u0000', '\u001f', '\u007f', '\u2028', '\ud800', '\udfff', '\ud83d\ude00', '/', ' ') });
    // A string needing escapes in any one field must be seen, the others plain.
    const stringKeys = ['decisionId', 'runId', 'reviewId', 'executor', 'decider', 'deciderKind', 'outcome', 'reason', 'artifactHash', 'charterVersion', 'decidedAt', 'prevHash', 'policy'] as const;
    const plain = fc.string({ unit: fc.constantFrom('a', 'é', '/', ' ', '\u007f', '\u2028') });
    fc.assert(
      fc.property(fc.constantFrom(...stringKeys), tricky, fc.boolean(), fc.array(fc.oneof(plain, tricky), { maxLength: 3 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), (key, value, withPolicy, list, n, x) => {
        // The fixture's reason holds quotes: a plain one here, so that only `key` needs escaping.
        const intact = chainOf([decisionEvent(1, { reason: 'looks good', ...(withPolicy ? { policy: 'auto_deny' } : {}) })])[0];
        const record = { ...intact, [key]: value, acceptanceCriteria: list, iteration: n, position: x };
        const { hash: _hash, ...content } = record;
        expect(canonicalContent(record)).toBe(canonicalJson(content));
        expect(hashRecord(record)).toBe(sha256Hex(canonicalJson(content)));
      }),
      { numRuns: 1000 },
    );
  });
});
