import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { RunSummary } from '../../src/team/runs/run-summary';
import { CLI_PATH, runCliInProcess } from '../support/in-process-cli';
import { tempDir } from '../support/temp-dir';

// The one test of the compiled program as its own process (the others run it in-process): a real
// pipe whose reader is gone before `triad run --follow` writes, as with `triad run ... | head -0`.

jest.setTimeout(120_000);

const dir = tempDir('triad-cli-smoke-');
afterAll(() => dir.remove());

it('`node dist/cli/main.js run --follow` into a closed pipe: exit 141, no stack trace, the run suspended and resumable', async () => {
  const env: NodeJS.ProcessEnv = { ...process.env, TRIAD_DATA_DIR: join(dir.path, 'data'), TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline', TRIAD_USER: 'ann' };
  delete env.ANTHROPIC_API_KEY;
  delete env.TRIAD_PG_URL;
  const child = spawn(process.execPath, [CLI_PATH, 'run', 'Write the letter A', '--criteria', 'file a.txt contains "A"', '--follow', '--json'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The reader leaves before the first line: every write of the child fails with EPIPE.
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  expect({ code, stderr }).toEqual({ code: 141, stderr: '' });

  const listed = await runCliInProcess(['runs', 'list', '--json'], env);
  const runs = JSON.parse(listed.stdout) as RunSummary[];
  expect(runs.map((r) => r.status)).toEqual(['suspended']);
  const resumed = await runCliInProcess(['resume', runs[0].runId, '--json'], env);
  expect(resumed.code).toBe(0);
  expect(JSON.parse(resumed.stdout.trim().split('\n').pop()!)).toMatchObject({ runId: runs[0].runId, status: 'awaiting_review' });
});
