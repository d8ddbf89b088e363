import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createBuiltinTools, type BuiltinToolLimits } from '../../../src/team/tools/builtin-tools';
import { sandboxEnvironment } from '../../../src/team/tools/sandbox/sandbox-policy';
import type { ToolOutcome } from '../../../src/team/tools/tool.port';
import { contextFor, scratchDir, toolNamed, waitUntilGone } from './tool-test-support';
import { waitFor } from '../../support/wait-for';
import { hostProcessesWith, uniqueSleep } from '../../support/host-processes';

describe('run_command', () => {
  let ws: ReturnType<typeof scratchDir>;
  beforeEach(() => (ws = scratchDir('triad-cmd-')));
  afterEach(() => ws.remove());

  const run = (
    input: Record<string, unknown>,
    options: { signal?: AbortSignal; limits?: Partial<BuiltinToolLimits> } = {},
  ): Promise<ToolOutcome> =>
    toolNamed(createBuiltinTools(options.limits), 'run_command').execute(input, contextFor(ws.path, { signal: options.signal }));

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

  // Inside the sandbox a process's pid is its PID namespace's: the tests find what is left on the
  // host by a marker in its command line (`sleep 30.<unique>`).
  it('kills every process of the command on timeout', async () => {
    const mark = uniqueSleep();
    const started = Date.now();
    const outcome = await run({ command: `sleep ${mark} & sleep ${mark}; echo never`, timeoutMs: 400 });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(outcome.isError).toBe(true);
    expect(outcome.output).toContain('[timed out after 400 ms; the command and every process it started were killed]');
    expect(outcome.output).not.toContain('never');
    expect(await noHostProcess(mark)).toBe(true);
  });

  it('kills every process of the command when the context is aborted', async () => {
    const mark = uniqueSleep();
    const controller = new AbortController();
    const started = Date.now();
    const running = run({ command: `sleep ${mark} & sleep ${mark}` }, { signal: controller.signal });
    // Aborted once the command runs (both sleeps are up), not at a guessed moment.
    await waitFor('both sleeps', async () => (hostProcessesWith(mark).length >= 2 ? true : undefined), 20_000);
    controller.abort();
    const outcome = await running;
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(outcome.isError).toBe(true);
    expect(outcome.output).toContain('[cancelled;');
    expect(await noHostProcess(mark)).toBe(true);
  });

  it('does not start when the context is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const outcome = await run({ command: 'touch started' }, { signal: controller.signal });
    expect(outcome).toEqual({ isError: true, output: 'command cancelled before it started' });
    expect(() => readFileSync(join(ws.path, 'started'))).toThrow();
  });

  it('given the context is aborted while the sandbox is being set up, then the command never runs', async () => {
    // The abort lands after the first check and before the command starts (the tool is still
    // resolving the workspace and preparing the sandbox): it must still be honoured.
    const mark = uniqueSleep();
    const controller = new AbortController();
    const started = Date.now();
    const running = run({ command: `touch started; sleep ${mark}` }, { signal: controller.signal });
    controller.abort();
    const outcome = await running;
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(outcome).toEqual({ isError: true, output: 'command cancelled before it started' });
    expect(existsSync(join(ws.path, 'started'))).toBe(false);
    expect(await noHostProcess(mark)).toBe(true);
  });

  it.each([
    ['a background job', (m: string) => `sleep ${m} &`],
    ['setsid', (m: string) => `(setsid sh -c 'sleep ${m}' &)`],
    ['nohup', (m: string) => `nohup sleep ${m} >/dev/null 2>&1 &`],
    ['a double fork', (m: string) => `sh -c '(sleep ${m} &) &'`],
    ['disown', (m: string) => `bash -c 'sleep ${m} & disown'`],
  ])('does not let %s outlive the command', async (_what, command) => {
    const mark = uniqueSleep();
    const started = Date.now();
    const outcome = await run({ command: command(mark) });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(outcome.isError).toBe(false);
    expect(await noHostProcess(mark)).toBe(true);
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
    const mark = uniqueSleep();
    // A process of its own (from dist/, as `triad serve` runs it) runs a command that starts a
    // background process and waits; it is then killed with no chance to clean up.
    const tool = join(__dirname, '..', '..', '..', 'dist', 'team', 'tools', 'builtin-tools.js');
    const script = `const { createBuiltinTools } = require(${JSON.stringify(tool)});
      const cmd = createBuiltinTools().find((t) => t.name === 'run_command');
      cmd.execute({ command: 'sleep ${mark} & echo $! > bg.pid; sleep ${mark}' }, { runId: 'r', role: 'executor', workspace: process.cwd(), signal: new AbortController().signal });`;
    const holder = spawn(process.execPath, ['-e', script], { cwd: ws.path, stdio: 'ignore' });
    await pidWrittenTo('bg.pid');
    // `$!` is known once the shell forked; the child may not have become `sleep` yet.
    await waitFor('the background sleep', async () => (hostProcessesWith(mark).length > 0 ? true : undefined), 20_000);
    holder.kill('SIGKILL');
    expect(await noHostProcess(mark, 10_000)).toBe(true);
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

    it("is an allow-list: none of the server's variables but PATH, LANG, TERM and the like, whatever they are called", async () => {
      const outcome = await run({ command: 'env; tr "\\0" "\\n" < /proc/1/environ; tr "\\0" "\\n" < /proc/$PPID/environ' });
      expect(outcome.isError).toBe(false);
      for (const [name, value] of Object.entries(planted)) {
        expect(outcome.output).not.toContain(name);
        expect(outcome.output).not.toContain(value);
      }
      expect(outcome.output).toContain('PATH=');
      expect(outcome.output).toContain('HOME=/tmp');
    });

    it('keeps PATH, LANG and TERM, sets a private home and a git identity, and drops the rest', () => {
      expect(
        sandboxEnvironment({ PATH: '/bin', LANG: 'C.UTF-8', TERM: 'xterm', HOME: '/root', NPM_TOKEN: 'x', TRIAD_MODEL: 'x', HOME_PAGE: 'https://example.com/' }, { home: '/root' }),
      ).toEqual({
        PATH: '/bin',
        LANG: 'C.UTF-8',
        TERM: 'xterm',
        HOME: '/root',
        TMPDIR: '/tmp',
        GIT_AUTHOR_NAME: 'triad agent',
        GIT_AUTHOR_EMAIL: 'agent@triad.invalid',
        GIT_COMMITTER_NAME: 'triad agent',
        GIT_COMMITTER_EMAIL: 'agent@triad.invalid',
      });
    });
  });
});

async function noHostProcess(mark: string, withinMs = 5000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (hostProcessesWith(mark).length > 0) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return true;
}
