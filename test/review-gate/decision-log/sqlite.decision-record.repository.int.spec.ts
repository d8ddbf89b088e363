import Database from 'better-sqlite3';
import { join } from 'node:path';
import { SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import { SQLITE_DECISION_LOG_SCHEMA_VERSION, SqliteDecisionRecordRepository } from '../../../src/review-gate/decision-log/sqlite.decision-record.repository';
import { openWalDatabase } from '../../support/sqlite';
import { tempDir } from '../../support/temp-dir';
import { decisionRecordRepositoryContract } from './decision-record.repository.contract';

/** How this suite builds the adapter: its own constructor, on a connection to the events file. */
const makeAdapter = (db: Database.Database) => new SqliteDecisionRecordRepository(db);

decisionRecordRepositoryContract('sqlite', () => {
  const dir = tempDir('triad-decisions-');
  const file = join(dir.path, 'triad.db');
  const connections: Database.Database[] = [];
  // Each repository on a connection of its own to the file, as another process has.
  const open = async () => {
    const db = openWalDatabase(file);
    connections.push(db);
    return makeAdapter(db);
  };
  return {
    open,
    openAnother: open,
    cleanup: async () => {
      for (const db of connections) db.close();
      dir.remove();
    },
  };
});

describe('sqlite decision records specifics', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => (dir = tempDir('triad-decisions-')));
  afterEach(() => dir.remove());

  it('live in the events database file, with their own schema version table', async () => {
    const file = join(dir.path, 'triad.db');
    const store = new SqliteEventStore({ file });
    new SqliteDecisionRecordRepository(store.db);
    const tables = (store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((t) => t.name);
    expect(tables).toEqual(expect.arrayContaining(['events', 'decision_records', 'decision_log_migrations', 'schema_migrations']));
    const versions = store.db.prepare('SELECT version FROM decision_log_migrations').all();
    expect(versions).toEqual(Array.from({ length: SQLITE_DECISION_LOG_SCHEMA_VERSION }, (_, i) => ({ version: i + 1 })));
    await store.close();
    // Opening again applies nothing twice.
    const again = new SqliteEventStore({ file });
    new SqliteDecisionRecordRepository(again.db);
    expect(again.db.prepare('SELECT COUNT(*) AS n FROM decision_log_migrations').get()).toEqual({ n: SQLITE_DECISION_LOG_SCHEMA_VERSION });
    await again.close();
  });

  it('refuses a decision log schema newer than this build', async () => {
    const file = join(dir.path, 'triad.db');
    const db = new Database(file);
    new SqliteDecisionRecordRepository(db);
    db.prepare('INSERT INTO decision_log_migrations (version, applied_at) VALUES (99, ?)').run(new Date().toISOString());
    expect(() => new SqliteDecisionRecordRepository(db)).toThrow(/newer than this triad/);
    db.close();
  });
});
