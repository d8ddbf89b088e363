import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { openStorage, type Storage } from '../../src/storage/storage';
import { esdbTarget, type EsdbTarget } from '../support/esdb';
import { tempDir } from '../support/temp-dir';
import { CLI, runEvents, statusOf, waitFor } from './crash-support';

// SIGTERM on TRIAD_STORE=esdb, as on SQLite (sigterm.int.spec.ts): `triad serve` driving a run
// mid-call records it as suspended (RunSuspended + a checkpoint) and exits 0; `triad resume`
// finishes it. (An app stopped by a test harness that has no SIGTERM handler dies like a crash
// instead, on any store: test/support/http-server-child.ts closes its app as `triad serve` does.)

jest.setTimeout(60_000);

const dir = tempDir('triad-esdb-sigterm-');
let target: EsdbTarget;
let storage: Storage;

beforeAll(async () => {
  target = await esdbTarget();
  storage = await openStorage({ store: 'esdb', dataDir: dir.path, esdbUrl: target.url });
});

afterAll(async () => {
  await storage?.close();
  await target?.stop();
  dir.remove();
});

/** A port free a moment ago, for `triad serve` (which listens on TRIAD_PORT). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

it('`triad serve` gets SIGTERM mid-run: the run is suspended with a checkpoint, exit 0; `triad resume` drives it to the review gate', async () => {
  const port = await freePort();
  const env = {
    ...process.env,
    TRIAD_STORE: 'esdb',
    TRIAD_ESDB_URL: target.url,
    TRIAD_DATA_DIR: dir.path,
    TRIAD_PORT: String(port),
    TRIAD_HOST: '127.0.0.1',
    TRIAD_MODEL: 'offline',
    TRIAD_OFFLINE_LATENCY_MS: '400',
    TRIAD_LEASE_TTL_MS: '2000',
    TRIAD_RECOVERY_INTERVAL_MS: '100',
    TRIAD_API_KEYS: 'ops:operator:op-secret-0123456789',
    ANTHROPIC_API_KEY: '',
  };
  const serve = () => {
    const proc = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = { stdout: '', stderr: '' };
    proc.stdout.on('data', (c: Buffer) => (out.stdout += c.toString('utf8')));
    proc.stderr.on('data', (c: Buffer) => (out.stderr += c.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
    return { proc, out, exited };
  };
  const first = serve();
  let runId: string;
  try {
    await waitFor('triad serve to listen', async () => first.out.stdout.includes('triad listening'), 20_000);
    const launched = await fetch(`http://127.0.0.1:${port}/v1/runs`, {
      method: 'POST',
      headers: { authorization: 'Bearer op-secret-0123456789', 'content-type': 'application/json' },
      body: JSON.stringify({ goal: 'Serve shutdown on esdb', acceptanceCriteria: ['file b.txt contains "b"'] }),
    });
    expect(launched.status).toBe(202);
    runId = ((await launched.json()) as { runId: string }).runId;
    await waitFor('a recorded turn', async () => (await runEvents(storage.events, runId)).some((e) => e.type === 'ModelCallCompleted'), 30_000, 20);
  } finally {
    first.proc.kill('SIGTERM');
  }
  expect({ code: await first.exited, stderr: first.out.stderr }).toEqual({ code: 0, stderr: expect.not.stringMatching(/could not record the suspension|stopped on an error/) });
  const events = await runEvents(storage.events, runId);
  expect(events[events.length - 1]).toMatchObject({ type: 'RunSuspended', data: { reason: 'SHUTDOWN' } });
  expect(await statusOf(storage.events, runId)).toBe('suspended');
  expect(await storage.checkpoints.latest(runId)).toMatchObject({ reason: 'shutdown', revision: events[events.length - 1].revision });

  // `triad resume` drives it here, to the review gate.
  const cli = spawn(process.execPath, [CLI, 'resume', runId, '--json'], { env: { ...env, TRIAD_USER: 'oncall', TRIAD_OFFLINE_LATENCY_MS: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  cli.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  cli.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => cli.once('exit', resolve));
  expect({ code, stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  expect(JSON.parse(stdout.trim().split('\n').pop()!)).toMatchObject({ runId, status: 'awaiting_review' });
  expect((await runEvents(storage.events, runId)).find((e) => e.type === 'RunResumed')?.data).toMatchObject({ by: 'user:oncall' });
});
