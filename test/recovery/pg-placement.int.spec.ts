import { join } from 'node:path';
import { Client } from 'pg';
import { PostgresEventStore } from '../../src/events/event-store/postgres.event-store';
import type { DriverClaimedData } from '../../src/team/domain/run-events';
import type { LaunchRunInput } from '../../src/team/commands/launch';
import { followRunEvents } from '../support/e2e-app';
import { connectAdmin, PG_URL } from '../support/pg';
import { tempDir } from '../support/temp-dir';
import { killHard, runEvents, spawnChild, waitFor, type Child } from './crash-support';

// Two serving processes on one PostgreSQL schema, each with a data directory of its own. The
// launching process A may drive one run at a time (TRIAD_MAX_ACTIVE_RUNS=1): its second launch is
// placed on B. An SSE client on A follows the run B drives and gets its live model text (never
// stored: relayed over LISTEN/NOTIFY). Every event names the process that wrote it. Fails (never
// skips) without PostgreSQL.

jest.setTimeout(90_000);

const KEY = 'op-secret-0123456789';
const schema = `triad_placement_${process.pid}_${Date.now().toString(36)}`;
const launch = (goal: string): LaunchRunInput => ({ goal, acceptanceCriteria: ['file alpha.txt contains "alpha"', 'file beta.txt exists'] });

let admin: Client;

beforeAll(async () => {
  admin = await connectAdmin();
});

afterAll(async () => {
  await admin?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
  await admin?.query(`DROP SCHEMA IF EXISTS "${schema}_q" CASCADE`).catch(() => undefined);
  await admin?.end().catch(() => undefined);
});

