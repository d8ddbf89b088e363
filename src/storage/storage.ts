import { join } from 'node:path';
import { ConfigError, type TriadConfig } from '../config/config';
import type { EventStore } from '../events/event-store/event-store.port';
import { InMemoryEventStore } from '../events/event-store/in-memory.event-store';
import { openPostgresPool } from '../events/postgres.database';
import { PostgresEventStore } from '../events/event-store/postgres.event-store';
import { openSqliteDatabase } from '../events/sqlite.database';
import { SqliteEventStore } from '../events/event-store/sqlite.event-store';
import type { UpcasterRegistry } from '../events/upcasting';
import type { CheckpointStore } from '../checkpoint/checkpoint-store.port';
import { EsdbCheckpointStore } from '../checkpoint/esdb.checkpoint-store';
import type { EsdbConnection } from '../events/esdb.client';
import { EsdbEventStore } from '../events/event-store/esdb.event-store';
import { isStoreUnavailable } from '../events/errors';
import { EsdbDecisionRecordRepository } from '../review-gate/decision-log/esdb.decision-record.repository';
import { EsdbRunLeases } from '../team/leases/esdb.run-leases';
import { InMemoryCheckpointStore } from '../checkpoint/in-memory.checkpoint-store';
import { PostgresCheckpointStore } from '../checkpoint/postgres.checkpoint-store';
import { SqliteCheckpointStore } from '../checkpoint/sqlite.checkpoint-store';
import type { DecisionRecordRepository } from '../review-gate/decision-log/decision-record.repository';
import { InMemoryDecisionRecordRepository } from '../review-gate/decision-log/in-memory.decision-record.repository';
import { PostgresDecisionRecordRepository } from '../review-gate/decision-log/postgres.decision-record.repository';
import { SqliteDecisionRecordRepository } from '../review-gate/decision-log/sqlite.decision-record.repository';
import type { StoreHealthSink } from '../shared/health';
import type { TableLogger } from '../shared/postgres-tables';
import { InMemoryRunLeases } from '../team/leases/in-memory.run-leases';
import { PostgresRunLeases } from '../team/leases/postgres.run-leases';
import { SqliteRunLeases } from '../team/leases/sqlite.run-leases';
import type { RunLeases } from '../team/leases/run-leases.port';
import type { LiveChannel } from '../events/live-channel/live-channel.port';
import { PostgresLiveChannel } from '../events/live-channel/postgres.live-channel';
import { EsdbLiveChannel } from '../events/live-channel/esdb.live-channel';
import type { WebhookStore } from '../webhooks/store/webhook-store.port';
import { InMemoryWebhookStore } from '../webhooks/store/in-memory.webhook-store';
import { PostgresWebhookStore } from '../webhooks/store/postgres.webhook-store';
import { SqliteWebhookStore } from '../webhooks/store/sqlite.webhook-store';

/** The process's Storage (a Nest provider of the global events module). */
export const STORAGE = Symbol('STORAGE');

export type StorageKind = 'sqlite' | 'postgres' | 'esdb' | 'memory';

/**
 * Every store of a process, in one database opened once: the events, run checkpoints, run leases
 * and the decision log (API keys are events, in the `apikeys` stream). On SQLite they share one
 * connection to `<TRIAD_DATA_DIR>/triad.db` (checkpoints add a side connection that does not
 * fsync, see `SqliteCheckpointStore`); on PostgreSQL one pool, in one schema; on EventStoreDB one
 * client connection, every store in streams under one namespace (`triad` by default).
 */
