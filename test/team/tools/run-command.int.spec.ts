import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createBuiltinTools, type BuiltinToolLimits } from '../../../src/team/tools/builtin-tools';
import { commandEnvironment } from '../../../src/team/tools/builtin/run-command';
import type { ToolOutcome } from '../../../src/team/tools/tool.port';
import { contextFor, isAlive, scratchDir, toolNamed, waitUntilGone } from './tool-test-support';
import { waitFor } from '../../support/wait-for';

describe('run_command', () => {
  let ws: ReturnType<typeof scratchDir>;
  beforeEach(() => (ws = scratchDir('triad-cmd-')));
  afterEach(() => ws.remove());

  const run = (
    input: Record<string, unknown>,
    options: { signal?: AbortSignal; limits?: Partial<BuiltinToolLimits> } = {},
  ): Promise<ToolOutcome> =>
    toolNamed(createBuiltinTools(options.limits), 'run_command').execute(input, contextFor(ws.path, { signal: options.signal }));

  const pidsIn = (output: string): number[] => [...output.matchAll(/pid:(\d+)/g)].map((m) => Number(m[1]));

  it('runs in the workspace and reports output and exit code', async () => {
    writeFileSync(join(ws.path, 'data.txt'), 'from the workspace\n');
    const outcome = await run({ command: 'pwd; cat data.txt' });
    expect(outcome).toEqual({ isError: false, output: `${ws.path}\nfrom the workspace\n[exit code 0]`, machineText: true });
  });

  it('interleaves stdout and stderr and reports a non-zero exit as an error', async () => {
    const outcome = await run({ command: 'echo out; echo err >&2; exit 3' });
    expect(outcome.isError).toBe(true);
    expect(outcome.output).toContain('out');
    expect(outcome.output).toContain('err');
    expect(outcome.output.endsWith('[exit code 3]')).toBe(true);
  });

  it('says when there is no output', async () => {
    await expect(run({ command: 'true' })).resolves.toEqual({ isError: false, output: '(no output)\n[exit code 0]', machineText: true });
  });

  it('kills the whole process group on timeout', async () => {
    const started = Date.now();
    const outcome = await run({ command: 'sleep 30 & echo "pid:$!"; echo "pid:$$"; sleep 30; echo never' , timeoutMs: 400 });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(outcome.isError).toBe(true);
    expect(outcome.output).toContain('[timed out after 400 ms; the command and every process it started were killed]');
    expect(outcome.output).not.toContain('never');
    const pids = pidsIn(outcome.output);
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(await waitUntilGone(pid)).toBe(true);
  });

  it('kills the whole process group when the context is aborted', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const started = Date.now();
    const outcome = await run({ command: 'sleep 30 & echo "pid:$!"; sleep 30' }, { signal: controller.signal });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(outcome.isError).toBe(true);
    expect(outcome.output).toContain('[cancelled;');
    const [grandchild] = pidsIn(outcome.output);
    expect(grandchild).toBeDefined();
    expect(await waitUntilGone(grandchild!)).toBe(true);
  });

  it('does not start when the context is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const outcome = await run({ command: 'touch started' }, { signal: controller.signal });
    expect(outcome.isError).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(() => readFileSync(join(ws.path, 'started'))).toThrow();
  });

  it('does not let background processes outlive the command', async () => {
    const started = Date.now();
    const outcome = await run({ command: 'sleep 30 & echo "pid:$!"' });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(outcome.isError).toBe(false);
    const [background] = pidsIn(outcome.output);
    expect(await waitUntilGone(background!)).toBe(true);
    expect(isAlive(background!)).toBe(false);
  });

  /** The pid a process writes to `file` in the workspace, once it is there. */
  const pidWrittenTo = (file: string): Promise<number> =>
    waitFor(`a pid in ${file}`, async () => {
      try {
        return Number(readFileSync(join(ws.path, file), 'utf8').trim()) || undefined;
      } catch {
        return undefined;
      }
    }, 20_000);

  it('given the process running the command is killed with SIGKILL, then the command and what it started are killed too', async () => {
    // A process of its own (from dist/, as `triad serve` runs it) runs a command that starts a
    // background process and waits; it is then killed with no chance to clean up.
    const tool = join(__dirname, '..', '..', '..', 'dist', 'team', 'tools', 'builtin-tools.js');
    const script = `const { createBuiltinTools } = require(${JSON.stringify(tool)});
      const cmd = createBuiltinTools().find((t) => t.name === 'run_command');
      cmd.execute({ command: 'sleep 60 & echo $! > bg.pid; sleep 60' }, { runId: 'r', role: 'executor', workspace: process.cwd(), signal: new AbortController().signal });`;
    const holder = spawn(process.execPath, ['-e', script], { cwd: ws.path, stdio: 'ignore' });
    const bgPid = await pidWrittenTo('bg.pid');
    expect(isAlive(bgPid)).toBe(true);
    holder.kill('SIGKILL');
    expect(await waitUntilGone(bgPid, 10_000)).toBe(true);
  });

  it('given the process running the command dies after starting it and before arming its watchdog, then the command never runs', async () => {
    // The holder kills itself with SIGKILL as it is about to spawn the watchdog: the command's shell
    // exists, and nothing watches it. Its pid goes to a file first, so the test can wait for it.
    const tool = join(__dirname, '..', '..', '..', 'dist', 'team', 'tools', 'builtin-tools.js');
    const script = `const cp = require('node:child_process');
      const { writeFileSync } = require('node:fs');
      const spawn = cp.spawn;
      let first;
      cp.spawn = (...args) => {
        if (first) {
          writeFileSync('shell.pid', String(first.pid));
          process.kill(process.pid, 'SIGKILL');
        }
        return (first = spawn(...args));
      };
      const { createBuiltinTools } = require(${JSON.stringify(tool)});
      const cmd = createBuiltinTools().find((t) => t.name === 'run_command');
      cmd.execute({ command: 'echo ran > ran.txt; sleep 60 & echo $! > bg.pid; sleep 60' }, { runId: 'r', role: 'executor', workspace: process.cwd(), signal: new AbortController().signal });`;
    const holder = spawn(process.execPath, ['-e', script], { cwd: ws.path, stdio: 'ignore' });
    const shellPid = await pidWrittenTo('shell.pid');
    await new Promise((resolve) => (holder.exitCode !== null || holder.signalCode !== null ? resolve(undefined) : holder.once('exit', resolve)));
    // The shell read end-of-file where the line that lets it run was to come, and left.
    expect(await waitUntilGone(shellPid, 10_000)).toBe(true);
    expect(existsSync(join(ws.path, 'ran.txt'))).toBe(false);
    expect(existsSync(join(ws.path, 'bg.pid'))).toBe(false);
  });

  it('bounds the output, keeping its head and tail', async () => {
    const outcome = await run(
      { command: "echo START; head -c 200000 /dev/zero | tr '\\0' 'a'; echo; echo END" },
      { limits: { commandOutputMaxBytes: 1024 } },
    );
    expect(outcome.isError).toBe(false);
    expect(outcome.output.startsWith('START\n')).toBe(true);
    expect(outcome.output).toMatch(/\[… \d+ bytes of output omitted …\]/);
    expect(outcome.output.endsWith('END\n[exit code 0]')).toBe(true);
    expect(outcome.output.length).toBeLessThan(1200);
  });

  describe('environment', () => {
    const planted = {
      FOO_API_KEY: 'fake-api-key-123',
      MY_SECRET: 'fake-secret-456',
      GITHUB_TOKEN: 'fake-token-789',
      DB_PASSWORD: 'fake-password-000',
      ANTHROPIC_BASE_URL: 'http://fake-anthropic.invalid',
      TRIAD_API_KEYS: 'fake-triad-keys',
      SOME_DATABASE_URL: 'postgres://user:fake-db-pass@db.invalid/triad',
      PLAIN_SETTING: 'visible-value',
    };
    beforeEach(() => Object.assign(process.env, planted));
    afterEach(() => {
      for (const name of Object.keys(planted)) delete process.env[name];
    });

    it('strips secrets and triad/Anthropic configuration from the command environment', async () => {
      const outcome = await run({ command: 'env' });
      expect(outcome.isError).toBe(false);
      for (const [name, value] of Object.entries(planted)) {
        if (name === 'PLAIN_SETTING') continue;
        expect(outcome.output).not.toContain(name);
        expect(outcome.output).not.toContain(value);
      }
      expect(outcome.output).toContain('PLAIN_SETTING=visible-value');
      expect(outcome.output).toContain('PATH=');
    });

    it('filters by name pattern and by credentials in URLs', () => {
      expect(
        commandEnvironment({
          PATH: '/bin',
          api_key: 'x',
          AWS_SECRET_ACCESS_KEY: 'x',
          NPM_TOKEN: 'x',
          ANTHROPIC_MODEL: 'x',
          TRIAD_MODEL: 'x',
          REDIS_URL: 'redis://:pw@host',
          HOME_PAGE: 'https://example.com/',
        }),
      ).toEqual({ PATH: '/bin', HOME_PAGE: 'https://example.com/' });
    });
  });
});