describe('placement and live text across processes sharing PostgreSQL', () => {
  it('a launch beyond the cap goes to the other process; an SSE client on the launcher gets its deltas; events name their writer', async () => {
    const dir = tempDir('triad-pg-placement-');
    const env = {
      TRIAD_STORE: 'postgres',
      TRIAD_PG_URL: PG_URL,
      TRIAD_PG_SCHEMA: schema,
      TRIAD_LEASE_TTL_MS: '4000',
      TRIAD_RECOVERY_INTERVAL_MS: '0',
      TRIAD_API_KEYS: `ops:operator:${KEY}`,
      CRASH_MODE: 'http',
    };
    const children: Child[] = [];
    let store: PostgresEventStore | undefined;
    try {
      // Both advertise before they say they are ready, so A sees B's advert when it places. A's
      // model stops answering after two calls a run: A's own run stays in flight, A at its cap,
      // whatever the machine's load.
      const b = spawnChild({ ...env, TRIAD_DATA_DIR: join(dir.path, 'b'), CRASH_LATENCY_MS: '30-60' });
      const a = spawnChild({ ...env, TRIAD_DATA_DIR: join(dir.path, 'a'), TRIAD_MAX_ACTIVE_RUNS: '1', CRASH_PAUSE_AFTER: '2', CRASH_LATENCY_MS: '5-10' });
      children.push(a, b);
      const [infoA, infoB] = await Promise.all([a.ready, b.ready]);
      store = await PostgresEventStore.connect({ url: PG_URL, schema, poolSize: 2 });

      const post = async (input: LaunchRunInput) => {
        const res = await fetch(`http://127.0.0.1:${infoA.port}/v1/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
          body: JSON.stringify(input),
        });
        expect(res.status).toBe(202);
        return ((await res.json()) as { runId: string }).runId;
      };
      const first = await post(launch('kept by the launcher'));
      const second = await post(launch('placed on the other process'));
      // A follows the run it does not drive.
      const sse = followRunEvents(`http://127.0.0.1:${infoA.port!}`, second, KEY);

      const claimedBy = async (runId: string) =>
        ((await runEvents(store!, runId)).find((e) => e.type === 'DriverClaimed')?.data as DriverClaimedData | undefined)?.owner;
      await waitFor('both runs claimed', async () => (await claimedBy(first)) && (await claimedBy(second)), 30_000);
      expect({ first: await claimedBy(first), second: await claimedBy(second) }).toEqual({ first: infoA.owner, second: infoB.owner });
      const metrics = await (await fetch(`http://127.0.0.1:${infoA.port}/metrics`)).text();
      expect(metrics).toContain('triad_runs_placed_total{placement="take"} 1');
      expect(metrics).toContain('triad_runs_placed_total{placement="hand"} 1');
      expect(metrics).toContain('triad_max_active_runs 1');

      await waitFor('the placed run at the human gate, streamed to the client on A', async () => sse.seen.events.includes('RunEnded') || sse.seen.events.includes('ReviewOpened'), 45_000);
      await waitFor('live text from B on A', async () => sse.seen.deltas.length > 0, 10_000);
      expect(sse.seen.status).toBe(200);
      sse.close();
      await sse.done;

      // Every event names its writer: the launch the launcher, the drive the process that drove it.
      const events = await runEvents(store, second);
      expect(events[0]).toMatchObject({ type: 'RunLaunched', metadata: { process: infoA.owner } });
      const claim = events.findIndex((e) => e.type === 'DriverClaimed');
      expect(new Set(events.slice(claim).map((e) => e.metadata.process))).toEqual(new Set([infoB.owner]));
      expect((await runEvents(store, first)).every((e) => e.metadata.process === infoA.owner)).toBe(true);
      for (const c of children) expect(c.stderr).not.toMatch(/stopped on an error/);
    } catch (err) {
      for (const [i, c] of children.entries()) process.stderr.write(`--- child ${i} stderr ---\n${c.stderr.slice(-4000)}\n`);
      throw err;
    } finally {
      for (const c of children) await killHard(c);
      await store?.close();
      dir.remove();
    }
  });

  it('with every process at its cap, a launch waits queued and starts when a driver stops there', async () => {
    const dir = tempDir('triad-pg-queued-');
    const queuedSchema = `${schema}_q`;
    // Alone, one run at a time; recovery scans only at start and when a slot frees (no interval).
    // The first run's first model call takes 2 s, so it is certainly in flight at the second launch.
    const c = spawnChild({
      TRIAD_STORE: 'postgres',
      TRIAD_PG_URL: PG_URL,
      TRIAD_PG_SCHEMA: queuedSchema,
      TRIAD_DATA_DIR: join(dir.path, 'c'),
      TRIAD_LEASE_TTL_MS: '4000',
      TRIAD_RECOVERY_INTERVAL_MS: '0',
      TRIAD_MAX_ACTIVE_RUNS: '1',
      TRIAD_API_KEYS: `ops:operator:${KEY}`,
      CRASH_MODE: 'http',
      CRASH_LATENCY_MS: '5-10',
      // The offline model serves its own model only: every run's first call is the slow one.
      CRASH_SLOW_MODELS: 'triad-offline-1=2000',
    });
    let store: PostgresEventStore | undefined;
    try {
      const { port, owner } = await c.ready;
      store = await PostgresEventStore.connect({ url: PG_URL, schema: queuedSchema, poolSize: 2 });
      const post = async (input: LaunchRunInput) => {
        const res = await fetch(`http://127.0.0.1:${port}/v1/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
          body: JSON.stringify(input),
        });
        expect(res.status).toBe(202);
        return ((await res.json()) as { runId: string }).runId;
      };
      const first = await post(launch('first, slow to plan'));
      const second = await post(launch('second, queued'));
      const gate = async (runId: string) => (await runEvents(store!, runId)).find((e) => e.type === 'ReviewOpened');
      await waitFor('both runs at the human gate', async () => (await gate(first)) && (await gate(second)), 60_000);
      // The second run was claimed only after the first one's driver stopped at its gate.
      const claimOfSecond = (await runEvents(store, second)).find((e) => e.type === 'DriverClaimed')!;
      expect(claimOfSecond.metadata.process).toBe(owner);
      expect(claimOfSecond.position).toBeGreaterThan((await gate(first))!.position);
    } catch (err) {
      process.stderr.write(`--- child stderr ---\n${c.stderr.slice(-4000)}\n`);
      throw err;
    } finally {
      await killHard(c);
      await store?.close();
      dir.remove();
    }
  });
});
