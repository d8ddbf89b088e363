import { recordFrom, type DecisionEvent } from '../../../src/review-gate/decision-log/chain';
import { verifyChain, verifyChainAsync } from '../../../src/review-gate/decision-log/chain-verification';
import { GENESIS_PREV_HASH, type DecisionRecord } from '../../../src/review-gate/decision-log/decision-record';
import { DecisionLogHeadMovedError, type DecisionRecordRepository } from '../../../src/review-gate/decision-log/decision-record.repository';
import { approvalEvent, chainOf, decisionEvent, decisionEvents, expectationOf } from './fixtures';

export interface RepositoryHarness {
  /** A repository on a fresh, empty database. */
  open(): Promise<DecisionRecordRepository>;
  /** Another repository on the same database, as another process would have (own connection). */
  openAnother(): Promise<DecisionRecordRepository>;
  cleanup(): Promise<void>;
}

/** What a projector does for one event: skip it when recorded, else append at the head, retrying when the head moved. */
async function project(repo: DecisionRecordRepository, event: DecisionEvent): Promise<void> {
  for (;;) {
    if (await repo.get((event.data as { decisionId: string }).decisionId)) return;
    try {
      await repo.append(recordFrom(event, await repo.last()));
      return;
    } catch (err) {
      if (!(err instanceof DecisionLogHeadMovedError)) throw err;
    }
  }
}

async function all(iterable: AsyncIterable<DecisionRecord>): Promise<DecisionRecord[]> {
  const out: DecisionRecord[] = [];
  for await (const r of iterable) out.push(r);
  return out;
}

