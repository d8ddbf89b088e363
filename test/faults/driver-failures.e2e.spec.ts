import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startE2eApp, type E2eApp } from '../support/e2e-app';
import { waitFor } from '../support/wait-for';

/**
 * A driver that stops on an error which is not the model's (here: the workspaces directory is a
 * file, so no run's workspace can be made) is started again after a wait that doubles each time,
 * never in a loop; `/health` says the process is degraded meanwhile, and once the fault is gone the
 * run goes on to its gate and the process is healthy again.
 */
let e2e: E2eApp;

beforeAll(async () => {
  e2e = await startE2eApp();
});
afterAll(() => e2e.close());

const failuresInARow = () => [...e2e.stderr.matchAll(/the driver stopped on an error \((\d+) in a row/g)].map((m) => Number(m[1]));

it('given a fault under every driver, then restarts back off, /health is 503, and the run reaches its gate once the fault is gone', async () => {
  const workspaces = join(e2e.dataDir, 'workspaces');
  rmSync(workspaces, { recursive: true, force: true });
  writeFileSync(workspaces, 'not a directory');

  const launched = await e2e.request<{ runId: string }>('POST', '/v1/runs', { body: { goal: 'Write a greeting', acceptanceCriteria: ['file hello.txt contains "Hello"'] } });
  expect(launched.status).toBe(202);

  await waitFor('the first failure', async () => failuresInARow().includes(1), 15_000, 10);
  const firstSeen = Date.now();
  const health = await waitFor('a degraded /health', async () => {
    const h = await e2e.request<{ reason?: string }>('GET', '/health', { as: null });
    return h.status === 503 && h.body.reason?.includes('run drivers') ? h.body : undefined;
  }, 15_000);
  expect(health.reason).toContain('1 run(s) stopped on an error');

  // The third attempt comes after waits of 1 s and 2 s, not in a loop (which makes hundreds a second).
  await waitFor('the third failure in a row', async () => failuresInARow().includes(3), 20_000, 10);
  expect(Date.now() - firstSeen).toBeGreaterThanOrEqual(1_500);
  expect(Math.max(...failuresInARow())).toBe(3);

  rmSync(workspaces, { force: true });
  mkdirSync(workspaces);
  await waitFor('the run at its gate', async () => {
    const run = await e2e.request<{ status: string }>('GET', `/v1/runs/${launched.body.runId}`);
    return run.body.status === 'awaiting_review';
  }, 30_000);
  const healthy = await e2e.request<{ status: string }>('GET', '/health', { as: null });
  expect(healthy.status).toBe(200);
  expect(healthy.body.status).toBe('ok');
});
