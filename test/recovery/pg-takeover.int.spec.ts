import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Pool } from 'pg';
import { takeCheckpoint } from '../../src/checkpoint/checkpoint';
import { PostgresCheckpointStore } from '../../src/checkpoint/postgres.checkpoint-store';
import { PostgresEventStore } from '../../src/events/event-store/postgres.event-store';
import type { DriverClaimedData } from '../../src/team/domain/run-events';
import { initialRunState } from '../../src/team/domain/run-state';
import { PostgresRunLeases } from '../../src/team/leases/postgres.run-leases';
import type { LaunchRunInput } from '../../src/team/commands/launch';
import { tempDir } from '../support/temp-dir';
import {
  duplicates,
  jsonLines,
  killHard,
  runEvents,
  spawnChild,
  statusOf,
  terminate,
  waitFor,
  type Child,
  type EventLine,
  type ModelCallLine,
} from './crash-support';
import { connectAdmin, PG_URL } from '../support/pg';

// Two triad processes sharing one PostgreSQL database, both running recovery. One is killed with
// SIGKILL; the other takes its runs over, but only once their leases have expired, and never
// drives a run while the first still holds it. This suite fails (it does not skip) without PostgreSQL.

jest.setTimeout(90_000);

const TTL_MS = 2000;
const CRITERIA = ['file alpha.txt contains "alpha"', 'file beta.txt contains "beta"', 'file gamma.txt exists', 'file delta.txt exists'];
const launches = (prefix: string, n: number): LaunchRunInput[] =>
  Array.from({ length: n }, (_, i) => ({ goal: `${prefix} run ${i}`, acceptanceCriteria: CRITERIA }));

const schema = `triad_takeover_${process.pid}_${Date.now().toString(36)}`;
let admin: Client;

beforeAll(async () => {
  admin = await connectAdmin();
});

afterAll(async () => {
  await admin?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
  await admin?.end().catch(() => undefined);
});

describe('PostgreSQL leases and checkpoints under concurrent first use', () => {
  it('two processes creating the lease and checkpoint tables at once both succeed; one lease holder', async () => {
    const fresh = `${schema}_tables`;
    await admin.query(`CREATE SCHEMA "${fresh}"`);
    const pools = [new Pool({ connectionString: PG_URL, max: 2 }), new Pool({ connectionString: PG_URL, max: 2 })];
    try {
      await Promise.all(pools.map((p) => p.query('SELECT 1')));
      const leases = pools.map((p) => new PostgresRunLeases(p, fresh));
      const acquired = await Promise.all(leases.map((l, i) => l.tryAcquire('run_x', `owner-${i}`, 10_000, Date.now())));
      expect(acquired.filter(Boolean)).toHaveLength(1);
      const checkpoints = pools.map((p) => new PostgresCheckpointStore(p, fresh));
      const cp = takeCheckpoint({ ...initialRunState('run_x') }, 'manual', new Date());
      await Promise.all(checkpoints.map((c) => c.save(cp)));
      expect(await checkpoints[0].latest('run_x')).toEqual(cp);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
      await admin.query(`DROP SCHEMA "${fresh}" CASCADE`);
    }
  });
});

