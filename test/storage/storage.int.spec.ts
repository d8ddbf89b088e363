import Database from 'better-sqlite3';
import { existsSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import type { Checkpoint } from '../../src/checkpoint/checkpoint';
import { InMemoryCheckpointStore } from '../../src/checkpoint/in-memory.checkpoint-store';
import { PostgresCheckpointStore } from '../../src/checkpoint/postgres.checkpoint-store';
import { SqliteCheckpointStore } from '../../src/checkpoint/sqlite.checkpoint-store';
import { ConfigError } from '../../src/config/config';
import { InMemoryEventStore } from '../../src/events/event-store/in-memory.event-store';
import { PostgresEventStore } from '../../src/events/event-store/postgres.event-store';
import { SqliteEventStore } from '../../src/events/event-store/sqlite.event-store';
import { recordFrom } from '../../src/review-gate/decision-log/chain';
import { InMemoryDecisionRecordRepository } from '../../src/review-gate/decision-log/in-memory.decision-record.repository';
import { PostgresDecisionRecordRepository } from '../../src/review-gate/decision-log/postgres.decision-record.repository';
import { SqliteDecisionRecordRepository } from '../../src/review-gate/decision-log/sqlite.decision-record.repository';
import { openStorage, type Storage } from '../../src/storage/storage';
import { InMemoryRunLeases } from '../../src/team/leases/in-memory.run-leases';
import { PostgresRunLeases } from '../../src/team/leases/postgres.run-leases';
import { SqliteRunLeases } from '../../src/team/leases/sqlite.run-leases';
import { dropSchema, freshSchema, PG_URL, withClient } from '../support/pg';
import { tempDir } from '../support/temp-dir';
import { waitFor } from '../support/wait-for';
import { decisionEvent } from '../review-gate/decision-log/fixtures';

// One factory opens the database once and builds every store on it; closing the storage closes
// every store, then the connection, once.

const checkpoint: Checkpoint = {
  runId: 'run_1',
  revision: 3,
  position: 4,
  schemaVersion: 1,
  contentHash: 'sha256:0',
  createdAt: '2025-01-01T00:00:00.000Z',
  reason: 'manual',
  state: { runId: 'run_1' },
};

/** One write through each store. */
async function writeThroughEveryStore(storage: Storage): Promise<void> {
  await storage.events.append('run-run_1', [{ id: 'ev-1', type: 'RunLaunched', data: { i: 1 } }]);
  await storage.checkpoints.save(checkpoint);
  expect(await storage.leases.tryAcquire('run_1', 'owner-a', 60_000, Date.now())).toBe(true);
  expect(await storage.decisions.append(recordFrom(decisionEvent(1), null))).toEqual({ appended: true });
}

/** Descriptors this process holds open on `file` itself (Linux); undefined elsewhere. */
function openDescriptors(file: string): number | undefined {
  if (!existsSync('/proc/self/fd')) return undefined;
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === file) n++;
    } catch {
      // Closed between the listing and the look.
    }
  }
  return n;
}

