import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { CLI, freePort } from '../faults/serve-support';
import { tempDir } from '../support/temp-dir';
import { waitFor } from '../support/wait-for';

// `triad serve` with stderr piped (not a terminal) writes JSON lines: one at start, with what it
// serves as fields (the framework's start-up lines are debug); a whole run — launch, a refused
// self-review, review, approval, a request with a wrong key — logs its facts as top-level fields,
// and neither an API key nor the Anthropic key.

jest.setTimeout(40_000);

const OPERATOR = 'logs-operator-secret-0123456789';
const REVIEWER = 'logs-reviewer-secret-0123456789';
const ANTHROPIC = 'sk-ant-api03-logs-test-key-0123456789';

it('one start line, a run logged as JSON lines with run, actor and event as fields, and never a secret', async () => {
  const dir = tempDir('triad-logs-');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TRIAD_DATA_DIR: join(dir.path, 'data'),
    TRIAD_STORE: 'sqlite',
    TRIAD_PORT: String(port),
    TRIAD_HOST: '127.0.0.1',
    TRIAD_API_KEYS: `ops:operator+reviewer:${OPERATOR},rev:reviewer:${REVIEWER}`,
    // The offline model even with a key set: the key is configuration that must never be logged.
    TRIAD_MODEL: 'offline',
    ANTHROPIC_API_KEY: ANTHROPIC,
  };
  const proc = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  try {
    await waitFor('triad serve to listen', async () => stdout.includes('triad listening'), 30_000);
    const url = `http://127.0.0.1:${port}`;
    const call = async (method: string, path: string, key: string | undefined, body?: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const launched = await call('POST', '/v1/runs', OPERATOR, { goal: 'Write a greeting', acceptanceCriteria: ['file hello.txt contains "Hello"'] });
    expect(launched.status).toBe(202);
    const runId = launched.body.runId as string;
    expect((await call('GET', '/v1/runs', `${ANTHROPIC}x`)).status).toBe(401);
    const waited = await call('POST', `/v1/runs/${runId}/wait?timeoutMs=20000`, OPERATOR);
    expect(waited.body.runStatus).toBe('awaiting_review');
    const review = (await call('GET', `/v1/runs/${runId}`, OPERATOR)).body.pendingReview as { reviewId: string };
    // The launcher reviewing their own run: refused, and logged as a security event.
    expect((await call('POST', `/v1/reviews/${review.reviewId}/approve`, OPERATOR, { reason: 'my own work is fine' })).status).toBe(403);
    expect((await call('POST', `/v1/reviews/${review.reviewId}/approve`, REVIEWER, { reason: 'looks right' })).status).toBe(200);
    await waitFor('the run to end in the log', async () => stderr.includes('"event":"RunEnded"'), 20_000);
  } finally {
    proc.kill('SIGTERM');
    await exited;
    dir.remove();
  }
  const lines = stderr.split('\n').filter((l) => l !== '');
  const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  for (const r of records) expect(r).toEqual(expect.objectContaining({ time: expect.any(String), level: expect.any(String), msg: expect.any(String) }));
  // One line says the server started, and what it serves; no framework line (a mapped route) is logged.
  expect(stdout.split('\n').filter((l) => l !== '')).toEqual([expect.stringMatching(/^triad listening on http:\/\/127\.0\.0\.1:\d+ — store sqlite/)]);
  expect(stderr).not.toMatch(/Mapped|dependencies initialized|Nest application/);
  const started = records.filter((r) => r.event === 'serve_started');
  expect(started).toEqual([
    expect.objectContaining({ level: 'log', context: 'Serve', address: `http://127.0.0.1:${port}`, store: 'sqlite', model: 'offline', sandbox: expect.any(String) }),
  ]);
  expect(records.filter((r) => r.context !== 'Events' && r.context !== 'Sandbox')).toEqual([...started, expect.objectContaining({ context: 'security' })]);
  // The refusal's facts are fields of the line, not JSON inside its message.
  expect(records.find((r) => r.context === 'security')).toEqual(
    expect.objectContaining({ level: 'warn', msg: 'self_review_refused', event: 'self_review_refused', rule: expect.any(String), runId: expect.stringMatching(/^run_/), reviewId: expect.any(String), decider: 'user:ops' }),
  );
  const events = records.filter((r) => r.context === 'Events');
  expect(events.map((r) => r.event)).toEqual(expect.arrayContaining(['RunLaunched', 'ReviewOpened', 'ReviewDecided', 'RunEnded']));
  expect(events.find((r) => r.event === 'RunLaunched')).toMatchObject({ actor: 'user:ops', runId: expect.stringMatching(/^run_/) });
  expect(events.find((r) => r.event === 'ReviewDecided')).toMatchObject({ actor: 'user:rev' });
  for (const secret of [OPERATOR, REVIEWER, ANTHROPIC]) {
    expect(stderr).not.toContain(secret);
    expect(stdout).not.toContain(secret);
  }
});
