import { join } from 'node:path';
import { Client } from 'pg';
import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import { PostgresEventStore } from '../../src/events/event-store/postgres.event-store';
import { toRunStreamId, type DriverClaimedData } from '../../src/team/domain/run-events';
import type { LaunchRunInput } from '../../src/team/commands/launch';
import { workspaceAt } from '../../src/team/workspace/workspace-effects';
import { snapshotWorkspace } from '../../src/team/workspace/workspace-log';
import { followRunEvents } from '../support/e2e-app';
import { spawnHttpServer, type ServerChild } from '../support/http-server-child';
import { connectAdmin, PG_URL } from '../support/pg';
import { tempDir } from '../support/temp-dir';
import { completionsByCallKey, duplicates, runEvents, waitFor } from './crash-support';

// Three serving processes (the app as `triad serve` builds it, the offline model with a latency per
// call), each with a data directory of its own, on one PostgreSQL schema. RUNS runs that write files
// are launched, a third on each process; one process is killed with SIGKILL while its runs are in
// flight. The two others take its runs over once their leases expire, rebuilding each run's
// workspace from the log (no directory is shared). An SSE client on a process that does not drive a
// run gets its live text. Fails (never skips) without PostgreSQL.

jest.setTimeout(240_000);

// 60 runs of about ten model calls each (TRIAD_PG_THREE_RUNS to change it).
const RUNS = Number(process.env.TRIAD_PG_THREE_RUNS ?? 60);
// Long enough that a live process stalled by a loaded machine keeps its leases; a takeover waits for it.
const TTL_MS = 5000;
const LATENCY_MS = 150;
const KEY = 'op-secret-0123456789';
const schema = `triad_three_${process.pid}_${Date.now().toString(36)}`;
// The same input for every run: the offline model is a pure function of the conversation, so every
// run, interrupted or not, must leave the same files. The executor writes one; a sub-agent the other.
const INPUT: LaunchRunInput = { goal: 'Write two files', acceptanceCriteria: ['file alpha.txt contains "alpha"', 'delegate to a coder: file beta.txt contains "beta"'] };

let admin: Client;

beforeAll(async () => {
  admin = await connectAdmin();
});

afterAll(async () => {
  await admin?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
  await admin?.end().catch(() => undefined);
});

const claimsOf = (events: RecordedEvent[]) => events.filter((e) => e.type === 'DriverClaimed').map((e) => ({ owner: (e.data as DriverClaimedData).owner, revision: e.revision }));

