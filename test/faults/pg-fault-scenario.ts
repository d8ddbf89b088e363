import { join } from 'node:path';
import { PostgresEventStore } from '../../src/events/event-store/postgres.event-store';
import type { DriverClaimedData } from '../../src/team/domain/run-events';
import { dropSchema, freshSchema, PG_URL, withClient } from '../support/pg';
import { TcpProxy } from '../support/tcp-proxy';
import { tempDir } from '../support/temp-dir';
import { http, IN_FLIGHT, launchRuns, startServe, statuses, stopServe, streamFaults, waitFor, type Serve } from './serve-support';

// The harness of the store-fault scenarios (one spec file each, so they run side by side).
// A real `triad serve` on PostgreSQL, reached through a TCP proxy, with 30 runs in flight: the
// line to the database is cut (1 s, 15 s), or the process is frozen (SIGSTOP, 25 s). Every run
// must finish, no model turn may be recorded twice, no run may change drivers, and /health must
// say 503 while the store is away and 200 once it is back. Fails (never skips) without PostgreSQL.

const RUNS = 30;
const pg = new URL(PG_URL);

interface Scenario {
  serve: Serve;
  proxy: TcpProxy;
  runIds: string[];
}

export async function withScenario(name: string, fault: (s: Scenario) => Promise<void>): Promise<void> {
  const schema = freshSchema('triad_faults');
  const dir = tempDir('triad-faults-');
  const proxy = await TcpProxy.start({ host: pg.hostname, port: Number(pg.port || 5432) });
  const viaProxy = new URL(PG_URL);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  let serve: Serve | undefined;
  let store: PostgresEventStore | undefined;
  try {
    await withClient((c) => c.query('SELECT 1'));
    serve = await startServe({
      TRIAD_STORE: 'postgres',
      TRIAD_PG_URL: viaProxy.toString(),
      TRIAD_PG_SCHEMA: schema,
      TRIAD_DATA_DIR: join(dir.path, 'data'),
      // Slow enough that 30 runs are still in flight when the fault hits.
      TRIAD_OFFLINE_LATENCY_MS: '150',
      TRIAD_RECOVERY_INTERVAL_MS: '500',
    });
    const runIds = await launchRuns(serve, RUNS, name);
    await waitFor(
      'every run to be driven',
      async () => {
        const s = await statuses(serve!, runIds);
        return s && s.size === RUNS && [...s.values()].every((st) => IN_FLIGHT.has(st) && st !== 'queued');
      },
      60_000,
    );
    const ready = await statuses(serve, runIds);
    // The fault hits while the runs are in flight, not after they ended.
    expect([...ready!.values()].filter((st) => IN_FLIGHT.has(st))).toHaveLength(RUNS);

    await fault({ serve, proxy, runIds });

    const healthy = await waitFor('/health to answer 200', async () => (await http(serve!, 'GET', '/health')).status === 200, 60_000);
    expect(healthy).toBe(true);
    await waitFor(
      'every run to reach the human gate',
      async () => {
        const s = await statuses(serve!, runIds);
        return s && [...s.values()].every((st) => st === 'awaiting_review');
      },
      120_000,
      250,
    );
    expect((await http(serve, 'GET', '/v1/reviews')).status).toBe(200);

    store = await PostgresEventStore.connect({ url: PG_URL, schema, poolSize: 2 });
    const owners = new Set<string>();
    for (const runId of runIds) {
      const events = await store.readStream(`run-${runId}`);
      expect({ runId, faults: streamFaults(runId, events) }).toEqual({ runId, faults: [] });
      const claims = events.filter((e) => e.type === 'DriverClaimed').map((e) => (e.data as DriverClaimedData).owner);
      // One process drove each run from start to end: one claim, never taken over.
      expect({ runId, claims: claims.length }).toEqual({ runId, claims: 1 });
      owners.add(claims[0]);
    }
    expect(owners.size).toBe(1);
    expect(serve.stderr).not.toMatch(/stopped on an error/);
    const metrics = await http<string>(serve, 'GET', '/metrics');
    expect(metrics.body).toMatch(/triad_leases_lost_total 0/);
  } catch (err) {
    if (serve) process.stderr.write(`--- triad serve stderr (last 6000) ---\n${serve.stderr.slice(-6000)}\n`);
    throw err;
  } finally {
    await stopServe(serve);
    await store?.close();
    await proxy.close();
    await dropSchema(schema).catch(() => undefined);
    dir.remove();
  }
}

/** Cuts the line for at least `ms`, and until /health has said 503 `degraded`; then restores it. */
export async function cutLine({ serve, proxy }: Scenario, ms: number): Promise<void> {
  const cutAt = Date.now();
  proxy.cut();
  const degraded = await waitFor(
    '/health to answer 503 during the cut',
    async () => {
      const res = await http<{ status: string; reason: string }>(serve, 'GET', '/health');
      return res.status === 503 && res.body;
    },
    30_000,
    50,
  );
  expect(degraded).toMatchObject({ status: 'degraded', reason: expect.stringContaining('not reachable') });
  // Reads of the runs fail with a 503 and a generic message, never a 500 or a database message.
  const list = await http<{ statusCode: number; message: string }>(serve, 'GET', '/v1/runs');
  if (list.status !== 200) expect(list).toMatchObject({ status: 503, body: { statusCode: 503, message: expect.not.stringMatching(/ECONN|terminated|pg|postgres/i) } });
  await waitFor('the cut to last its time', async () => Date.now() - cutAt >= ms, ms + 1000, 50);
  proxy.restore();
}
