import fc from 'fast-check';
import { canonicalContent, contentOf, hashRecord, NotADecisionEventError, payloadHash, payloadOf, recordFrom } from '../../../src/review-gate/decision-log/chain';
import { expectationFrom, verifyChain, verifyChainAsync, type ChainExpectation } from '../../../src/review-gate/decision-log/chain-verification';
import { GENESIS_PREV_HASH, type DecisionRecord } from '../../../src/review-gate/decision-log/decision-record';
import { canonicalJson, sha256Hex } from '../../../src/shared/canonical-json';
import { chainOf, decisionEvent, decisionEvents, expectationOf, rechain } from './fixtures';

const N = 6;
const events = decisionEvents(N);
const store: ChainExpectation = expectationOf(events);
const chainOnly = undefined;
const countOnly: ChainExpectation = { count: N };
const id = (seq: number) => `dec-${seq}`;

function intact(): DecisionRecord[] {
  return chainOf(events);
}

describe('a decision record', () => {
  it('given the first decision event, when recorded, then it is seq 1 linked to the genesis hash (64 zeros)', () => {
    const r = recordFrom(decisionEvent(1), null);
    expect(r.seq).toBe(1);
    expect(r.prevHash).toBe(GENESIS_PREV_HASH);
    expect(GENESIS_PREV_HASH).toMatch(/^0{64}$/);
  });

  it('holds every field of a decision record, the event position, and the links', () => {
    const e = decisionEvent(7, { policy: 'auto_approve', decider: 'system', deciderKind: 'system' });
    const r = recordFrom(e, null);
    expect(r).toEqual({
      seq: 1,
      decisionId: 'dec-7',
      runId: 'run_7',
      reviewId: 'rev_run_7_1',
      iteration: 1,
      executor: 'agent:executor:run_7',
      decider: 'system',
      deciderKind: 'system',
      outcome: 'approved',
      reason: expect.any(String),
      policy: 'auto_approve',
      acceptanceCriteria: ['file hello.txt contains "Hello"', 'tests | pass'],
      artifactHash: expect.stringMatching(/^sha256:/),
      charterVersion: expect.stringMatching(/^sha256:/),
      decidedAt: '2025-01-01T00:07:00.000Z',
      position: 73,
      prevHash: GENESIS_PREV_HASH,
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  });

  it('hash = sha256 of the canonical JSON of everything but the hash, prevHash included', () => {
    const [a, b] = chainOf(decisionEvents(2));
    expect(a.hash).toBe(sha256Hex(canonicalJson(contentOf(a))));
    expect(b.prevHash).toBe(a.hash);
    expect(b.hash).toBe(sha256Hex(canonicalJson(contentOf(b))));
    expect(hashRecord({ ...contentOf(b), prevHash: GENESIS_PREV_HASH })).not.toBe(b.hash);
  });

  it('the fast canonical form equals canonicalJson for any content', () => {
    const text = fc.string({ unit: 'binary' });
    fc.assert(
      fc.property(
        fc.record({
          decisionId: text,
          runId: text,
          reviewId: text,
          iteration: fc.integer(),
          executor: text,
          decider: text,
          deciderKind: fc.constantFrom('human' as const, 'system' as const),
          outcome: fc.constantFrom('approved' as const, 'rejected' as const, 'escalated' as const, 'waived' as const),
          reason: text,
          policy: fc.option(fc.constantFrom('wait' as const, 'auto_approve' as const, 'auto_deny' as const, 'escalate' as const), { nil: undefined }),
          acceptanceCriteria: fc.array(text),
          artifactHash: text,
          charterVersion: text,
          decidedAt: text,
          position: fc.double({ noNaN: true, noDefaultInfinity: true }),
          seq: fc.integer(),
          prevHash: text,
        }),
        (content) => {
          expect(canonicalContent(content)).toBe(canonicalJson(content));
          expect(hashRecord(content)).toBe(sha256Hex(canonicalJson(content)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a record and its event have the same payload hash', () => {
    const e = decisionEvent(3);
    const { seq: _s, prevHash: _p, hash: _h, ...payload } = recordFrom(e, null);
    expect(payloadHash(payload)).toBe(payloadHash(payloadOf(e)));
  });

  it('is made only from ReviewDecided events', () => {
    expect(() => recordFrom({ ...decisionEvent(1), type: 'RunEnded' }, null)).toThrow(NotADecisionEventError);
  });
});

describe('verifying an intact log', () => {
  it.each([
    ['against the store', store],
    ['chain only', chainOnly],
    ['chain and count', countOnly],
  ])('%s: ok, every record checked', (_name, expected) => {
    expect(verifyChain(intact(), expected)).toEqual({ ok: true, checked: N });
  });

  it('an empty log with no decisions is ok; with decisions in the store the tail is missing', () => {
    expect(verifyChain([], expectationOf([]))).toEqual({ ok: true, checked: 0 });
    expect(verifyChain([], store)).toMatchObject({ ok: false, checked: 0, firstBadRecord: { seq: 1, decisionId: id(1), problem: 'missing_tail' } });
  });

  it('verifyChainAsync reads an async iterable the same way', async () => {
    async function* gen() {
      yield* intact();
    }
    expect(await verifyChainAsync(gen(), store)).toEqual({ ok: true, checked: N });
  });

  it('records newer than the expectation (appended while verifying) are left out', () => {
    const records = chainOf(decisionEvents(N + 2));
    expect(verifyChain(records, { ...store, upToPosition: events[N - 1].position })).toEqual({ ok: true, checked: N });
  });
});

/** Runs `verifyChain` with the store cross-check and chain-only; returns both results. */
function both(records: DecisionRecord[]) {
  return { store: verifyChain(records, store), chain: verifyChain(records, countOnly) };
}

describe('tampering: each is detected and the first bad record named', () => {
  it('a field altered in place (reason of record 3)', () => {
    const records = intact();
    records[2] = { ...records[2], reason: 'approved by someone else' };
    const r = both(records);
    expect(r.store).toMatchObject({ ok: false, checked: 2, firstBadRecord: { seq: 3, decisionId: id(3), problem: 'altered' } });
    expect(r.chain).toMatchObject({ ok: false, checked: 2, firstBadRecord: { seq: 3, decisionId: id(3), problem: 'altered' } });
  });

  it('a field altered and the record re-hashed (its successor no longer links to it)', () => {
    const records = intact();
    const content = { ...contentOf(records[2]), outcome: 'escalated' as const };
    records[2] = { ...content, hash: hashRecord(content) };
    const r = both(records);
    expect(r.store.firstBadRecord).toMatchObject({ seq: 3, decisionId: id(3), problem: 'altered' });
    expect(r.chain.firstBadRecord).toMatchObject({ seq: 3, decisionId: id(3), problem: 'altered' });
  });

  it('a field altered and the whole chain rebuilt after it: only the store cross-check shows it', () => {
    const records = intact();
    records[2] = { ...records[2], decider: 'user:mallory' };
    const forged = rechain(records);
    expect(verifyChain(forged, store).firstBadRecord).toMatchObject({ seq: 3, decisionId: id(3), problem: 'altered' });
    expect(verifyChain(forged, countOnly).ok).toBe(true);
  });

  it('a middle record removed (record 3 of 6)', () => {
    const records = intact();
    records.splice(2, 1);
    const r = both(records);
    expect(r.store).toMatchObject({ ok: false, checked: 2, firstBadRecord: { seq: 3, decisionId: id(3), problem: 'removed' } });
    expect(r.chain).toMatchObject({ ok: false, checked: 2, firstBadRecord: { seq: 3, decisionId: null, problem: 'removed' } });
  });

  it('a middle record removed and the rest renumbered and re-chained', () => {
    const records = rechain(intact().filter((r) => r.seq !== 4));
    expect(verifyChain(records, store)).toMatchObject({ ok: false, checked: 3, firstBadRecord: { seq: 4, decisionId: id(4), problem: 'removed' } });
  });

  it('the last record removed: the chain is valid, the count of decision events shows it', () => {
    const records = intact().slice(0, N - 1);
    const r = both(records);
    expect(r.store).toMatchObject({ ok: false, checked: N - 1, firstBadRecord: { seq: N, decisionId: id(N), problem: 'missing_tail' } });
    expect(r.chain).toMatchObject({ ok: false, checked: N - 1, firstBadRecord: { seq: N, decisionId: null, problem: 'missing_tail' } });
    expect(verifyChain(records).ok).toBe(true);
  });

  it('the last two records removed', () => {
    expect(verifyChain(intact().slice(0, N - 2), store).firstBadRecord).toMatchObject({ seq: N - 1, decisionId: id(N - 1), problem: 'missing_tail' });
  });

  it('two records swapped in place (records 3 and 4 read in the other order)', () => {
    const records = intact();
    [records[2], records[3]] = [records[3], records[2]];
    const r = both(records);
    expect(r.store).toMatchObject({ ok: false, checked: 2, firstBadRecord: { seq: 3, decisionId: id(4), problem: 'reordered' } });
    expect(r.chain).toMatchObject({ ok: false, checked: 2, firstBadRecord: { seq: 3, decisionId: id(4), problem: 'reordered' } });
  });

  it('two seq values swapped (as an UPDATE in the database would): records 3 and 4', () => {
    const records = intact();
    const third = { ...records[3], seq: 3 };
    const fourth = { ...records[2], seq: 4 };
    records[2] = third;
    records[3] = fourth;
    const r = both(records);
    expect(r.store.firstBadRecord).toMatchObject({ seq: 3, decisionId: id(4), problem: 'reordered' });
    expect(r.chain.firstBadRecord).toMatchObject({ seq: 3, decisionId: id(4), problem: 'reordered' });
  });

  it('two records far apart swapped (2 and 5)', () => {
    const records = intact();
    [records[1], records[4]] = [{ ...records[4], seq: 2 }, { ...records[1], seq: 5 }];
    const r = both(records);
    expect(r.store.firstBadRecord).toMatchObject({ seq: 2, decisionId: id(5), problem: 'reordered' });
    expect(r.chain.firstBadRecord).toMatchObject({ seq: 2, decisionId: id(5), problem: 'reordered' });
  });

  it('a forged record inserted (chained after record 2; the rest left as they were)', () => {
    const records = intact();
    const forged = recordFrom(decisionEvent(99, { decisionId: 'forged', reason: 'self-approved' }), records[1]);
    records.splice(2, 0, forged);
    const r = both(records);
    expect(r.store).toMatchObject({ ok: false, checked: 2, firstBadRecord: { seq: 3, decisionId: 'forged', problem: 'inserted' } });
    expect(r.chain).toMatchObject({ ok: false, checked: 2, firstBadRecord: { seq: 3, decisionId: 'forged', problem: 'inserted' } });
  });

  it('a forged record inserted and everything after it re-chained: the store knows no such decision', () => {
    const records = intact();
    records.splice(4, 0, recordFrom(decisionEvent(99, { decisionId: 'forged' }), null));
    expect(verifyChain(rechain(records), store)).toMatchObject({ ok: false, checked: 4, firstBadRecord: { seq: 5, decisionId: 'forged', problem: 'inserted' } });
  });

  it('a forged record appended at the end', () => {
    const records = intact();
    records.push(recordFrom(decisionEvent(99, { decisionId: 'forged' }), records[N - 1]));
    const r = both(records);
    expect(r.store.firstBadRecord).toMatchObject({ seq: N + 1, decisionId: 'forged', problem: 'inserted' });
    expect(r.chain.firstBadRecord).toMatchObject({ seq: N + 1, decisionId: 'forged', problem: 'inserted' });
  });

  it('a record duplicated', () => {
    const records = intact();
    records.splice(3, 0, { ...records[2] });
    expect(verifyChain(records, store).firstBadRecord).toMatchObject({ seq: 4, decisionId: id(3), problem: 'inserted' });
  });

  it('several tamperings: the first in log order is named', () => {
    const records = intact();
    records[4] = { ...records[4], reason: 'changed' };
    records.splice(1, 1);
    expect(verifyChain(records, store).firstBadRecord).toMatchObject({ seq: 2, decisionId: id(2), problem: 'removed' });
  });

  it('a record whose values changed type (as SQLite allows) is altered, and verification does not throw', () => {
    const records = intact();
    records[1] = { ...records[1], iteration: 'one' as unknown as number, acceptanceCriteria: 'not json' as unknown as string[] };
    expect(both(records).store.firstBadRecord).toMatchObject({ seq: 2, problem: 'altered' });
    expect(both(records).chain.firstBadRecord).toMatchObject({ seq: 2, problem: 'altered' });
    records[1] = { ...intact()[1], reason: Buffer.from('blob') as unknown as string };
    expect(both(records).store.firstBadRecord).toMatchObject({ seq: 2, decisionId: id(2), problem: 'altered', detail: expect.stringMatching(/cannot be hashed/) });
    expect(both(records).chain.firstBadRecord).toMatchObject({ seq: 2, decisionId: id(2), problem: 'altered' });
  });

  it('property: any single field altered in any record is reported at that record', () => {
    const fields = ['reason', 'decider', 'outcome', 'decidedAt', 'artifactHash', 'charterVersion', 'runId', 'executor'] as const;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: N - 1 }), fc.constantFrom(...fields), fc.string({ minLength: 1 }), (at, field, junk) => {
        const records = intact();
        const changed = `${String(records[at][field])}${junk}`;
        records[at] = { ...records[at], [field]: changed };
        for (const r of [verifyChain(records, store), verifyChain(records, countOnly)]) {
          expect(r.ok).toBe(false);
          expect(r.firstBadRecord).toMatchObject({ seq: at + 1, decisionId: id(at + 1), problem: 'altered' });
          expect(r.checked).toBe(at);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('property: against the store, every removal, swap and insertion is named exactly', () => {
  const n = 12;
  const evs = decisionEvents(n);
  const expected = expectationOf(evs);
  const fresh = () => chainOf(evs);

  it('removing record k', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: n - 1 }), fc.boolean(), (k, renumber) => {
        let records = fresh();
        records.splice(k, 1);
        if (renumber) records = rechain(records);
        const problem = k === n - 1 ? 'missing_tail' : 'removed';
        expect(verifyChain(records, expected)).toMatchObject({ ok: false, checked: k, firstBadRecord: { seq: k + 1, decisionId: id(k + 1), problem } });
      }),
    );
  });

  it('swapping records i < j (as rows, or as seq values)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: n - 2 }), fc.integer({ min: 1, max: n - 1 }), fc.boolean(), (i, d, seqOnly) => {
        const j = Math.min(n - 1, i + d);
        const records = fresh();
        const [a, b] = [records[i], records[j]];
        records[i] = seqOnly ? { ...b, seq: a.seq } : b;
        records[j] = seqOnly ? { ...a, seq: b.seq } : a;
        expect(verifyChain(records, expected)).toMatchObject({ ok: false, checked: i, firstBadRecord: { seq: i + 1, decisionId: id(j + 1), problem: 'reordered' } });
        expect(verifyChain(records, { count: n }).firstBadRecord).toMatchObject({ seq: i + 1, problem: 'reordered' });
      }),
    );
  });

  it('inserting a forged record at k', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: n }), fc.boolean(), (k, rechained) => {
        let records = fresh();
        records.splice(k, 0, recordFrom(decisionEvent(99, { decisionId: 'forged' }), records[k - 1] ?? null));
        if (rechained) records = rechain(records);
        expect(verifyChain(records, expected)).toMatchObject({ ok: false, checked: k, firstBadRecord: { seq: k + 1, decisionId: 'forged', problem: 'inserted' } });
      }),
    );
  });
});

describe('records claiming a position past the verified head', () => {
  const N = 6;
  const events = decisionEvents(N);
  const expectation = expectationFrom(events, events[N - 1].position);

  it('given a forged record with a far-future position in the middle of the log, then it is found as inserted, even with the chain intact around it', () => {
    const records = chainOf(events);
    const forged = { ...records[2], decisionId: 'forged-decision', position: events[N - 1].position + 1_000_000 };
    // The forged record is put in at seq 3 without touching the links of the others.
    const tampered = [...records.slice(0, 2), forged, ...records.slice(2)];
    expect(verifyChain(tampered, expectation)).toEqual({
      ok: false,
      checked: 2,
      firstBadRecord: { seq: 3, decisionId: 'forged-decision', problem: 'inserted', detail: expect.stringMatching(/past the verified head/) },
    });
  });

  it('given such records only at the end of the log (decisions made while verifying), then they are left out', () => {
    const more = decisionEvents(N + 2);
    expect(verifyChain(chainOf(more), expectationFrom(more, more[N - 1].position))).toEqual({ ok: true, checked: N });
  });
});
