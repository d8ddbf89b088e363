import Database from 'better-sqlite3';
import { join } from 'node:path';
import { SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import { DecisionLog } from '../../../src/review-gate/decision-log/decision-log';
import { DecisionLogProjection } from '../../../src/review-gate/decision-log/decision-log.projection';
import type { DecisionRecordRepository } from '../../../src/review-gate/decision-log/decision-record.repository';
import { SqliteDecisionRecordRepository } from '../../../src/review-gate/decision-log/sqlite.decision-record.repository';
import { tempDir } from '../../support/temp-dir';
import { decisionEvent } from './fixtures';

/**
 * Truncation on a real SQLite file: someone with the file deletes the last decision record and the
 * events it was made from. The chain that is left is valid and matches the events that are left;
 * what proves the removal is a head seen earlier (`verify --since`), and a hole in a decided run's
 * revisions.
 */

jest.setTimeout(60_000);

describe('decision log truncation on a real SQLite file', () => {
  const dir = tempDir('triad-truncation-');
  const file = join(dir.path, 'triad.db');
  let store: SqliteEventStore;
  let repo: DecisionRecordRepository;
  let projection: DecisionLogProjection;
  let log: DecisionLog;
  let raw: Database.Database;

  beforeAll(async () => {
    store = new SqliteEventStore({ file });
    // Four runs; each decision appended with the run's end, as the gate does. run_2 is decided twice.
    for (const i of [1, 2, 3, 4]) {
      const e = decisionEvent(i);
      await store.append(e.streamId, [{ type: 'RunLaunched', data: { i } }]);
      await store.append(e.streamId, [
        { type: e.type, data: e.data },
        { type: 'RunEnded', data: { status: 'completed', reason: 'COMPLETED', at: '2025-01-01T00:00:00.000Z' } },
      ]);
    }
    const again = decisionEvent(2, { decisionId: 'dec-2b', reason: 'decided again' });
    await store.append(again.streamId, [{ type: again.type, data: again.data }]);
    repo = new SqliteDecisionRecordRepository(store.db);
    projection = new DecisionLogProjection(store, repo, { checkpointIdleMs: 10 });
    projection.start();
    log = new DecisionLog(store, repo, projection);
    raw = new Database(file);
    raw.pragma('busy_timeout = 10000');
  });

  afterAll(async () => {
    raw?.close();
    await projection?.stop();
    await store?.close();
    dir.remove();
  });

  it('the head names the last record; an intact log extends every head it had', async () => {
    const head = await log.head();
    expect(head).toEqual({ seq: 5, hash: (await repo.last())!.hash });
    const first = (await repo.list({}, { limit: 1 }))[0];
    expect(await log.verify({ since: head.hash })).toEqual({ ok: true, checked: 5, since: { hash: head.hash, seq: 5, extends: true, head } });
    expect(await log.verify({ since: first.hash })).toMatchObject({ ok: true, since: { seq: 1, extends: true } });
  });

  it('given the last record and its events deleted, then verify alone cannot tell, but verify --since the old head does', async () => {
    const oldHead = await log.head();
    const last = (await repo.last())!;
    // The last decision (dec-2b) was appended alone: delete its record and its event.
    raw.prepare('DELETE FROM decision_records WHERE seq = ?').run(last.seq);
    raw.prepare('DELETE FROM events WHERE position = ?').run(last.position);

    const plain = await log.verify();
    expect(plain).toEqual({ ok: true, checked: 4 });
    const since = await log.verify({ since: oldHead.hash });
    expect(since.ok).toBe(false);
    expect(since.since).toMatchObject({ hash: oldHead.hash, extends: false, head: { seq: 4 } });
    expect(since.since!.detail).toMatch(/^not found/);
    expect(since.since!.seq).toBeUndefined();
  });

  it('given events deleted from decided runs, then each hole in a run stream is reported (a run whose only decision went with them is left to --since)', async () => {
    const head = await log.head();
    const last = (await repo.last())!;
    // dec-4: its record, its event and nothing else of the append (the RunEnded after it stays).
    raw.prepare('DELETE FROM decision_records WHERE seq = ?').run(last.seq);
    raw.prepare('DELETE FROM events WHERE position = ?').run(last.position);
    // Another decided run loses an event in the middle of its stream too.
    const run2 = await store.readStream('run-run_2');
    raw.prepare('DELETE FROM events WHERE stream_id = ? AND revision = 0').run('run-run_2');

    const result = await log.verify({ since: head.hash });
    expect(result.ok).toBe(false);
    expect(result.firstBadRecord).toBeUndefined();
    expect(result.streamGaps).toEqual([{ streamId: 'run-run_2', missingRevision: 0, foundRevision: run2[1].revision }]);
    expect(result.since).toMatchObject({ extends: false });
  });

  it('an unknown or malformed since: not found (ok false), or refused before anything is read', async () => {
    const result = await log.verify({ since: 'f'.repeat(64) });
    expect(result).toMatchObject({ ok: false, since: { hash: 'f'.repeat(64), extends: false } });
    expect(result.since!.detail).toMatch(/^not found/);
    await expect(log.verify({ since: 'not-a-hash' })).rejects.toThrow('since must be a record hash');
  });
});
