import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { PostgresEventStore } from '../../src/events/event-store/postgres.event-store';
import type { DriverClaimedData } from '../../src/team/domain/run-events';
import { dropSchema, freshSchema, PG_URL, withClient } from '../support/pg';
import { tempDir } from '../support/temp-dir';
import { http, launchRuns, startServe, stopServe, streamFaults, waitFor, type Serve } from './serve-support';

// Two `triad serve` processes share PostgreSQL, both running recovery, with a CPU hog on the
// machine and nothing failing: no run may change hands (one DriverClaimed each), and neither
// process may find one of its leases taken. 24 runs here (the hog holds a core for the test's length); `npm run soak` runs 1,000
// (TRIAD_SOAK_RUNS). Fails (never skips) without PostgreSQL.

const RUNS = Number(process.env.TRIAD_SOAK_RUNS || 24);
jest.setTimeout(Math.max(180_000, RUNS * 1_500));

describe(`${RUNS} runs on two processes under CPU load`, () => {
  it('no lease is taken over while its process lives', async () => {
    const schema = freshSchema('triad_soak');
    const dir = tempDir('triad-soak-');
    const servers: Serve[] = [];
    let hog: ChildProcess | undefined;
    let store: PostgresEventStore | undefined;
    try {
      await withClient((c) => c.query('SELECT 1'));
      const env = {
        TRIAD_STORE: 'postgres',
        TRIAD_PG_URL: PG_URL,
        TRIAD_PG_SCHEMA: schema,
        TRIAD_DATA_DIR: join(dir.path, 'shared'),
        TRIAD_OFFLINE_LATENCY_MS: '10',
        TRIAD_RECOVERY_INTERVAL_MS: '1000',
        // Shorter than the default, so that a heartbeat that falls behind shows within the test.
        TRIAD_LEASE_TTL_MS: '6000',
      };
      servers.push(await startServe(env));
      servers.push(await startServe(env));
      hog = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
      const half = Math.ceil(RUNS / 2);
      const runIds = (await Promise.all([launchRuns(servers[0], half, 'soak A'), launchRuns(servers[1], RUNS - half, 'soak B')])).flat();
      store = await PostgresEventStore.connect({ url: PG_URL, schema, poolSize: 2 });
      const { rows } = await waitFor(
        'every run to reach the human gate',
        async () => {
          const result = await withClient((c) =>
            c.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".events WHERE type = 'ReviewOpened'`),
          );
          return Number(result.rows[0].n) >= RUNS && result;
        },
        RUNS * 1_200,
        500,
      );
      expect(Number(rows[0].n)).toBe(RUNS);
      for (const s of servers) {
        const metrics = await http<string>(s, 'GET', '/metrics');
        process.stdout.write(`${metrics.body.split('\n').filter((l) => /^triad_(lease|leases|event_loop)/.test(l)).join('\n')}\n`);
      }
      let takeovers = 0;
      for (const runId of runIds) {
        const events = await store.readStream(`run-${runId}`);
        expect({ runId, faults: streamFaults(runId, events) }).toEqual({ runId, faults: [] });
        const claims = events.filter((e) => e.type === 'DriverClaimed').map((e) => (e.data as DriverClaimedData).owner);
        if (claims.length !== 1) {
          takeovers++;
          process.stdout.write(`${runId}: ${events.map((e) => (e.type === 'DriverClaimed' ? `Claimed(${(e.data as DriverClaimedData).owner.split(':')[1]})@${e.recordedAt.slice(17, 23)}` : e.type)).join(' ')}\n`);
        }
      }
      expect(takeovers).toBe(0);
      for (const s of servers) {
        const metrics = await http<string>(s, 'GET', '/metrics');
        expect(metrics.body).toContain('triad_leases_lost_total 0');
      }
    } catch (err) {
      for (const s of servers) process.stderr.write(`--- serve ---\n${s.stdout.split('\n').concat(s.stderr.split('\n')).filter((l) => /lease|late|stopped|fenced|error|warn/i.test(l)).slice(-40).join('\n')}\n`);
      throw err;
    } finally {
      hog?.kill('SIGKILL');
      for (const s of servers) await stopServe(s);
      await store?.close();
      await dropSchema(schema).catch(() => undefined);
      dir.remove();
    }
  });
});
