import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { EventIdConflictError } from '../../../src/events/errors';
import type { RecordedEvent } from '../../../src/events/event-store/event-store.port';
import { POSTGRES_SCHEMA_VERSION } from '../../../src/events/postgres.database';
import { Client } from 'pg';
import { PostgresEventStore } from '../../../src/events/event-store/postgres.event-store';
import { postgresEventsChannel } from '../../../src/events/postgres.listener';
import { eventStoreContract } from './event-store.contract';
import { dropSchema, freshSchema, PG_URL, withClient } from '../../support/pg';
import { waitFor } from '../../support/wait-for';

describe('postgres reachability', () => {
  it(`PostgreSQL answers at TRIAD_PG_URL (${PG_URL.replace(/:[^:@/]*@/, ':***@')})`, async () => {
    const { rows } = await withClient((c) => c.query<{ ok: number }>('SELECT 1 AS ok'));
    expect(rows[0].ok).toBe(1);
  });
});

eventStoreContract(
  'postgres',
  () => {
    const schema = freshSchema('triad_test');
    return {
      open: (o) => PostgresEventStore.connect({ url: PG_URL, schema, ...o }),
      reopen: (o) => PostgresEventStore.connect({ url: PG_URL, schema, ...o }),
      cleanup: () => dropSchema(schema).then(() => undefined),
    };
  },
  { manyWritersEvents: 5000, concurrentAppenders: 16 },
);

