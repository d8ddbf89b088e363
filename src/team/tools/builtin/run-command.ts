import { type ChildProcess, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import type { ToolContext, ToolDefinition, ToolOutcome } from '../tool.port';
import { errnoCode, realWorkspaceOf, workspaceReplaced } from '../workspace';
import { HeadTailBuffer } from './head-tail-buffer';
import type { BuiltinToolLimits } from './limits';
import { SandboxUnavailableError, type PreparedSandbox, type Sandbox } from '../sandbox/sandbox';
import { limitHit, type SandboxLimits } from '../sandbox/sandbox-policy';
import { asMachineText, fail, formatBytes, formatDuration, fsFailure } from './outcomes';

/**
 * run_command: a shell command in the workspace, inside the OS sandbox (../sandbox/): the workspace
 * is the only writable place, no other process is visible, no network unless the run allows
 * hosts, an allow-listed environment, limits on processes, memory, CPU time, file size and output.
 * Every process it started ends with it (its own PID namespace), and its host process group is
 * killed on timeout or cancel.
 */

export function runCommandTool(limits: BuiltinToolLimits, sandboxOf: () => Sandbox): ToolDefinition {
  return {
    name: 'run_command',
    description:
      'Run a shell command (/bin/sh -c) in the workspace directory and return its combined stdout and stderr (at most ' +
      `${formatBytes(limits.commandOutputMaxBytes)}; the middle is cut) and exit code. A non-zero exit is reported as an error. ` +
      `Timeout defaults to ${formatDuration(limits.commandDefaultTimeoutMs)} (max ${formatDuration(limits.commandMaxTimeoutMs)}); ` +
      'It runs in a sandbox: the workspace is the only writable directory (plus a private /tmp), no other process is visible, ' +
      'there is no network unless the run allows hosts (then through an HTTP proxy: HTTP_PROXY is set), and processes, memory, CPU time, ' +
      'file size and output are limited. Every process the command started ends with it.',
    inputSchema: {
      type: 'object',
      properties: {
        command: { type: 'string', minLength: 1, description: 'The shell command line.' },
        timeoutMs: {
          type: 'integer',
          minimum: 1,
          maximum: limits.commandMaxTimeoutMs,
          description: `Milliseconds before the command is killed (default ${limits.commandDefaultTimeoutMs}).`,
        },
      },
      required: ['command'],
      additionalProperties: false,
    },
    readOnly: false,
    idempotent: false,
    risk: 'high',
    async execute(input, context) {
      const command = input.command as string;
      const timeoutMs = Math.min((input.timeoutMs as number | undefined) ?? limits.commandDefaultTimeoutMs, limits.commandMaxTimeoutMs);
      if (context.signal.aborted) return fail('command cancelled before it started');
      const sandbox = sandboxOf();
      if (!sandbox.usable) return fail(sandbox.refusal('run_command'));
      if (sandbox.status.mode === 'off' && context.sandboxMode === 'bubblewrap') {
        return fail('run_command was not run: this run was launched with the OS sandbox, and this process has it off (TRIAD_SANDBOX=off); a sandboxed process must drive it');
      }
      let cwd: string;
      try {
        cwd = await realWorkspaceOf(context);
        // Starting in a path follows a link planted in the workspace's place since the run resolved
        // it: the command would run in the link's target. Checked here (a path resolved just now
        // needs no second look); the same race as every path check.
        if (context.realWorkspace !== undefined && (await workspaceReplaced(cwd))) return fail('the workspace has been replaced by a link to somewhere else; the command was not run');
      } catch (err) {
        return fsFailure(err, '.', 'use the workspace');
      }
      let prepared: PreparedSandbox;
      try {
        prepared = await sandbox.prepare({ writable: [cwd], cwd, network: context.network ?? [] });
      } catch (err) {
        if (err instanceof SandboxUnavailableError) return fail(err.message);
        throw err;
      }
      try {
        // Cancelled while the workspace was resolved or the sandbox set up: an abort from then on
        // fires no listener (the signal has already fired), so it is read here, before anything runs.
        if (context.signal.aborted) return fail('command cancelled before it started');
        return await runCommand(command, cwd, timeoutMs, limits.commandOutputMaxBytes, context, prepared, sandbox.settings.limits);
      } finally {
        await prepared.dispose();
      }
    },
  };
}

/**
 * The command's first process: it waits for a line on fd 3 (sent once the watchdog is armed and
 * the process is in the sandbox's cgroup), closes it, and only then becomes the sandbox and its
 * `/bin/sh -c <command>` (same process, same group). Without the gate, this
 * process killed between spawning the command and spawning its watchdog (a few milliseconds, more
 * on a loaded machine) left the command running, unwatched.
 */
const GATED_SHELL = 'IFS= read -r _ <&3 || exit 125; exec 3<&-; exec "$@"';

/** A shell that kills process group `pgid` when its stdin closes: when the process holding the pipe is gone. */
function spawnWatchdog(pgid: number): ChildProcess | undefined {
  try {
    // No environment (nothing of triad's secrets) and the root as its directory (it holds no workspace open).
    const watchdog = spawn('/bin/sh', ['-c', 'read _; kill -s KILL -- "-$0" 2>/dev/null', String(pgid)], { stdio: ['pipe', 'ignore', 'ignore'], detached: true, env: {}, cwd: '/' });
    watchdog.once('error', () => undefined);
    watchdog.stdin?.on('error', () => undefined);
    watchdog.unref();
    return watchdog;
  } catch {
    return undefined;
  }
}

function runCommand(
  command: string,
  cwd: string,
  timeoutMs: number,
  maxOutput: number,
  context: ToolContext,
  sandbox: PreparedSandbox,
  limits: SandboxLimits,
): Promise<ToolOutcome> {
  return new Promise((resolve) => {
    const output = new HeadTailBuffer(maxOutput);
    let written = 0;
    let outputHit = false;
    // detached: the process leads a new process group, so one kill reaches the sandbox (whose PID
    // namespace ends everything in it). It runs the command only once it reads a line on fd 3.
    // Its environment is the sandbox's (no secret): bubblewrap's own process shows it in /proc.
    const child = spawn('/bin/sh', ['-c', GATED_SHELL, 'sh', ...sandbox.prefix, '/bin/sh', '-c', command], {
      cwd: sandbox.prefix.length > 0 ? sandbox.hostCwd : cwd,
      env: sandbox.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    // The command's group must not outlive this process, even killed with SIGKILL (no handler runs
    // then): a watchdog outside the group waits on a pipe that only this process holds open, and
    // when the pipe closes without being told the command ended (this process died), kills the
    // group. Otherwise a command left running would change a workspace that recovery has rebuilt.
    const watchdog = child.pid === undefined ? undefined : spawnWatchdog(child.pid);
    // Armed (or not to be had): the command may start. Killed before this line, this process
    // leaves a shell whose read fails, and nothing of the command ever runs unwatched.
    const gate = child.stdio[3] as Writable | null;
    gate?.on('error', () => undefined); // the process died before its gate opened: its exit is reported below
    let setupFailed: string | undefined;
    // In the cgroup before the gate opens, so that its limits hold from the command's first fork.
    const joined = sandbox.cgroup && child.pid !== undefined ? sandbox.cgroup.join(child.pid) : Promise.resolve();
    joined.then(
      () => gate?.end('\n'),
      (err: unknown) => {
        setupFailed = `the sandbox could not be set up: ${(err as Error).message}`;
        killGroup();
      },
    );
    let stopped: 'timeout' | 'cancelled' | undefined;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;
    let drainTimer: NodeJS.Timeout | undefined;

    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch (err) {
        if (errnoCode(err) !== 'ESRCH') throw err;
      }
    };
    const finish = (outcome: ToolOutcome): void => {
      if (settled) return;
      settled = true;
      // Told first (killed, not by closing its pipe), so it never signals a group id reused since.
      watchdog?.kill('SIGKILL');
      clearTimeout(timer);
      clearTimeout(drainTimer);
      context.signal.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    const report = (): void => {
      const text = output.text();
      const body = text === '' ? '(no output)' : text.endsWith('\n') ? text.slice(0, -1) : text;
      const refused = sandbox.proxy && sandbox.proxy.refused.size > 0 ? `\n[network: ${[...sandbox.proxy.refused].join(', ')} refused: not in this run's network allow-list]` : '';
      const limit = limitHit(limits, { code: exit?.code ?? null, signal: exit?.signal ?? null, outputHit, pidsHit: sandbox.cgroup?.pidsHit(), memoryHit: sandbox.cgroup?.memoryHit() });
      if (setupFailed !== undefined) {
        finish(fail(setupFailed));
      } else if (limit !== undefined && stopped === undefined) {
        finish(asMachineText(fail(`${body}${refused}\n[limit: ${limit}]\n[exit ${exit?.signal ? `signal ${exit.signal}` : `code ${exit?.code ?? -1}`}]`)));
      } else if (stopped === 'timeout') {
        finish(asMachineText(fail(`${body}\n[timed out after ${formatDuration(timeoutMs)}; the command and every process it started were killed]`)));
      } else if (stopped === 'cancelled') {
        finish(asMachineText(fail(`${body}\n[cancelled; the command and every process it started were killed]`)));
      } else if (exit?.signal) {
        finish(asMachineText(fail(`${body}\n[killed by signal ${exit.signal}]`)));
      } else {
        const code = exit?.code ?? -1;
        finish({ output: `${body}${refused}\n[exit code ${code}]`, isError: code !== 0, machineText: true });
      }
    };

    const timer = setTimeout(() => {
      stopped ??= 'timeout';
      killGroup();
    }, timeoutMs);
    const onAbort = (): void => {
      stopped ??= 'cancelled';
      killGroup();
    };
    context.signal.addEventListener('abort', onAbort, { once: true });

    // Piped (stdio above): never null.
    const [stdout, stderr] = [child.stdout!, child.stderr!];
    const onData = (chunk: Buffer): void => {
      written += chunk.length;
      if (written > limits.maxOutputBytes) {
        if (!outputHit) {
          outputHit = true;
          killGroup();
        }
        return;
      }
      output.push(chunk);
    };
    stdout.on('data', onData);
    stderr.on('data', onData);
    child.once('error', (err) => {
      killGroup();
      finish(fail(`could not start the command: ${errnoCode(err) ?? err.message}`));
    });
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      // Leftover background processes would hold the output pipes open and outlive the run.
      killGroup();
      // The group is gone: its id may be reused from now on, so the watchdog goes too.
      watchdog?.kill('SIGKILL');
      // A process that left the group (setsid) may still hold the pipes: stop waiting for it.
      drainTimer = setTimeout(() => {
        stdout.destroy();
        stderr.destroy();
        report();
      }, 2000);
    });
    child.once('close', () => report());
  });
}
