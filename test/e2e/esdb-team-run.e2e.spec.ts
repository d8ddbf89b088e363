import { join } from 'node:path';
import { openStorage } from '../../src/storage/storage';
import { toRunStreamId } from '../../src/team/domain/run-events';
import type { RunSummary } from '../../src/team/runs/run-summary';
import { startE2eApp, type E2eApp } from '../support/e2e-app';
import { esdbTarget, type EsdbTarget } from '../support/esdb';
import { startFakeEsdb } from '../support/esdb-server/esdb-server';
import { runCliInProcess } from '../support/in-process-cli';
import { TcpProxy } from '../support/tcp-proxy';
import { waitForRun } from '../support/app-client';

// A team run on TRIAD_STORE=esdb through the real app over HTTP: launch, the review gate,
// approval, then replay and the decision log's verification by the CLI on the same store.

jest.setTimeout(60_000);

let target: EsdbTarget;
let proxy: TcpProxy;
let app: E2eApp;

beforeAll(async () => {
  target = await esdbTarget();
  // The app reaches the server through a line the last test cuts.
  const server = new URL(target.url.replace(/^esdb/, 'http'));
  proxy = await TcpProxy.start({ host: server.hostname, port: Number(server.port) });
  app = await startE2eApp({ TRIAD_STORE: 'esdb', TRIAD_ESDB_URL: target.url.replace(`:${server.port}`, `:${proxy.port}`) });
});

afterAll(async () => {
  await app?.close().catch(() => undefined);
  await proxy?.close();
  await target?.stop();
});

const cli = (...args: string[]) =>
  runCliInProcess(args, { ...process.env, TRIAD_STORE: 'esdb', TRIAD_ESDB_URL: target.url, TRIAD_DATA_DIR: join(app.dataDir), TRIAD_MODEL: 'offline', TRIAD_USER: 'carol' });

const runUntil = (runId: string, check: (run: RunSummary) => boolean) => waitForRun(app, runId, check, 45_000, { detail: () => app.stderr });

it('launch → awaiting_review → approve; replay and decisions verify agree, all on EventStoreDB', async () => {
  const health = await app.request<{ store: string; status: string }>('GET', '/health', { as: null });
  expect(health.body).toMatchObject({ status: 'ok', store: 'esdb' });

  const launched = await app.request<{ runId: string }>('POST', '/v1/runs', {
    body: { goal: 'Write a greeting', acceptanceCriteria: ['file hello.txt contains "Hello"'] },
  });
  expect(launched.status).toBe(202);
  const { runId } = launched.body;
  const waiting = await runUntil(runId, (r) => r.status === 'awaiting_review');
  const reviewId = waiting.pendingReview!.reviewId;

  const approved = await app.request('POST', `/v1/reviews/${reviewId}/approve`, { as: 'reviewer', body: { reason: 'looks right' } });
  expect(approved.status).toBe(200);
  await runUntil(runId, (r) => r.status === 'completed');

  const replay = await cli('replay', runId, '--json');
  expect(replay.code).toBe(0);
  expect(JSON.parse(replay.stdout)).toMatchObject({ runId });

  const verify = await cli('decisions', 'verify', '--json');
  expect({ code: verify.code, stderr: verify.stderr }).toEqual({ code: 0, stderr: '' });
  // One record here; a real server (TRIAD_ESDB_URL) may hold earlier runs' records too.
  const verified = JSON.parse(verify.stdout) as { ok: boolean; checked: number };
  expect(verified.ok).toBe(true);
  expect(verified.checked).toBeGreaterThanOrEqual(1);
  if (target.fake) expect(verified.checked).toBe(1);

  const fork = await cli('fork', runId, '--turn', '1', '--json');
  expect({ code: fork.code, stderr: fork.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
});

it('copied into SQLite: the sparse positions are kept, the copy verifies, and a run launched on it continues after them', async () => {
  const copyDir = join(app.dataDir, 'copy');
  const onCopy = { ...process.env, TRIAD_STORE: 'sqlite', TRIAD_DATA_DIR: copyDir, TRIAD_MODEL: 'offline', TRIAD_USER: 'carol' };
  const copy = await cli('store', 'copy', '--to', `sqlite:${copyDir}`, '--json');
  expect({ code: copy.code, stderr: copy.stderr }).toEqual({ code: 0, stderr: '' });
  const report = JSON.parse(copy.stdout) as { head: number; verification: { ok: boolean; target: { events: number } } };
  expect(report.verification.ok).toBe(true);
  // EventStoreDB's positions are log offsets: far apart, and the copy keeps them.
  expect(report.head).toBeGreaterThan(report.verification.target.events);

  const verify = await runCliInProcess(['decisions', 'verify', '--json'], onCopy);
  expect({ code: verify.code, stderr: verify.stderr }).toEqual({ code: 0, stderr: '' });
  expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true });

  const run = await runCliInProcess(['run', 'Write the letter B', '--criteria', 'file b.txt contains "B"'], onCopy);
  expect(run.code).toBe(0);
  const runId = /^run (\S+) accepted/m.exec(run.stdout)![1];
  const storage = await openStorage({ store: 'sqlite', dataDir: copyDir });
  try {
    const events = await storage.events.readStream(toRunStreamId(runId));
    expect(events.length).toBeGreaterThan(0);
    expect(events[0].position).toBe(report.head + 1);
  } finally {
    await storage.close();
  }
  const again = await runCliInProcess(['decisions', 'verify', '--json'], onCopy);
  expect(again.code).toBe(0);
});