describe('three processes with their own data directories on one PostgreSQL, one killed with -9', () => {
  it('every run reaches its gate; the dead process\'s runs are taken over, no other run changes hands; workspaces rebuilt byte for byte; live text reaches a process that does not drive the run', async () => {
    const dir = tempDir('triad-pg-three-');
    const base: NodeJS.ProcessEnv = {
      ...process.env,
      TRIAD_STORE: 'postgres',
      TRIAD_PG_URL: PG_URL,
      TRIAD_PG_SCHEMA: schema,
      TRIAD_MODEL: 'offline',
      TRIAD_OFFLINE_LATENCY_MS: String(LATENCY_MS),
      TRIAD_LEASE_TTL_MS: String(TTL_MS),
      TRIAD_RECOVERY_INTERVAL_MS: '200',
      TRIAD_API_KEYS: `ops:operator:${KEY}`,
    };
    delete base.ANTHROPIC_API_KEY;
    delete base.TRIAD_ESDB_URL;
    const dataDirs = ['a', 'b', 'c'].map((n) => join(dir.path, n));
    const servers: ServerChild[] = [];
    let store: PostgresEventStore | undefined;
    try {
      // The first creates the schema; the two others start once it is there.
      servers.push(await spawnHttpServer({ ...base, TRIAD_DATA_DIR: dataDirs[0] }, { startTimeoutMs: 60_000, graceMs: 10_000 }));
      servers.push(...(await Promise.all(dataDirs.slice(1).map((d) => spawnHttpServer({ ...base, TRIAD_DATA_DIR: d }, { startTimeoutMs: 60_000, graceMs: 10_000 })))));
      const [a, b, c] = servers;
      store = await PostgresEventStore.connect({ url: PG_URL, schema, poolSize: 2 });

      const post = async (server: ServerChild) => {
        const res = await fetch(`${server.url}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body: JSON.stringify(INPUT) });
        expect(res.status).toBe(202);
        return ((await res.json()) as { runId: string }).runId;
      };
      // The run followed live: launched on B (which takes it: below its cap), followed from A.
      const followed = await post(b);
      const sse = followRunEvents(a.url, followed, KEY);
      // A third of the runs on each process (each takes its own launches), six at a time.
      const launchedOn: string[][] = [[], [followed], []];
      for (let i = 1; i < RUNS; i += 6) {
        const batch = Array.from({ length: Math.min(6, RUNS - i) }, (_, k) => (i + k + 1) % 3);
        const ids = await Promise.all(batch.map((s) => post(servers[s])));
        ids.forEach((id, k) => launchedOn[batch[k]].push(id));
      }
      const all = launchedOn.flat();
      expect(all).toHaveLength(RUNS);
      const ownerOf = async (runId: string) => (await store!.readStream(toRunStreamId(runId), { maxCount: 1 }))[0].metadata.process as string;
      const owners = await Promise.all(launchedOn.map((ids) => ownerOf(ids[0])));
      expect(new Set(owners).size).toBe(3);
      const [ownerA, ownerB, ownerC] = owners;
      const dataDirOf = new Map(owners.map((o, i) => [o, dataDirs[i]]));

      // C is killed once three of its runs have written a file and are not at their gate: progress,
      // not time, so the kill lands mid-flight however loaded the machine is, and the survivors have
      // files to rebuild.
      const progress = async (ids: string[]) =>
        (
          await admin.query<{ stream_id: string; writes: string; gate: boolean; claimed: boolean }>(
            `SELECT stream_id, count(*) FILTER (WHERE type = 'ToolCallCompleted' AND data::jsonb->>'name' = 'write_file') AS writes,
                    bool_or(type = 'ReviewOpened') AS gate,
                    bool_or(type = 'DriverClaimed') AS claimed
               FROM "${schema}".events WHERE stream_id = ANY($1) GROUP BY stream_id`,
            [ids.map(toRunStreamId)],
          )
        ).rows;
      await waitFor('three runs of C in flight', async () => (await progress(launchedOn[2])).filter((r) => Number(r.writes) >= 1 && !r.gate).length >= 3, 60_000, 100);
      await c.kill();
      // C's runs between their claim and their gate: C's to take over. (A run placed on C that C had
      // not claimed yet is placed again once its lease expires, and driven by one survivor.)
      const inFlightAtKill = (await progress(launchedOn[2])).filter((r) => r.claimed && !r.gate).length;

      await waitFor('every run at its human gate', async () => (await progress(all)).filter((r) => r.gate).length === RUNS, 180_000, 250);
      await waitFor('live text from B on A', async () => sse.seen.deltas.length > 0 || undefined, 10_000);
      expect(sse.seen.status).toBe(200);
      sse.close();
      await sse.done;
      // A relays the text of a run it does not drive: B drove it from launch to gate.
      const followedEvents = await runEvents(store, followed);
      expect(claimsOf(followedEvents).map((cl) => cl.owner)).toEqual([ownerB]);
      expect(sse.seen.events).toContain('ReviewOpened');

      let takenOver = 0;
      // Taken-over runs whose workspace held files written on C: rebuilt from the log elsewhere.
      let rebuilt = 0;
      let reference: Map<string, { sha256: string; size: number }> | undefined;
      const snapshots = new Map<string, Map<string, { sha256: string; size: number }>>();
      for (const runId of all) {
        const events = await runEvents(store, runId);
        const where = { runId, types: events.map((e) => e.type).slice(-3) };
        expect({ ...where, gate: events.some((e) => e.type === 'ReviewOpened') }).toEqual({ ...where, gate: true });
        const claims = claimsOf(events);
        // Driven by one live process throughout; or by C, then by one survivor from its takeover on.
        if (claims[0].owner === ownerC && claims.length > 1) {
          takenOver++;
          if (workspaceAt(events.filter((e) => e.revision < claims[1].revision)).files.size > 0) rebuilt++;
          expect([ownerA, ownerB]).toContain(claims[1].owner);
          expect(claims).toHaveLength(2);
        } else {
          expect({ runId, claims: claims.map((cl) => cl.owner) }).toEqual({ runId, claims: [claims[0].owner] });
          expect([ownerA, ownerB]).toContain(claims[0].owner);
        }
        // Every event names its writer: from each claim on, the claimer.
        for (const [i, claim] of claims.entries()) {
          const until = claims[i + 1]?.revision ?? Infinity;
          const writers = new Set(events.filter((e) => e.revision >= claim.revision && e.revision < until).map((e) => e.metadata.process));
          expect({ runId, writers: [...writers] }).toEqual({ runId, writers: [claim.owner] });
        }
        // Each model turn recorded once; a call's start recorded again at most once per takeover (the call in flight).
        expect(duplicates(events)).toEqual({ modelCalls: [], toolCalls: [] });
        const completed = events.filter((e) => e.type === 'ModelCallCompleted').length;
        expect(completionsByCallKey(runId, events).size).toBe(completed);
        const starts = events.filter((e) => e.type === 'ModelCallStarted').map((e) => (e.data as { callId: string }).callId);
        expect(starts.length - new Set(starts).size).toBeLessThanOrEqual(claims.length - 1);

        // The workspace, on the process that finished the run: what the log says, file for file.
        const finisher = claims[claims.length - 1].owner;
        const snapshot = await snapshotWorkspace(join(dataDirOf.get(finisher)!, 'workspaces', runId));
        const files = new Map([...snapshot.files].map(([p, f]) => [p, { sha256: f.sha256, size: f.size }]));
        const manifest = workspaceAt(events);
        expect({ runId, files: [...files] }).toEqual({
          runId,
          files: [...manifest.files].map(([p, f]) => [p, { sha256: (f as { sha256: string }).sha256, size: (f as { size: number }).size }]),
        });
        snapshots.set(runId, files);
        if (claims.length === 1 && !reference) reference = files;
      }
      // And the same bytes as an uninterrupted run's.
      expect(reference && [...reference.keys()].sort()).toEqual(['alpha.txt', 'beta.txt']);
      for (const [runId, files] of snapshots) expect({ runId, files: [...files] }).toEqual({ runId, files: [...reference!] });
      expect(takenOver).toBeGreaterThanOrEqual(3);
      expect(takenOver).toBe(inFlightAtKill);
      expect(rebuilt).toBeGreaterThanOrEqual(3);

      for (const s of [a, b]) expect(s.stderr).not.toMatch(/stopped on an error|lease renewal failed/);
      process.stdout.write(`pg-three test: ${RUNS} runs, ${takenOver} taken over from the killed process (${rebuilt} with files to rebuild)\n`);
      await Promise.all([a.stop(), b.stop()]);
    } catch (err) {
      for (const [i, s] of servers.entries()) process.stderr.write(`--- server ${i} stderr ---\n${s.stderr.slice(-4000)}\n`);
      throw err;
    } finally {
      for (const s of servers) await s.kill();
      await store?.close();
      dir.remove();
    }
  });
});
