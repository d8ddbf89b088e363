import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'pg';
import { seedRunAwaitingReview } from '../../../bench/seed-review';
import { commandPathFor } from '../../../src/events/command-handling';
import { runContext, runStream } from '../../../src/team/runs/run-stream';
import type { EventStore } from '../../../src/events/event-store/event-store.port';
import { SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import { DecisionLog } from '../../../src/review-gate/decision-log/decision-log';
import { DECISION_LOG_SUBSCRIPTION, DecisionLogBehindError, DecisionLogProjection } from '../../../src/review-gate/decision-log/decision-log.projection';
import type { DecisionRecordRepository } from '../../../src/review-gate/decision-log/decision-record.repository';
import { SqliteDecisionRecordRepository } from '../../../src/review-gate/decision-log/sqlite.decision-record.repository';
import { decideReview, type ReviewCommand } from '../../../src/review-gate/domain/review-decider';
import { parseReviewId } from '../../../src/team/domain/review-id';
import { openStorage, type Storage } from '../../../src/storage/storage';
import { tempDir } from '../../support/temp-dir';
import { PG_URL } from '../../support/pg';


interface StoreHarness {
  /** Storage on the shared database; each call is another connection (another process, in effect). */
  open(): Promise<Storage>;
  cleanup(): Promise<void>;
}

const harnesses: Record<string, () => StoreHarness> = {
  memory: () => {
    // The in-memory "database" is the one storage object: projectors on it share its one log.
    const storage = openStorage({ store: 'memory', dataDir: '/nonexistent' });
    return { open: () => storage, cleanup: async () => (await storage).close() };
  },
  sqlite: () => {
    const dir = tempDir('triad-dlp-');
    const stores: Storage[] = [];
    return {
      open: async () => {
        const s = await openStorage({ store: 'sqlite', dataDir: dir.path });
        stores.push(s);
        return s;
      },
      cleanup: async () => {
        for (const s of stores) await s.close();
        dir.remove();
      },
    };
  },
  postgres: () => {
    const schema = `triad_dlp_${process.pid}_${randomBytes(5).toString('hex')}`;
    const stores: Storage[] = [];
    return {
      open: async () => {
        const s = await openStorage({ store: 'postgres', pgUrl: PG_URL, dataDir: '/nonexistent' }, { pgSchema: schema, pgPoolSize: 4 });
        stores.push(s);
        return s;
      },
      cleanup: async () => {
        for (const s of stores) await s.close();
        const c = new Client({ connectionString: PG_URL });
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => c.end());
      },
    };
  },
};

/** A decision through the review gate's own core path: read the run, fold, decide, append at the revision read. */
/** `at` is the decision's clock: a timeout decided past its due time needs no wait for it. */
async function decide(store: EventStore, reviewId: string, how: 'approve' | 'reject' | 'timeout', decider = 'user:rita', at = new Date().toISOString()): Promise<void> {
  const runId = parseReviewId(reviewId)!.runId;
  const base = { reviewId, decisionId: randomUUID(), at };
  const command: ReviewCommand =
    how === 'approve'
      ? { ...base, type: 'ApproveReview', decider: { id: decider, kind: 'human' }, reason: `approved by ${decider}, "all good", checked` }
      : how === 'reject'
        ? { ...base, type: 'RejectReview', decider: { id: decider, kind: 'human' }, reason: 'missing tests', rework: false }
        : { ...base, type: 'FireReviewTimeout' };
  await commandPathFor(store).handle(runStream(store, runId), (state) => decideReview(command, state), runContext(runId, decider));
}

async function decisions(store: EventStore, n: number, how: (i: number) => 'approve' | 'reject' = () => 'approve'): Promise<void> {
  for (let i = 0; i < n; i++) {
    const { reviewId } = await seedRunAwaitingReview(store, { launchedBy: 'user:lena' });
    await decide(store, reviewId, how(i));
  }
}