describe('postgres store specifics', () => {
  let schema: string;
  const opened: PostgresEventStore[] = [];
  const connect = async () => {
    const store = await PostgresEventStore.connect({ url: PG_URL, schema });
    opened.push(store);
    return store;
  };

  beforeEach(() => {
    schema = freshSchema('triad_test');
  });

  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
    await dropSchema(schema);
  });

  it('migrations run concurrently by several connects apply once, in order', async () => {
    const stores = await Promise.all(Array.from({ length: 6 }, () => connect()));
    const { rows } = await withClient((c) => c.query<{ version: number }>(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`));
    expect(rows.map((r) => r.version)).toEqual(Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1));
    await stores[0].append('m', [{ type: 'A', data: {} }]);
    expect(await stores[5].streamRevision('m')).toBe(0);
  });

  it('refuses a schema newer than this build', async () => {
    await (await connect()).close();
    await withClient((c) => c.query(`INSERT INTO "${schema}".schema_migrations (version, applied_at) VALUES (99, now())`));
    await expect(PostgresEventStore.connect({ url: PG_URL, schema })).rejects.toThrow(/newer than this triad/);
  });

  it('stores the exact canonical JSON text, so content hashes compare byte for byte', async () => {
    const store = await connect();
    await store.append('json', [{ type: 'A', data: { b: 2, a: [1, 'x'] } }]);
    const { rows } = await withClient((c) => c.query<{ data: string }>(`SELECT data FROM "${schema}".events`));
    expect(rows[0].data).toBe('{"a":[1,"x"],"b":2}');
  });

  it('the same ids appended concurrently to two streams: one wins, the other is refused', async () => {
    const store = await connect();
    for (let round = 0; round < 10; round++) {
      const batch = [
        { id: randomUUID(), type: 'A', data: { round } },
        { id: randomUUID(), type: 'B', data: { round } },
      ];
      const results = await Promise.allSettled([store.append(`left-${round}`, batch), store.append(`right-${round}`, batch)]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(EventIdConflictError);
    }
    const all = await store.readAll();
    expect(all.map((e) => e.position)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('the same batch appended concurrently to one stream is written once and both get its result', async () => {
    const store = await connect();
    const batch = [{ id: randomUUID(), type: 'A', data: {} }];
    const results = await Promise.all([store.append('twice', batch), store.append('twice', batch), store.append('twice', batch)]);
    expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1);
    expect(await store.readAll()).toHaveLength(1);
  });

  it('an append from another connection wakes a waiting subscriber through LISTEN/NOTIFY, not polling', async () => {
    const writer = await connect();
    const follower = await connect();
    const started = Date.now();
    // Woken well before the wait's own 20 s end: a loaded machine may take seconds, not that long.
    // connect() returns LISTENing, and the wait is registered when called: the append cannot come first.
    const woken = follower.waitForEvents(0, 20_000).then(() => Date.now() - started);
    await writer.append('wake', [{ type: 'A', data: {} }]);
    expect(await woken).toBeLessThan(15_000);
  });

  it('a burst of appends is told to other processes in a few notifications, the last carrying the head', async () => {
    const writer = await connect();
    const listener = new Client({ connectionString: PG_URL });
    await listener.connect();
    try {
      const told: number[] = [];
      let headTold: () => void = () => undefined;
      let head = -1;
      listener.on('notification', (m) => {
        told.push(Number(m.payload));
        if (Number(m.payload) === head) headTold();
      });
      await listener.query(`LISTEN ${postgresEventsChannel(schema)}`);
      const started = performance.now();
      const results = await Promise.all(Array.from({ length: 60 }, (_, i) => writer.append(`burst-${i}`, [{ type: 'A', data: { i } }])));
      head = Math.max(...results.map((r) => r.position));
      const elapsedMs = performance.now() - started;
      if (!told.includes(head)) await new Promise<void>((resolve) => (headTold = resolve));
      expect(head).toBe(60);
      // One at the start, then at most one per 10 ms window while appends commit, one trailing.
      expect(told.length).toBeLessThanOrEqual(2 + Math.ceil(elapsedMs / 10));
      expect(told.length).toBeLessThan(60);
    } finally {
      await listener.end();
    }
  });

  it('appenders in several processes: each event seen once, in position order, positions 1..N, revisions contiguous', async () => {
    const store = await connect();
    const processes = 3;
    const appendsPerProcess = 400;
    const streams = ['shared-0', 'shared-1', 'shared-2', 'shared-3', 'shared-4'];
    const seen: RecordedEvent[] = [];
    const sub = store.subscribe({ batchSize: 100 });
    const reader = (async () => {
      for await (const e of sub) seen.push(e);
    })();

    const written = await Promise.all(
      Array.from({ length: processes }, (_, p) =>
        runChild(join(__dirname, '..', '..', 'support', 'pg-appender.js'), {
          TRIAD_PG_URL: PG_URL,
          PG_SCHEMA: schema,
          WRITER: `writer${'x'.repeat(p)}`,
          APPENDS: String(appendsPerProcess),
          STREAMS: streams.join(','),
        }),
      ),
    );
    const ids = new Set(written.flat());
    expect(ids.size).toBe(written.flat().length);

    await waitFor('every appended event', () => seen.length >= ids.size, 20_000, 20);
    // A last event as a barrier: the subscription delivers in position order, so a repeat of any
    // event above would come before it.
    await store.append('barrier', [{ type: 'Barrier', data: {} }]);
    await waitFor('the barrier', () => seen.at(-1)?.streamId === 'barrier', 20_000, 20);
    sub.close();
    await reader;
    seen.pop();

    expect(seen.length).toBe(ids.size);
    expect(new Set(seen.map((e) => e.id))).toEqual(ids);
    expect(seen.map((e) => e.position)).toEqual(Array.from({ length: ids.size }, (_, i) => i + 1));
    const next = new Map<string, number>();
    for (const e of seen) {
      expect(e.revision).toBe(next.get(e.streamId) ?? 0);
      next.set(e.streamId, e.revision + 1);
    }
    expect((await store.readAll()).map((e) => e.id).slice(0, -1)).toEqual(seen.map((e) => e.id));
  }, 60_000);
});

/** Runs a child node script to completion; resolves with its stdout lines. */
function runChild(script: string, env: Record<string, string>): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(out.split('\n').filter(Boolean));
      else reject(new Error(`${script} exited with ${code}: ${err}`));
    });
  });
}
