import Database from 'better-sqlite3';
import { join } from 'node:path';
import { SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import { recordFrom } from '../../../src/review-gate/decision-log/chain';
import { DecisionLog } from '../../../src/review-gate/decision-log/decision-log';
import { DecisionLogProjection } from '../../../src/review-gate/decision-log/decision-log.projection';
import type { DecisionRecord } from '../../../src/review-gate/decision-log/decision-record';
import { DECISION_COLUMNS, rowValues } from '../../../src/review-gate/decision-log/decision-record.rows';
import { SqliteDecisionRecordRepository } from '../../../src/review-gate/decision-log/sqlite.decision-record.repository';
import { tempDir } from '../../support/temp-dir';
import { approvalEvent, decisionEvent } from './fixtures';

/**
 * A SQLite file whose decision log was written before tool approvals were recorded (schema version
 * 1, records of review decisions only, the old subscription's checkpoint past approval decisions):
 * opened by this version, its records keep their hashes, the approval decisions made before the
 * upgrade stay out of the log, and those made after it are recorded and verified.
 */

jest.setTimeout(60_000);

/** Schema version 1 of decision_records, exactly as it was created. */
const V1 = `CREATE TABLE decision_records (
     seq INTEGER PRIMARY KEY, decision_id TEXT NOT NULL UNIQUE, run_id TEXT NOT NULL, review_id TEXT NOT NULL,
     iteration INTEGER NOT NULL, executor TEXT NOT NULL, decider TEXT NOT NULL, decider_kind TEXT NOT NULL,
     outcome TEXT NOT NULL, reason TEXT NOT NULL, policy TEXT, acceptance_criteria TEXT NOT NULL,
     artifact_hash TEXT NOT NULL, charter_version TEXT NOT NULL, decided_at TEXT NOT NULL,
     position INTEGER NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
   CREATE INDEX decision_records_run ON decision_records (run_id, seq);
   CREATE INDEX decision_records_decider ON decision_records (decider, seq);
   CREATE INDEX decision_records_decided_at ON decision_records (decided_at);
   CREATE TABLE decision_log_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
   INSERT INTO decision_log_migrations VALUES (1, '2025-01-01T00:00:00.000Z');`;

describe('upgrading a version 1 decision log (SQLite)', () => {
  const dir = tempDir('triad-declog-upgrade-');
  const file = join(dir.path, 'triad.db');
  afterAll(() => dir.remove());

  it('keeps old records and hashes, leaves out approvals decided before the upgrade, records those after', async () => {
    const store = new SqliteEventStore({ file });
    const v1Columns = DECISION_COLUMNS.slice(0, DECISION_COLUMNS.indexOf('hash') + 1);
    // Before: two reviews and one tool approval between them; only the reviews have records.
    const stored = [];
    for (const e of [decisionEvent(1), approvalEvent(1), decisionEvent(2)]) {
      const { position } = await store.append(e.streamId, [{ type: e.type, data: e.data }]);
      stored.push({ ...e, position });
    }
    const old: DecisionRecord[] = [];
    for (const e of [stored[0], stored[2]]) old.push(recordFrom(e, old[old.length - 1]));
    await store.saveCheckpoint('decision-log', stored[2].position + 100);
    const raw = new Database(file);
    raw.exec(V1);
    const insert = raw.prepare(`INSERT INTO decision_records (${v1Columns.join(', ')}) VALUES (${v1Columns.map(() => '?').join(', ')})`);
    for (const r of old) insert.run(...rowValues(r).slice(0, v1Columns.length));
    raw.close();

    // The upgrade, then a tool approval and a review decided after it.
    const repo = new SqliteDecisionRecordRepository(store.db);
    expect(await repo.approvalsFrom()).toBe(stored[2].position);
    expect(await repo.list()).toEqual(old);
    for (const e of [approvalEvent(3), decisionEvent(4)]) await store.append(e.streamId, [{ type: e.type, data: e.data }]);
    const projection = new DecisionLogProjection(store, repo, { checkpointIdleMs: 10 });
    projection.start();
    try {
      const log = new DecisionLog(store, repo, projection);
      const records = await log.list();
      expect(records.map((r) => [r.seq, r.decisionId])).toEqual([
        [1, 'dec-1'],
        [2, 'dec-2'],
        [3, 'apr_run_3.tu_3'],
        [4, 'dec-4'],
      ]);
      expect(records.slice(0, 2)).toEqual(old);
      expect(await log.verify({ since: old[1].hash })).toMatchObject({ ok: true, checked: 4, since: { extends: true, seq: 2 } });
    } finally {
      await projection.stop();
      await store.close();
    }
  });
});