export interface Storage {
  readonly kind: StorageKind;
  readonly events: EventStore;
  readonly checkpoints: CheckpointStore;
  readonly leases: RunLeases;
  readonly decisions: DecisionRecordRepository;
  /**
   * Live model text between processes (PostgreSQL: LISTEN/NOTIFY; EventStoreDB: a short stream and
   * a live subscription to it). None on SQLite (one host: its SSE clients get the text of the runs
   * driven by the process they are connected to) nor in memory.
   */
  readonly live?: LiveChannel;
  /** Webhook endpoints, their outbox positions and delivery logs (SQLite, PostgreSQL, memory; none on EventStoreDB). */
  readonly webhooks?: WebhookStore;
  /**
   * Closes every store, then the connection or pool; once (a second call waits for the first).
   * Call it when nothing writes any more: in the app, the global events module does, after every
   * other module's shutdown (the supervisor's last checkpoints, suspensions and lease releases).
   * The order: checkpoints (on SQLite their side connection goes first, so the store's own
   * connection is the last on the file and runs the final, synced WAL checkpoint as it closes),
   * leases and decisions (nothing of their own), the event store (queued appends written and
   * their WAL sync awaited, the read-ahead thread and the LISTEN connection stopped), and last the
   * shared connection or pool. A failing step does not keep the next from running; the first
   * failure is thrown at the end.
   */
  close(): Promise<void>;
}

export interface StorageOptions {
  upcasters?: UpcasterRegistry;
  maxEventBytes?: number;
  /** PostgreSQL schema for triad's tables (default `public`); lets tests and tools isolate themselves. */
  pgSchema?: string;
  /** Connections in the PostgreSQL pool (default 10). */
  pgPoolSize?: number;
  /** Prefix of every EventStoreDB stream triad writes (default `triad`); lets tests and tools isolate themselves. */
  esdbNamespace?: string;
  /** Told when the store stops answering and when it answers again (`GET /health`). */
  health?: StoreHealthSink;
  /** Told of what the store works around (an index this role may not create). */
  logger?: TableLogger;
}

/** The one place where `TRIAD_STORE` picks the adapters, and the one place the database is opened. */
export async function openStorage(config: Pick<TriadConfig, 'store' | 'dataDir' | 'pgUrl'> & { esdbUrl?: string }, options: StorageOptions = {}): Promise<Storage> {
  switch (config.store) {
    case 'sqlite':
      return openSqliteStorage(join(config.dataDir, 'triad.db'), options);
    case 'postgres':
      if (!config.pgUrl) throw new ConfigError('TRIAD_STORE=postgres needs TRIAD_PG_URL');
      return openPostgresStorage(config.pgUrl, options);
    case 'memory':
      return memoryStorage(options);
    case 'esdb':
      if (!config.esdbUrl) throw new ConfigError('TRIAD_STORE=esdb needs TRIAD_ESDB_URL');
      return openEsdbStorage(config.esdbUrl, options);
  }
}

interface Stores {
  events: EventStore;
  checkpoints: CheckpointStore;
  leases: RunLeases;
  decisions: DecisionRecordRepository;
  live?: LiveChannel;
  webhooks?: WebhookStore;
}

function storage(kind: StorageKind, stores: Stores, closeConnection: () => unknown): Storage {
  let closing: Promise<void> | undefined;
  const close = () =>
    closeInOrder([
      () => stores.live?.close(),
      () => stores.checkpoints.close(),
      () => stores.leases.close(),
      () => stores.decisions.close(),
      () => stores.webhooks?.close(),
      () => stores.events.close(),
      closeConnection,
    ]);
  return { kind, ...stores, close: () => (closing ??= close()) };
}

async function closeInOrder(steps: Array<() => unknown>): Promise<void> {
  let failure: { error: unknown } | undefined;
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      failure ??= { error };
    }
  }
  if (failure) throw failure.error;
}

async function openSqliteStorage(file: string, options: StorageOptions): Promise<Storage> {
  const db = openSqliteDatabase(file);
  const opened: Array<{ close(): Promise<void> }> = [];
  try {
    const events = new SqliteEventStore({ db, upcasters: options.upcasters, maxEventBytes: options.maxEventBytes, health: options.health });
    opened.push(events);
    const checkpoints = new SqliteCheckpointStore(db);
    opened.push(checkpoints);
    const leases = new SqliteRunLeases(db);
    const decisions = new SqliteDecisionRecordRepository(db);
    const webhooks = new SqliteWebhookStore(db);
    return storage('sqlite', { events, checkpoints, leases, decisions, webhooks }, () => db.close());
  } catch (err) {
    // The opening error is the one to report (rethrown below); closing what was opened is best effort.
    await closeInOrder([...opened.reverse().map((s) => () => s.close()), () => db.close()]).catch(() => undefined);
    throw err;
  }
}

