import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { CLI_PATH, runCliInProcess, stopInProcessCli } from '../support/in-process-cli';
import { esdbTarget, type EsdbTarget } from '../support/esdb';
import { dropSchema, freshSchema, PG_URL } from '../support/pg';
import { TcpProxy } from '../support/tcp-proxy';
import { tempDir } from '../support/temp-dir';
import { waitFor } from '../support/wait-for';

// `triad serve` started while its PostgreSQL or EventStoreDB store is not there: it keeps the port,
// answers GET /health 503 naming the store, retries with backoff and starts normally once the store
// answers; other commands still fail at once, in one line, exit 1. The store is reached through a
// TCP proxy whose line is cut at start.

jest.setTimeout(60_000);

const dir = tempDir('triad-serve-wait-');
const schema = freshSchema('triad_serve_wait');
let esdb: EsdbTarget;

beforeAll(async () => {
  esdb = await esdbTarget();
});

afterAll(async () => {
  await stopInProcessCli();
  await esdb?.stop();
  await dropSchema(schema);
  dir.remove();
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const cases: Array<[string, () => { host: string; port: number }, (port: number) => Record<string, string>]> = [
  [
    'esdb',
    () => {
      const u = new URL(esdb.url.replace(/^esdb/, 'http'));
      return { host: u.hostname, port: Number(u.port) };
    },
    (port) => ({ TRIAD_STORE: 'esdb', TRIAD_ESDB_URL: esdb.url.replace(/:\d+(?=[/?]|$)/, `:${port}`) }),
  ],
  [
    'postgres',
    () => {
      const u = new URL(PG_URL);
      return { host: u.hostname, port: Number(u.port || 5432) };
    },
    (port) => {
      const u = new URL(PG_URL);
      u.port = String(port);
      return { TRIAD_STORE: 'postgres', TRIAD_PG_URL: u.toString(), TRIAD_PG_SCHEMA: schema };
    },
  ],
];

it.each(cases)('%s: /health 503 naming the store while it is away, then the app starts; other commands exit 1 at once', async (store, upstream, storeEnv) => {
  const proxy = await TcpProxy.start(upstream());
  proxy.cut();
  const port = await freePort();
  const env = {
    ...process.env,
    ...storeEnv(proxy.port),
    TRIAD_DATA_DIR: dir.path,
    TRIAD_HOST: '127.0.0.1',
    TRIAD_PORT: String(port),
    TRIAD_MODEL: 'offline',
    TRIAD_API_KEYS: 'ops:operator:wait-secret-0123456789',
    ANTHROPIC_API_KEY: '',
  };
  const serve = spawn(process.execPath, [CLI_PATH, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  serve.stdout.on('data', (c: Buffer) => (out.stdout += c.toString('utf8')));
  serve.stderr.on('data', (c: Buffer) => (out.stderr += c.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => serve.once('exit', resolve));
  const health = async () => {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    } catch {
      return undefined;
    }
  };
  try {
    await waitFor('/health to answer 503', async () => (await health())?.status === 503, 20_000);
    expect((await health())?.body).toMatchObject({ status: 'degraded', store, reason: `the ${store} store is not reachable; triad is waiting for it` });
    expect(out.stderr).toMatch(new RegExp(`triad: .*; retrying with backoff, GET /health answers 503 until it answers\\n`));
    expect(out.stderr).not.toMatch(/wait-secret|\n\s+at /);

    const cli = await runCliInProcess(['runs', 'list'], env);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(new RegExp(`^triad: cannot open the ${store} store: [^\\n]*\\n$`));

    proxy.restore();
    await waitFor('the app to start', async () => (await health())?.status === 200, 30_000);
    expect((await health())?.body).toMatchObject({ status: 'ok', store });
    expect(out.stdout).toMatch(/^triad listening on /);
    const runs = await fetch(`http://127.0.0.1:${port}/v1/runs`, { headers: { authorization: 'Bearer wait-secret-0123456789' } });
    expect(runs.status).toBe(200);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- serve stderr ---\n${out.stderr}`);
  } finally {
    serve.kill('SIGTERM');
    const code = await exited;
    await proxy.close();
    expect(code).toBe(0);
  }
});

it('SIGTERM while waiting for the store: exit 0 at once', async () => {
  const port = await freePort();
  const serve = spawn(process.execPath, [CLI_PATH, 'serve'], {
    env: { ...process.env, TRIAD_STORE: 'esdb', TRIAD_ESDB_URL: 'esdb://127.0.0.1:1?tls=false', TRIAD_DATA_DIR: dir.path, TRIAD_HOST: '127.0.0.1', TRIAD_PORT: String(port), TRIAD_API_KEYS: 'ops:operator:wait-secret-0123456789' },
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => serve.once('exit', resolve));
  await waitFor('/health to answer 503', async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.status === 503, 20_000);
  serve.kill('SIGTERM');
  expect(await exited).toBe(0);
});