it('the SQLite copy (sparse positions, a run of its own after them) copied on into an empty EventStoreDB: verified, its decision log intact', async () => {
  const server = await startFakeEsdb();
  try {
    const env = { ...process.env, TRIAD_STORE: 'sqlite', TRIAD_DATA_DIR: join(app.dataDir, 'copy') };
    const res = await runCliInProcess(['store', 'copy', '--to', server.url, '--json'], env);
    expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(res.stdout)).toMatchObject({ verification: { ok: true, decisionLog: { ok: true } } });
    const verify = await runCliInProcess(['decisions', 'verify', '--json'], { ...env, TRIAD_STORE: 'esdb', TRIAD_ESDB_URL: server.url });
    expect({ code: verify.code, stderr: verify.stderr }).toEqual({ code: 0, stderr: '' });
  } finally {
    await server.stop();
  }
});

it('a store that is not there: the CLI says so in one line and exits 1', async () => {
  const res = await runCliInProcess(['runs', 'list'], { ...process.env, TRIAD_STORE: 'esdb', TRIAD_ESDB_URL: 'esdb://127.0.0.1:1?tls=false', TRIAD_DATA_DIR: app.dataDir });
  expect(res.code).toBe(1);
  expect(res.stderr.trim().split('\n')).toHaveLength(1);
  expect(res.stderr).toMatch(/EventStoreDB at esdb:\/\/127\.0\.0\.1:1\?tls=false: not reachable/);
});

it('a server that stops answering: /health says 503 while it is away and 200 once it is back', async () => {
  const health = () => app.request<{ status: string; reason?: string }>('GET', '/health', { as: null });
  expect((await health()).status).toBe(200);
  proxy.cut();
  try {
    const deadline = Date.now() + 40_000;
    let res = await health();
    while (res.status !== 503 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      res = await health();
    }
    expect(res.body).toMatchObject({ status: 'degraded', reason: expect.stringMatching(/not reachable/) });
  } finally {
    proxy.restore();
  }
  const deadline = Date.now() + 40_000;
  let res = await health();
  while (res.status !== 200 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    res = await health();
  }
  expect(res.body).toMatchObject({ status: 'ok', store: 'esdb' });
});