async function openPostgresStorage(url: string, options: StorageOptions): Promise<Storage> {
  const pool = openPostgresPool({ url, poolSize: options.pgPoolSize, health: options.health });
  let events: PostgresEventStore | undefined;
  try {
    // Each brings its tables up to date here, once: the events' and the decision log's migrations
    // (under advisory locks, so processes starting together do not race); checkpoints and leases
    // create theirs when missing (looked up first, so a role that may not create them is not refused).
    events = await PostgresEventStore.open(pool, {
      url,
      schema: options.pgSchema,
      health: options.health,
      upcasters: options.upcasters,
      maxEventBytes: options.maxEventBytes,
    });
    const decisions = await PostgresDecisionRecordRepository.open(pool, events.schema);
    const checkpoints = new PostgresCheckpointStore(pool, events.schema);
    const leases = new PostgresRunLeases(pool, events.schema, options.logger);
    // Every table is there once the storage is open: a deployment set up by opening it once as the
    // owning role then serves under a role that may only read and write them.
    await checkpoints.ensureTables();
    await leases.ensureTables();
    const webhooks = new PostgresWebhookStore(pool, events.schema, options.logger);
    await webhooks.ensureTables();
    const live = new PostgresLiveChannel(pool, url, events.schema);
    return storage('postgres', { events, checkpoints, leases, decisions, live, webhooks }, () => pool.end());
  } catch (err) {
    // The opening error is the one to report (rethrown below); closing what was opened is best effort.
    await closeInOrder([() => events?.close(), () => pool.end()]).catch(() => undefined);
    throw err;
  }
}

/**
 * One client connection for every store. Opening reads the head of `$all` once, so a server that
 * is not there (or refuses the credentials) fails here, in one line naming the store and the cause.
 */
async function openEsdbStorage(url: string, options: StorageOptions): Promise<Storage> {
  // The EventStoreDB client (gRPC, protobuf) is loaded only for this store: others start without it.
  const { EsdbAccessError, EsdbConnection, redactEsdbUrl } = await import('../events/esdb.client');
  let conn: EsdbConnection;
  try {
    conn = new EsdbConnection(url);
  } catch (err) {
    throw new ConfigError(`TRIAD_ESDB_URL is not an EventStoreDB connection string (${redactEsdbUrl(url)}): ${(err as Error).message}`);
  }
  const namespace = options.esdbNamespace ?? 'triad';
  const events = new EsdbEventStore(conn, { namespace, health: options.health, upcasters: options.upcasters, maxEventBytes: options.maxEventBytes });
  try {
    await events.headPosition();
  } catch (err) {
    // The store did not answer (rethrown below): a close that fails too adds nothing.
    await conn.close().catch(() => undefined);
    const why = err instanceof EsdbAccessError ? err.message : isStoreUnavailable(err) ? 'not reachable' : (err as Error).message;
    // The cause stays attached: `triad serve` waits for a store that is not reachable (isStoreUnavailable).
    throw new Error(`EventStoreDB at ${redactEsdbUrl(url)}: ${why}`, { cause: err });
  }
  return storage(
    'esdb',
    {
      events,
      checkpoints: new EsdbCheckpointStore(conn, namespace),
      leases: new EsdbRunLeases(conn, namespace),
      decisions: new EsdbDecisionRecordRepository(conn, namespace),
      live: new EsdbLiveChannel(conn, namespace),
    },
    () => conn.close(),
  );
}

function memoryStorage(options: StorageOptions): Storage {
  const events = new InMemoryEventStore({ upcasters: options.upcasters, maxEventBytes: options.maxEventBytes });
  return storage(
    'memory',
    { events, checkpoints: new InMemoryCheckpointStore(), leases: new InMemoryRunLeases(), decisions: new InMemoryDecisionRecordRepository(), webhooks: new InMemoryWebhookStore() },
    () => undefined,
  );
}