describe('storage on SQLite', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => (dir = tempDir('triad-storage-')));
  afterEach(() => dir.remove());

  it('opens triad.db once and every store writes into it; close lets go of every connection, once', async () => {
    const storage = await openStorage({ store: 'sqlite', dataDir: dir.path });
    const file = realpathSync(join(dir.path, 'triad.db'));
    expect(storage.kind).toBe('sqlite');
    expect(storage.events).toBeInstanceOf(SqliteEventStore);
    expect(storage.checkpoints).toBeInstanceOf(SqliteCheckpointStore);
    expect(storage.leases).toBeInstanceOf(SqliteRunLeases);
    expect(storage.decisions).toBeInstanceOf(SqliteDecisionRecordRepository);
    // The shared connection, and the checkpoints' side connection that does not fsync: no other.
    const descriptors = openDescriptors(file);
    if (descriptors !== undefined) expect(descriptors).toBe(2);

    await writeThroughEveryStore(storage);
    await storage.close();
    await storage.close();

    if (descriptors !== undefined) expect(openDescriptors(file)).toBe(0);
    // The last connection to close checkpoints the WAL into the file and removes it: none was left open.
    expect(existsSync(`${file}-wal`)).toBe(false);
    const raw = new Database(file, { readonly: true });
    try {
      for (const table of ['events', 'checkpoints', 'run_leases', 'decision_records']) {
        expect([table, (raw.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n]).toEqual([table, 1]);
      }
    } finally {
      raw.close();
    }
  });

  it('writes an append still queued when it closes before closing the connection', async () => {
    const storage = await openStorage({ store: 'sqlite', dataDir: dir.path });
    const queued = storage.events.append('s-1', [{ id: 'queued', type: 'Queued', data: {} }]);
    await storage.close();
    await expect(queued).resolves.toEqual({ nextExpectedRevision: 0, position: 1 });
    const again = await openStorage({ store: 'sqlite', dataDir: dir.path });
    try {
      expect((await again.events.readAll()).map((e) => e.id)).toEqual(['queued']);
    } finally {
      await again.close();
    }
  });
});

describe('storage on PostgreSQL', () => {
  let schema: string;
  beforeEach(() => (schema = freshSchema('triad_storage')));
  afterEach(() => dropSchema(schema));

  it('opens one pool for every store (and the LISTEN connection beside it); close ends them all', async () => {
    // Its connections are told apart from everyone else's on the server by their application name.
    const name = schema;
    const url = new URL(PG_URL);
    url.searchParams.set('application_name', name);
    const connections = async () =>
      Number((await withClient((c) => c.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1', [name]))).rows[0].n);

    const storage = await openStorage({ store: 'postgres', pgUrl: url.toString(), dataDir: '/nonexistent' }, { pgSchema: schema, pgPoolSize: 1 });
    expect(storage.kind).toBe('postgres');
    expect(storage.events).toBeInstanceOf(PostgresEventStore);
    expect(storage.checkpoints).toBeInstanceOf(PostgresCheckpointStore);
    expect(storage.leases).toBeInstanceOf(PostgresRunLeases);
    expect(storage.decisions).toBeInstanceOf(PostgresDecisionRecordRepository);

    await Promise.all([writeThroughEveryStore(storage), storage.events.readAll(), storage.checkpoints.latest('run_1'), storage.leases.holder('run_1', Date.now())]);
    // A pool of one connection, whichever store asks, and the LISTEN connection.
    expect(await connections()).toBe(2);
    const tables = await withClient((c) =>
      c.query<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [schema]),
    );
    expect(tables.rows.map((r) => r.table_name)).toEqual(expect.arrayContaining(['events', 'checkpoints', 'run_leases', 'decision_records']));

    await storage.close();
    await storage.close();
    await waitFor('the storage\'s connections to end', async () => (await connections()) === 0, 10_000);
  });
});

describe('storage in memory, and kinds not built', () => {
  it('memory: in-memory stores, closed together', async () => {
    const storage = await openStorage({ store: 'memory', dataDir: '/nonexistent' });
    expect(storage.kind).toBe('memory');
    expect(storage.events).toBeInstanceOf(InMemoryEventStore);
    expect(storage.checkpoints).toBeInstanceOf(InMemoryCheckpointStore);
    expect(storage.leases).toBeInstanceOf(InMemoryRunLeases);
    expect(storage.decisions).toBeInstanceOf(InMemoryDecisionRecordRepository);
    await writeThroughEveryStore(storage);
    await storage.close();
  });

  it('esdb without a URL is a configuration error (the esdb storage itself: esdb.storage.int.spec.ts)', async () => {
    const opening = openStorage({ store: 'esdb', dataDir: '/nonexistent' });
    await expect(opening).rejects.toBeInstanceOf(ConfigError);
    await expect(opening).rejects.toThrow(/TRIAD_STORE=esdb needs TRIAD_ESDB_URL/);
  });
});