/** The DecisionRecordRepository contract: every adapter passes it. */
export function decisionRecordRepositoryContract(name: string, makeHarness: () => RepositoryHarness, options: { writers?: number; events?: number } = {}): void {
  describe(`DecisionRecordRepository contract: ${name}`, () => {
    let harness: RepositoryHarness;
    let repo: DecisionRecordRepository;
    const opened: DecisionRecordRepository[] = [];

    beforeEach(async () => {
      harness = makeHarness();
      repo = await harness.open();
      opened.push(repo);
    });

    afterEach(async () => {
      for (const r of opened.splice(0)) await r.close();
      await harness.cleanup();
    });

    async function appendAll(records: DecisionRecord[]): Promise<void> {
      for (const r of records) expect(await repo.append(r)).toEqual({ appended: true });
    }

    it('an empty log: no last record, count 0, nothing listed', async () => {
      expect(await repo.last()).toBeNull();
      expect(await repo.count()).toBe(0);
      expect(await repo.list()).toEqual([]);
      expect(await all(repo.iterate())).toEqual([]);
      expect(await repo.get('nope')).toBeNull();
    });

    it('appends at the head and reads back exactly what was written', async () => {
      const events = [
        decisionEvent(1, { reason: 'ünïcødé ✓ — "quotes", commas,\nnew lines and \\ backslashes' }),
        decisionEvent(2, { outcome: 'escalated', decider: 'system', deciderKind: 'system', policy: 'escalate' }),
        decisionEvent(3, { acceptanceCriteria: [] }),
      ];
      const records = chainOf(events);
      await appendAll(records);
      expect(await repo.count()).toBe(3);
      expect(await repo.last()).toEqual(records[2]);
      expect(await repo.get('dec-2')).toEqual(records[1]);
      expect((await repo.get('dec-1'))?.policy).toBeUndefined();
      expect(await repo.list()).toEqual(records);
      expect(verifyChain(await repo.list(), expectationOf(events))).toEqual({ ok: true, checked: 3 });
    });

    it('tool-approval records: stored and read back exactly, chained with review records, filtered by kind and (case-insensitive) decider', async () => {
      const events = [
        decisionEvent(1),
        approvalEvent(1),
        approvalEvent(2, { decider: 'system', deciderKind: 'system', policy: 'auto_deny', reason: 'no human decided in time' }),
        approvalEvent(3, { inputHash: undefined, risk: undefined }),
        decisionEvent(4, { decider: 'user:bob' }),
      ];
      const records = chainOf(events);
      await appendAll(records);
      expect(await repo.list()).toEqual(records);
      const approval = (await repo.get('apr_run_1.tu_1'))!;
      expect(approval).toEqual(records[1]);
      expect(approval).toMatchObject({ kind: 'tool_approval', approvalId: 'apr_run_1.tu_1', toolName: 'run_command', risk: 'high', role: 'executor', turn: 2, executor: 'agent:executor:run_1' });
      expect(approval.reviewId).toBeUndefined();
      expect(approval.acceptanceCriteria).toBeUndefined();
      expect((await repo.get('apr_run_3.tu_3'))?.inputHash).toBeUndefined();
      expect((await repo.get('dec-1'))?.kind).toBeUndefined();
      expect(verifyChain(await repo.list(), expectationOf(events))).toEqual({ ok: true, checked: 5 });
      const seqs = async (filter: Parameters<DecisionRecordRepository['list']>[0]) => (await repo.list(filter)).map((r) => r.seq);
      expect(await seqs({ kind: 'tool_approval' })).toEqual([2, 3, 4]);
      expect(await seqs({ kind: 'review' })).toEqual([1, 5]);
      expect(await seqs({ kind: 'tool_approval', outcome: 'rejected' })).toEqual([3]);
      // Names are case-insensitive: user:bob is also the user:Bob of older records.
      expect(await seqs({ decider: 'user:bob' })).toEqual([1, 2, 4, 5]);
      expect(await seqs({ decider: 'system' })).toEqual([3]);
      expect((await all(repo.iterate({ filter: { kind: 'tool_approval', runId: 'run_2' } }))).map((r) => r.seq)).toEqual([3]);
    });

    it('finds a record by its hash; a log that recorded tool approvals from the start has approvalsFrom 0', async () => {
      const records = chainOf(decisionEvents(3));
      await appendAll(records);
      expect(await repo.getByHash(records[1].hash)).toEqual(records[1]);
      expect(await repo.getByHash('f'.repeat(64))).toBeNull();
      expect(await repo.approvalsFrom()).toBe(0);
    });

    it('what it reads is a copy: changing a record read back changes nothing stored', async () => {
      const records = chainOf(decisionEvents(2));
      await appendAll(records);
      const read = (await repo.get('dec-1'))!;
      Object.assign(read, { reason: 'changed' });
      read.acceptanceCriteria?.push('added');
      Object.assign((await repo.list())[1], { outcome: 'changed' });
      expect(await repo.get('dec-1')).toEqual(records[0]);
      expect(await repo.list()).toEqual(records);
    });

    it('append is idempotent by decision id: the stored record is returned, nothing written', async () => {
      const records = chainOf(decisionEvents(2));
      await appendAll(records);
      expect(await repo.append(records[0])).toEqual({ appended: false, existing: records[0] });
      // The same decision rebuilt on the current head (as a late projector would) is not a second record.
      expect(await repo.append(recordFrom(decisionEvent(1), records[1]))).toEqual({ appended: false, existing: records[0] });
      expect(await repo.count()).toBe(2);
    });

    it('refuses a record that is not the next one (wrong seq, wrong prevHash, not genesis)', async () => {
      const records = chainOf(decisionEvents(3));
      await expect(repo.append(records[1])).rejects.toBeInstanceOf(DecisionLogHeadMovedError);
      await expect(repo.append({ ...records[0], prevHash: 'f'.repeat(64) })).rejects.toBeInstanceOf(DecisionLogHeadMovedError);
      await appendAll([records[0]]);
      await expect(repo.append(records[2])).rejects.toBeInstanceOf(DecisionLogHeadMovedError);
      await expect(repo.append({ ...records[1], prevHash: GENESIS_PREV_HASH })).rejects.toBeInstanceOf(DecisionLogHeadMovedError);
      const other = recordFrom(decisionEvent(9), null);
      await expect(repo.append(other)).rejects.toThrow(/not the next one/);
      expect(await repo.count()).toBe(1);
    });

    it('lists by run, decider, outcome and decision time (inclusive), in seq order', async () => {
      const events = decisionEvents(12);
      const records = chainOf(events);
      await appendAll(records);
      const seqs = (rs: DecisionRecord[]) => rs.map((r) => r.seq);
      expect(seqs(await repo.list({ runId: 'run_5' }))).toEqual([5]);
      expect(seqs(await repo.list({ decider: 'user:ann' }))).toEqual([2, 4, 6, 8, 10, 12]);
      expect(seqs(await repo.list({ outcome: 'rejected' }))).toEqual([3, 6, 9, 12]);
      expect(seqs(await repo.list({ from: records[3].decidedAt, to: records[6].decidedAt }))).toEqual([4, 5, 6, 7]);
      expect(seqs(await repo.list({ from: records[10].decidedAt }))).toEqual([11, 12]);
      expect(seqs(await repo.list({ to: records[0].decidedAt }))).toEqual([1]);
      expect(seqs(await repo.list({ decider: 'user:ann', outcome: 'rejected', from: records[5].decidedAt }))).toEqual([6, 12]);
      expect(await repo.list({ runId: 'run_404' })).toEqual([]);
    });

    it('pages with afterSeq and limit', async () => {
      await appendAll(chainOf(decisionEvents(10)));
      expect((await repo.list({}, { limit: 3 })).map((r) => r.seq)).toEqual([1, 2, 3]);
      expect((await repo.list({}, { afterSeq: 3, limit: 3 })).map((r) => r.seq)).toEqual([4, 5, 6]);
      expect((await repo.list({ decider: 'user:bob' }, { afterSeq: 3, limit: 2 })).map((r) => r.seq)).toEqual([5, 7]);
      expect(await repo.list({}, { afterSeq: 10 })).toEqual([]);
    });

    it('iterates every record in seq order, page by page, optionally filtered', async () => {
      const records = chainOf(decisionEvents(10));
      await appendAll(records);
      expect(await all(repo.iterate({ pageSize: 3 }))).toEqual(records);
      expect(await all(repo.iterate({ pageSize: 5 }))).toEqual(records);
      expect((await all(repo.iterate({ pageSize: 2, filter: { outcome: 'rejected' } }))).map((r) => r.seq)).toEqual([3, 6, 9]);
      expect((await all(repo.iterate({ pageSize: 2, afterSeq: 7 }))).map((r) => r.seq)).toEqual([8, 9, 10]);
    });

    it('keeps what it stored when opened again', async () => {
      const events = decisionEvents(4);
      await appendAll(chainOf(events));
      const again = await harness.openAnother();
      opened.push(again);
      expect(await again.count()).toBe(4);
      expect(await verifyChainAsync(again.iterate(), expectationOf(events))).toEqual({ ok: true, checked: 4 });
    });

    const writers = options.writers ?? 4;
    const n = options.events ?? 120;
    it(`${writers} writers projecting the same ${n} decisions at once: each recorded once, gap-free, one chain`, async () => {
      const events = decisionEvents(n);
      const repos = [repo];
      for (let i = 1; i < writers; i++) {
        const r = await harness.openAnother();
        opened.push(r);
        repos.push(r);
      }
      await Promise.all(
        repos.map(async (r, w) => {
          for (const e of events) {
            await project(r, e);
            // Let the writers interleave differently.
            if ((e.position + w) % 7 === 0) await new Promise((resolve) => setImmediate(resolve));
          }
        }),
      );
      const stored = await all(repo.iterate());
      expect(stored.map((r) => r.seq)).toEqual(events.map((_, i) => i + 1));
      expect(stored.map((r) => r.decisionId)).toEqual(events.map((e) => (e.data as { decisionId: string }).decisionId));
      expect(verifyChain(stored, expectationOf(events))).toEqual({ ok: true, checked: n });
    });
  });
}
