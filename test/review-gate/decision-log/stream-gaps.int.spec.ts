import Database from 'better-sqlite3';
import { join } from 'node:path';
import { Client } from 'pg';
import type { EventStore } from '../../../src/events/event-store/event-store.port';
import { DecisionLog } from '../../../src/review-gate/decision-log/decision-log';
import { DecisionLogProjection } from '../../../src/review-gate/decision-log/decision-log.projection';
import type { DecisionRecordRepository } from '../../../src/review-gate/decision-log/decision-record.repository';
import { openStorage } from '../../../src/storage/storage';
import { freshSchema, PG_URL } from '../../support/pg';
import { tempDir } from '../../support/temp-dir';
import { decisionEvent } from './fixtures';

/**
 * The stream check of `verify` over many decided runs, on a real SQLite file and a real PostgreSQL:
 * events removed or moved outside triad show as holes, named by their first missing revision, and
 * only the streams with a hole are read (the others are judged by their extents alone).
 */

jest.setTimeout(180_000);

/** More decided runs than the stream check asks the store about per call. */
const RUNS = 1100;

interface Db {
  store: EventStore;
  decisions: DecisionRecordRepository;
  /** Runs one statement on the events table (`E`), params as `$n`. */
  exec(sql: string, params: unknown[]): Promise<void>;
  close(): Promise<void>;
}

const databases: Record<'sqlite' | 'postgres', () => Promise<Db>> = {
  sqlite: async () => {
    const dir = tempDir('triad-stream-gaps-');
    const file = join(dir.path, 'triad.db');
    const storage = await openStorage({ store: 'sqlite', dataDir: dir.path });
    const raw = new Database(file);
    raw.pragma('busy_timeout = 10000');
    return {
      store: storage.events,
      decisions: storage.decisions,
      exec: async (sql, params) => void raw.prepare(sql.replace(/\bE\b/g, 'events').replace(/\$\d+/g, '?')).run(...params),
      close: async () => {
        raw.close();
        await storage.close();
        dir.remove();
      },
    };
  },
  postgres: async () => {
    const schema = freshSchema('triad_stream_gaps');
    const storage = await openStorage({ store: 'postgres', pgUrl: PG_URL, dataDir: '/nonexistent' }, { pgSchema: schema, pgPoolSize: 4 });
    const client = new Client({ connectionString: PG_URL });
    await client.connect();
    return {
      store: storage.events,
      decisions: storage.decisions,
      exec: async (sql, params) => void (await client.query(sql.replace(/\bE\b/g, `"${schema}".events`), params)),
      close: async () => {
        await storage.close();
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => client.end());
      },
    };
  },
};

describe.each(['sqlite', 'postgres'] as const)('decision log stream check on %s', (kind) => {
  let db: Db;
  let projection: DecisionLogProjection;
  let log: DecisionLog;

  beforeAll(async () => {
    db = await databases[kind]();
    // Each run: launched, a turn, its decision, its end (revisions 0–3).
    const runs = Array.from({ length: RUNS }, (_, i) => decisionEvent(i + 1));
    for (let i = 0; i < runs.length; i += 100) {
      await Promise.all(
        runs.slice(i, i + 100).map((e) =>
          db.store.append(e.streamId, [
            { type: 'RunLaunched', data: {} },
            { type: 'TurnRecorded', data: {} },
            { type: e.type, data: e.data },
            { type: 'RunEnded', data: { status: 'completed', reason: 'COMPLETED', at: '2025-01-01T00:00:00.000Z' } },
          ]),
        ),
      );
    }
    const repo = db.decisions;
    projection = new DecisionLogProjection(db.store, repo, { checkpointIdleMs: 10 });
    projection.start();
    // Projecting every record takes seconds on a loaded machine, longer than a read waits for it
    // (10 s); the tests are about the stream check.
    await projection.catchUp(120_000);
    log = new DecisionLog(db.store, repo, projection);
  });

  afterAll(async () => {
    await projection?.stop();
    await db?.close();
  });

  it('given whole decided runs, then verify is ok and reads no run stream', async () => {
    const reads = jest.spyOn(db.store, 'readStream');
    try {
      expect(await log.verify()).toEqual({ ok: true, checked: RUNS });
      expect(reads).not.toHaveBeenCalled();
    } finally {
      reads.mockRestore();
    }
  });

  it('given events removed or moved below revision 0 in decided runs, then each hole is named, and only those runs are read', async () => {
    // First run: its launch deleted. A run past the first call's streams: a turn deleted. Another:
    // its launch moved to revision -1 (count = last revision + 1 still holds there).
    await db.exec('DELETE FROM E WHERE stream_id = $1 AND revision = 0', ['run-run_1']);
    await db.exec('DELETE FROM E WHERE stream_id = $1 AND revision = 1', ['run-run_1050']);
    await db.exec('UPDATE E SET revision = -1 WHERE stream_id = $1 AND revision = 0', ['run-run_700']);
    const reads = jest.spyOn(db.store, 'readStream');
    try {
      const result = await log.verify();
      expect(result).toEqual({
        ok: false,
        checked: RUNS,
        streamGaps: [
          { streamId: 'run-run_1', missingRevision: 0, foundRevision: 1 },
          { streamId: 'run-run_700', missingRevision: 0, foundRevision: 1 },
          { streamId: 'run-run_1050', missingRevision: 1, foundRevision: 2 },
        ],
      });
      expect(new Set(reads.mock.calls.map(([streamId]) => streamId))).toEqual(new Set(['run-run_1', 'run-run_700', 'run-run_1050']));
    } finally {
      reads.mockRestore();
    }
  });
});