describe('kill -9 one of two processes sharing PostgreSQL', () => {
  it("the survivor takes over the dead process's runs only after their leases expired, never interleaved, and all runs finish", async () => {
    const dir = tempDir('triad-pg-takeover-');
    const callsLog = join(dir.path, 'calls.log');
    const eventsLog = join(dir.path, 'events.log');
    // The workspaces are files, not events: processes that take over each other's runs share them
    // (one data directory here; a shared volume across hosts).
    const dataDir = join(dir.path, 'shared');
    const env = {
      TRIAD_DATA_DIR: dataDir,
      TRIAD_STORE: 'postgres',
      TRIAD_PG_URL: PG_URL,
      TRIAD_PG_SCHEMA: schema,
      TRIAD_LEASE_TTL_MS: String(TTL_MS),
      TRIAD_RECOVERY_INTERVAL_MS: '100',
      TRIAD_CHECKPOINT_EVERY_TURNS: '4',
      CRASH_LATENCY_MS: '20-50',
      CRASH_CALLS_LOG: callsLog,
      CRASH_EVENTS_LOG: eventsLog,
    };
    const children: Child[] = [];
    let store: PostgresEventStore | undefined;
    try {
      // A launches three runs and drives them; B starts once A holds their leases, launches two
      // runs of its own, and runs recovery like A. (Concurrent first use of a fresh schema is the
      // test above.) Either may pick up the other's run in the moment between launch and lease.
      // A's model stops answering after four calls a run, so that its runs are certainly still in
      // progress, their leases held and renewed, when A is killed, however slowly B starts.
      const a = spawnChild({ ...env, CRASH_PAUSE_AFTER: '4', CRASH_LAUNCH: JSON.stringify(launches('A', 3)) });
      children.push(a);
      const infoA = await a.ready;
      const b = spawnChild({ ...env, CRASH_LAUNCH: JSON.stringify(launches('B', 2)) });
      children.push(b);
      const infoB = await b.ready;
      store = await PostgresEventStore.connect({ url: PG_URL, schema, poolSize: 2 });
      const all = [...infoA.launched, ...infoB.launched];

      // Let both get into their runs, then kill A.
      await waitFor(
        'three recorded turns in every run',
        async () => (await Promise.all(all.map((id) => runEvents(store!, id)))).every((ev) => ev.filter((e) => e.type === 'ModelCallCompleted').length >= 3),
        30_000,
        20,
      );
      await killHard(a);
      const killedAt = Date.now();
      // A can no longer renew: the leases it holds expire at the time they show now.
      const { rows } = await admin.query<{ run_id: string; owner: string; expires_at: string }>(`SELECT run_id, owner, expires_at FROM "${schema}".run_leases`);
      const expiryOfA = new Map(rows.filter((r) => r.owner === infoA.owner).map((r) => [r.run_id, Number(r.expires_at)]));
      // Every run is leased by one of the two (B may have picked one of A's runs up between its
      // launch and A's claim, as said above), or B has already driven it to the gate; A held
      // some, which B must now take over.
      for (const id of all) {
        const owner = rows.find((r) => r.run_id === id)?.owner;
        const held = owner ?? ((await statusOf(store, id)) === 'awaiting_review' ? `${infoB.owner}, released at the gate` : 'nobody');
        expect([infoA.owner, infoB.owner, `${infoB.owner}, released at the gate`]).toContain(held);
      }
      const takenOver = all.filter((id) => expiryOfA.has(id));
      const keptByB = all.filter((id) => !expiryOfA.has(id));
      expect(takenOver.length).toBeGreaterThan(0);
      for (const id of keptByB) expect(rows.find((r) => r.run_id === id)?.owner ?? infoB.owner).toBe(infoB.owner);

      await waitFor('every run to reach the human gate', async () => (await Promise.all(all.map((id) => statusOf(store!, id)))).every((s) => s === 'awaiting_review'), 45_000);
      expect((await terminate(b)).code).toBe(0);

      const written = jsonLines<EventLine>(eventsLog);
      const calls = jsonLines<ModelCallLine>(callsLog).filter((c) => !c.aborted);
      for (const runId of takenOver) {
        const events = await runEvents(store, runId);
        const claims = events.filter((e) => e.type === 'DriverClaimed');
        expect(claims.map((e) => (e.data as DriverClaimedData).owner)).toEqual([infoA.owner, infoB.owner]);
        const takeover = claims[1];
        const claimedAt = Date.parse((takeover.data as DriverClaimedData).at);
        // Only after A's lease expired...
        expect(claimedAt).toBeGreaterThanOrEqual(expiryOfA.get(runId)!);
        expect(claimedAt).toBeGreaterThan(killedAt);
        // ...which, with a heartbeat every TTL/3, is at least 2/3 of the TTL after A's last event.
        const lastOfA = Math.max(...events.filter((e) => e.revision < takeover.revision).map((e) => Date.parse(e.recordedAt)));
        expect(claimedAt - lastOfA).toBeGreaterThanOrEqual((2 * TTL_MS) / 3 - 100);
        // B made no model call for the run before then.
        expect(calls.filter((c) => c.runId === runId && c.pid === infoB.pid && c.t < expiryOfA.get(runId)!)).toEqual([]);
        // No interleaving: up to the takeover only A wrote, after it only B.
        const byRevision = new Map(written.filter((w) => w.runId === runId).map((w) => [w.revision, w]));
        for (const e of events) {
          const w = byRevision.get(e.revision);
          if (e.revision < takeover.revision) {
            if (w) expect({ revision: e.revision, owner: w.owner, id: w.id }).toEqual({ revision: e.revision, owner: infoA.owner, id: e.id });
          } else {
            expect({ revision: e.revision, owner: w?.owner, id: w?.id }).toEqual({ revision: e.revision, owner: infoB.owner, id: e.id });
          }
        }
        expect(duplicates(events)).toEqual({ modelCalls: [], toolCalls: [] });
      }
      for (const runId of all) {
        const ws = join(dataDir, 'workspaces', runId);
        expect(readFileSync(join(ws, 'alpha.txt'), 'utf8')).toContain('alpha');
        expect(readFileSync(join(ws, 'beta.txt'), 'utf8')).toContain('beta');
        expect(existsSync(join(ws, 'gamma.txt')) && existsSync(join(ws, 'delta.txt'))).toBe(true);
      }
      for (const runId of keptByB) {
        const events = await runEvents(store, runId);
        expect(events.filter((e) => e.type === 'DriverClaimed').map((e) => (e.data as DriverClaimedData).owner)).toEqual([infoB.owner]);
        expect(written.filter((w) => w.runId === runId && w.owner !== infoB.owner)).toEqual([]);
        expect(duplicates(events)).toEqual({ modelCalls: [], toolCalls: [] });
      }
      for (const c of children) expect(c.stderr).not.toMatch(/stopped on an error|lease renewal failed/);
    } catch (err) {
      for (const [i, c] of children.entries()) process.stderr.write(`--- child ${i} stdout ---\n${c.stdout.slice(-4000)}\n--- child ${i} stderr ---\n${c.stderr}\n`);
      if (store) {
        const { rows } = await admin.query(`SELECT run_id, owner, expires_at FROM "${schema}".run_leases`).catch(() => ({ rows: [] }));
        process.stderr.write(`leases at ${Date.now()}: ${JSON.stringify(rows)}\n`);
        for (const line of jsonLines<EventLine>(eventsLog).slice(-5)) process.stderr.write(`last written: ${JSON.stringify(line)}\n`);
        const { rows: runs } = await admin.query(`SELECT stream_id, max(revision) AS head, (array_agg(type ORDER BY revision DESC))[1:4] AS last FROM "${schema}".events GROUP BY stream_id`).catch(() => ({ rows: [] }));
        process.stderr.write(`streams: ${JSON.stringify(runs)}\n`);
      }
      throw err;
    } finally {
      for (const c of children) await killHard(c);
      await store?.close();
      dir.remove();
    }
  });
});
