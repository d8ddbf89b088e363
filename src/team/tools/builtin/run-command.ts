import { type ChildProcess, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import type { ToolContext, ToolDefinition, ToolOutcome } from '../tool.port';
import { errnoCode, realWorkspaceOf, workspaceReplaced } from '../workspace';
import { HeadTailBuffer } from './head-tail-buffer';
import type { BuiltinToolLimits } from './limits';
import { asMachineText, fail, formatBytes, formatDuration, fsFailure } from './outcomes';

/** run_command: a shell command in the workspace, its process group killed on timeout or cancel. */

const SECRET_NAME = /KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL/i;
/** A URL with a password in it (`postgres://user:pass@host`), whatever the variable is called. */
const URL_WITH_PASSWORD = /^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*:[^/@\s]*@/i;

/**
 * The environment a command runs with: the orchestrator's own, minus anything that looks like a
 * secret and minus triad's and Anthropic's configuration. The model must not be able to print keys.
 */
export function commandEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (SECRET_NAME.test(name) || /^ANTHROPIC_/i.test(name) || /^TRIAD_/i.test(name)) continue;
    if (URL_WITH_PASSWORD.test(value)) continue;
    clean[name] = value;
  }
  return clean;
}

export function runCommandTool(limits: BuiltinToolLimits): ToolDefinition {
  return {
    name: 'run_command',
    description:
      'Run a shell command (/bin/sh -c) in the workspace directory and return its combined stdout and stderr (at most ' +
      `${formatBytes(limits.commandOutputMaxBytes)}; the middle is cut) and exit code. A non-zero exit is reported as an error. ` +
      `Timeout defaults to ${formatDuration(limits.commandDefaultTimeoutMs)} (max ${formatDuration(limits.commandMaxTimeoutMs)}); ` +
      'on timeout every process the command started is killed, and background processes do not outlive the command. ' +
      'Secrets are removed from the environment.',
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
      return runCommand(command, cwd, timeoutMs, limits.commandOutputMaxBytes, context);
    },
  };
}

/**
 * The command's shell: it waits for a line on fd 3 (sent once the watchdog is armed), closes it,
 * and only then becomes `/bin/sh -c <command>` (same process, same group). Without the gate, this
 * process killed between spawning the command and spawning its watchdog (a few milliseconds, more
 * on a loaded machine) left the command running, unwatched.
 */
const GATED_SHELL = 'IFS= read -r _ <&3 || exit 125; exec 3<&-; exec /bin/sh -c "$1"';

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

function runCommand(command: string, cwd: string, timeoutMs: number, maxOutput: number, context: ToolContext): Promise<ToolOutcome> {
  return new Promise((resolve) => {
    const output = new HeadTailBuffer(maxOutput);
    // detached: the shell leads a new process group, so one kill reaches everything it started.
    // It runs the command only once it reads a line on fd 3, sent below once the watchdog is armed.
    const child = spawn('/bin/sh', ['-c', GATED_SHELL, 'sh', command], {
      cwd,
      env: commandEnvironment(process.env),
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
    gate?.on('error', () => undefined);
    gate?.end('\n');
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
      if (stopped === 'timeout') {
        finish(asMachineText(fail(`${body}\n[timed out after ${formatDuration(timeoutMs)}; the command and every process it started were killed]`)));
      } else if (stopped === 'cancelled') {
        finish(asMachineText(fail(`${body}\n[cancelled; the command and every process it started were killed]`)));
      } else if (exit?.signal) {
        finish(asMachineText(fail(`${body}\n[killed by signal ${exit.signal}]`)));
      } else {
        const code = exit?.code ?? -1;
        finish({ output: `${body}\n[exit code ${code}]`, isError: code !== 0, machineText: true });
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
    stdout.on('data', (chunk: Buffer) => output.push(chunk));
    stderr.on('data', (chunk: Buffer) => output.push(chunk));
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