describe.each(Object.keys(harnesses))('the decision log projector on %s', (kind) => {
  let h: StoreHarness;
  const projections: DecisionLogProjection[] = [];

  async function projector(storage?: Storage) {
    const st = storage ?? (await h.open());
    const s = st.events;
    const repo = st.decisions;
    const projection = new DecisionLogProjection(s, repo, { retryDelayMs: 20, checkpointIdleMs: 50 });
    projections.push(projection);
    return { storage: st, store: s, repo, projection, log: new DecisionLog(s, repo, projection) };
  }

  beforeEach(() => {
    h = harnesses[kind]();
  });
  afterEach(async () => {
    for (const p of projections.splice(0)) await p.stop();
    await h.cleanup();
  });

  it('records every decision in global order — approvals, rejections, system timeouts — and nothing else', async () => {
    const { store, projection, log } = await projector();
    projection.start();
    await decisions(store, 3, (i) => (i === 1 ? 'reject' : 'approve'));
    const timed = await seedRunAwaitingReview(store, { launchedBy: 'user:lena', reviewPolicy: { timeout: { policy: 'escalate', afterMs: 1 } } });
    await decide(store, timed.reviewId, 'timeout', undefined, new Date(Date.now() + 60_000).toISOString());
    await decide(store, timed.reviewId, 'approve');
    const list = await log.list();
    expect(list.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(list.map((r) => r.outcome)).toEqual(['approved', 'rejected', 'approved', 'escalated', 'approved']);
    expect(list[3]).toMatchObject({ decider: 'system', deciderKind: 'system', policy: 'escalate', reviewId: timed.reviewId, runId: timed.runId });
    const positions = list.map((r) => r.position);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    const events = await store.readAll({ filter: { types: ['ReviewDecided'] } });
    expect(list.map((r) => r.decisionId)).toEqual(events.map((e) => (e.data as { decisionId: string }).decisionId));
    expect(await log.verify()).toEqual({ ok: true, checked: 5 });
  });

  it('a read right after a decision sees it (catchUp waits for the projector)', async () => {
    const { store, projection, log } = await projector();
    projection.start();
    for (let i = 1; i <= 4; i++) {
      await decisions(store, 1);
      expect((await log.list()).length).toBe(i);
    }
  });

  it('saves its position under the durable checkpoint `decision-log` and resumes there without duplicates', async () => {
    const first = await projector();
    first.projection.start();
    await decisions(first.store, 3);
    await first.log.list();
    await first.projection.stop();
    const saved = await first.store.loadCheckpoint(DECISION_LOG_SUBSCRIPTION);
    const events = await first.store.readAll({ filter: { types: ['ReviewDecided'] } });
    expect(saved).toBe(events[events.length - 1].position);

    await decisions(first.store, 2);
    const second = await projector(first.storage);
    second.projection.start();
    expect((await second.log.list()).map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(await second.log.verify()).toEqual({ ok: true, checked: 5 });
  });

  it('two projectors on the same database at once write one gap-free chain', async () => {
    const a = await projector();
    const b = await projector();
    a.projection.start();
    b.projection.start();
    // Decisions land from both "processes" while both project.
    await Promise.all([decisions(a.store, 15), decisions(b.store, 15)]);
    await Promise.all([a.log.list(), b.log.list()]);
    const list = await a.log.list();
    expect(list.map((r) => r.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(new Set(list.map((r) => r.decisionId)).size).toBe(30);
    expect(await a.log.verify()).toEqual({ ok: true, checked: 30 });
    expect(await b.log.verify()).toEqual({ ok: true, checked: 30 });
  });

  it('keeps going after a failing write (retries), and a read waits for it', async () => {
    const { store, repo } = await projector();
    let failures = 2;
    const flaky: DecisionRecordRepository = Object.create(repo);
    flaky.append = async (record) => {
      if (failures-- > 0) throw new Error('disk hiccup');
      return repo.append(record);
    };
    const errors: string[] = [];
    const projection = new DecisionLogProjection(store, flaky, { retryDelayMs: 20, logger: { log: () => undefined, error: (m) => errors.push(m) } });
    projections.push(projection);
    projection.start();
    await decisions(store, 2);
    const log = new DecisionLog(store, repo, projection);
    expect((await log.list()).length).toBe(2);
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatch(/disk hiccup/);
  });

  it('a read gives up with DecisionLogBehindError when the projector cannot write', async () => {
    const { store, repo } = await projector();
    const broken: DecisionRecordRepository = Object.create(repo);
    broken.append = async () => {
      throw new Error('read-only file system');
    };
    const projection = new DecisionLogProjection(store, broken, { retryDelayMs: 20, logger: { log: () => undefined, error: () => undefined } });
    projections.push(projection);
    projection.start();
    await decisions(store, 1);
    await expect(projection.catchUp(300)).rejects.toThrow(DecisionLogBehindError);
    // The reason reaches clients (503): it says what is wrong, never the raw error.
    await expect(projection.catchUp(300)).rejects.toThrow(/projector is failing/);
    await expect(projection.catchUp(300)).rejects.not.toThrow(/read-only file system/);
  });
});

describe('the decision log projector after tampering (SQLite)', () => {
  it('a position changed in the database makes neither the projector skip new decisions nor verify pass', async () => {
    const dir = tempDir('triad-dlp-');
    const store = new SqliteEventStore({ file: join(dir.path, 'triad.db') });
    try {
      const repo = new SqliteDecisionRecordRepository(store.db);
      let projection = new DecisionLogProjection(store, repo, { checkpointIdleMs: 20 });
      projection.start();
      await decisions(store, 2);
      await projection.catchUp();
      await projection.stop();
      // Pushed far ahead, and the checkpoint lost: a naive resume would skip everything to come.
      store.db.prepare('UPDATE decision_records SET position = 9007199254740991 WHERE seq = 2').run();
      store.db.prepare('DELETE FROM subscription_checkpoints').run();
      projection = new DecisionLogProjection(store, repo);
      projection.start();
      await decisions(store, 1);
      const log = new DecisionLog(store, repo, projection);
      expect((await log.list()).map((r) => r.seq)).toEqual([1, 2, 3]);
      expect((await log.verify()).firstBadRecord).toMatchObject({ seq: 2, problem: 'altered' });
      await projection.stop();
    } finally {
      await store.close();
      dir.remove();
    }
  });
});
