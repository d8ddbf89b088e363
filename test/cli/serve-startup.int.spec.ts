import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { CLI_PATH } from '../support/in-process-cli';
import { tempDir } from '../support/temp-dir';
import { waitFor } from '../support/wait-for';

// `triad serve` that cannot serve says why in one line and stops, having opened and written
// nothing: a port in use, an address that is not this machine's, no API key. One that can
// announces the address it really listens on (TRIAD_PORT=0: any free port).

jest.setTimeout(60_000);

const dir = tempDir('triad-serve-startup-');
afterAll(() => dir.remove());

const KEYS = 'ops:operator:startup-secret-0123456789';

function serve(env: Record<string, string>) {
  const child = spawn(process.execPath, [CLI_PATH, 'serve'], {
    env: { PATH: process.env.PATH ?? '', TRIAD_MODEL: 'offline', TRIAD_HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c: Buffer) => (out.stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (out.stderr += c.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, out, exited };
}

it('given a port in use or an address not of this machine, then exit 1 in one line, and no store is created', async () => {
  const holder: Server = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const { port } = holder.address() as AddressInfo;
  try {
    const data = join(dir.path, 'in-use');
    const inUse = serve({ TRIAD_DATA_DIR: data, TRIAD_PORT: String(port), TRIAD_API_KEYS: KEYS });
    expect(await inUse.exited).toBe(1);
    expect(inUse.out.stderr).toBe(`triad: cannot listen on 127.0.0.1:${port}: the port is in use\n`);
    expect(existsSync(data)).toBe(false);
  } finally {
    await new Promise((resolve) => holder.close(resolve));
  }
  const foreign = serve({ TRIAD_DATA_DIR: join(dir.path, 'foreign'), TRIAD_HOST: '192.0.2.1', TRIAD_ALLOWED_HOSTS: 'triad.example', TRIAD_PORT: '0', TRIAD_API_KEYS: KEYS });
  expect(await foreign.exited).toBe(1);
  expect(foreign.out.stderr).toBe("triad: cannot listen on 192.0.2.1:0: the address is not one of this machine's\n");
  expect(existsSync(join(dir.path, 'foreign'))).toBe(false);
});

it('given no API key, then exit 2 in one line, and no store is created', async () => {
  const data = join(dir.path, 'no-keys');
  const run = serve({ TRIAD_DATA_DIR: data, TRIAD_PORT: '0', TRIAD_API_KEYS: ' ' });
  expect(await run.exited).toBe(2);
  expect(run.out.stderr).toMatch(/^triad: no API keys are configured: [^\n]*\n$/);
  expect(existsSync(data)).toBe(false);
});

it('given TRIAD_PORT=0, then it announces the port it listens on, serves there, and stops on SIGTERM', async () => {
  const data = join(dir.path, 'any-port');
  const run = serve({ TRIAD_DATA_DIR: data, TRIAD_PORT: '0', TRIAD_API_KEYS: KEYS });
  try {
    await waitFor('the announcement', async () => /listening on http:\/\/127\.0\.0\.1:\d+ /.test(run.out.stdout), 30_000);
    const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+) /.exec(run.out.stdout)![1]);
    expect(port).toBeGreaterThan(0);
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    expect(readdirSync(data)).toContain('triad.db');
  } finally {
    run.child.kill('SIGTERM');
  }
  expect(await run.exited).toBe(0);
});
