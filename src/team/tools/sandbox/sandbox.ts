import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Cgroups, type SandboxCgroup } from './cgroup';
import { NetworkProxy, type HostCredentials } from './network-proxy';
import {
  bubblewrapArgs,
  DEFAULT_SANDBOX_LIMITS,
  ETC_READ_ONLY,
  launcherScript,
  parseNetworkAllowList,
  proxyEnvironment,
  sandboxEnvironment,
  SYSTEM_READ_ONLY,
  type SandboxLimits,
  type SandboxMode,
  type SandboxSpec,
} from './sandbox-policy';

/**
 * The OS sandbox every process a tool starts runs in (run_command, stdio MCP servers): Debian's
 * bubblewrap, run directly. Opened once per process: it looks for `bwrap`, `prlimit` and `socat`,
 * starts one empty sandbox to prove the namespaces work here, and finds a cgroup for the limits.
 * Where it cannot start, commands are refused with the fix, unless the operator opted out
 * (`TRIAD_SANDBOX=off`).
 */

export interface SandboxSettings {
  mode: SandboxMode;
  limits: SandboxLimits;
  /** The allow-list a role gets when its run names none (TRIAD_SANDBOX_NETWORK). */
  defaultNetwork: string[];
  /** Server variables passed in by name (TRIAD_SANDBOX_ENV). */
  passEnv: string[];
  /** More host paths visible read-only in every sandbox (TRIAD_SANDBOX_PATHS), e.g. a Node.js outside /usr. */
  readOnlyPaths: string[];
  /** Headers the network proxy adds per host (TRIAD_SANDBOX_CREDENTIALS_FILE). */
  credentials: HostCredentials;
}

export const DEFAULT_SANDBOX_SETTINGS: Readonly<SandboxSettings> = Object.freeze({
  mode: 'bubblewrap' as SandboxMode,
  limits: DEFAULT_SANDBOX_LIMITS,
  defaultNetwork: [],
  passEnv: [],
  readOnlyPaths: [],
  credentials: {},
});

export type SandboxStatus =
  | { mode: 'off' }
  | { mode: 'bubblewrap'; ready: true; version: string; processLimit: 'cgroup' | 'rlimit'; memoryLimit: 'cgroup' | 'rlimit'; network: boolean }
  | { mode: 'bubblewrap'; ready: false; problem: string };

/** What a caller asks of one sandbox. */
export interface SandboxRequest {
  /** Host paths writable inside (at the same path). */
  writable: string[];
  readOnly?: string[];
  cwd: string;
  /** Hosts the sandbox may reach through the proxy; empty: no network at all. */
  network: readonly string[];
  /** Variables set inside besides the allow-list (an MCP server's `env`). */
  env?: Record<string, string>;
  /** The private home; default `/tmp` (the sandbox's own tmpfs). */
  home?: string;
}

/** One prepared sandbox: the program line to run, and what to clean up after it. */
export interface PreparedSandbox {
  /** Put before the program and its arguments: prlimit, bwrap and the launcher (empty when off). */
  prefix: string[];
  /** The environment of the first process started (inside: the same, set again by bwrap). */
  env: Record<string, string>;
  /** The directory the first process starts in (on the host). */
  hostCwd: string;
  cgroup?: SandboxCgroup;
  proxy?: NetworkProxy;
  /** Closes the proxy, removes the cgroup and the temporary folder. */
  dispose(): Promise<void>;
}

export class SandboxUnavailableError extends Error {
  override readonly name = 'SandboxUnavailableError';
}

/** What probing the host found: its status, the programs, the system layout and the cgroups. */
interface Probe {
  status: SandboxStatus;
  tools: { bwrap: string; prlimit: string; socat?: string };
  system: SandboxSpec['system'];
  cgroups?: Cgroups;
}

export class Sandbox {
  private probed?: Probe;

  private constructor(
    readonly settings: SandboxSettings,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /**
   * The sandbox of these settings. The host is probed once, when first asked (a few
   * milliseconds: one empty sandbox): a process that never runs a command, or asks what its
   * sandbox can do, pays nothing at start.
   */
  static open(settings: SandboxSettings = DEFAULT_SANDBOX_SETTINGS, env: NodeJS.ProcessEnv = process.env): Sandbox {
    return new Sandbox(settings, env);
  }

  get status(): SandboxStatus {
    return this.probe().status;
  }

  /** `off`, `bubblewrap` (ready) or `unavailable`: one word for `serve`'s start line and /health. */
  get state(): 'off' | 'bubblewrap' | 'unavailable' {
    const s = this.status;
    return s.mode === 'off' ? 'off' : s.ready ? 'bubblewrap' : 'unavailable';
  }

  private probe(): Probe {
    this.probed ??= probeHost(this.settings, this.env);
    return this.probed;
  }

  get usable(): boolean {
    return this.status.mode === 'off' || this.status.ready;
  }

  /** The one line a tool answers with when it cannot run for want of a sandbox. */
  refusal(what: string): string {
    const s = this.status;
    if (s.mode === 'off' || s.ready) return '';
    return `${what} needs the OS sandbox, which cannot start: ${s.problem}. Install it (apt-get install bubblewrap) or set TRIAD_SANDBOX=off to run tools unsandboxed`;
  }

  /** One line for `serve`'s start and /health. */
  describe(): string {
    const s = this.status;
    if (s.mode === 'off') return 'off (TRIAD_SANDBOX=off): commands and MCP servers run as the server, with its files and network';
    if (!s.ready) return `unavailable: ${s.problem}; run_command and stdio MCP servers are refused (apt-get install bubblewrap, or TRIAD_SANDBOX=off)`;
    return `bubblewrap (${s.version}); processes limited by ${s.processLimit === 'cgroup' ? 'a pids cgroup' : 'RLIMIT_NPROC (not enforced for root)'}, memory by ${s.memoryLimit === 'cgroup' ? 'a memory cgroup' : 'RLIMIT_DATA per process'}${s.network ? '' : '; no socat: allow-listed network unavailable'}`;
  }

  /** Sets up one sandbox (proxy, cgroup, arguments). Throws SandboxUnavailableError when it cannot. */
  async prepare(request: SandboxRequest, serverEnv: NodeJS.ProcessEnv = process.env): Promise<PreparedSandbox> {
    const limits = this.settings.limits;
    const home = request.home ?? '/tmp';
    if (this.status.mode === 'off') {
      const env = sandboxEnvironment(serverEnv, { home: serverEnv.HOME ?? '/tmp', extraNames: this.settings.passEnv, fixed: request.env ?? {} });
      return { prefix: [], env, hostCwd: request.cwd, dispose: async () => undefined };
    }
    if (!this.status.ready) throw new SandboxUnavailableError(this.refusal('this tool'));
    const parsed = parseNetworkAllowList(request.network, 'network');
    if ('problem' in parsed) throw new SandboxUnavailableError(parsed.problem);
    const withNetwork = parsed.patterns.length > 0;
    const { tools, system, cgroups } = this.probe();
    if (withNetwork && !tools.socat) throw new SandboxUnavailableError('this run allows network hosts, but socat is not installed for the sandbox\'s network bridge (apt-get install socat)');
    const fixed = { ...(withNetwork ? proxyEnvironment() : {}), ...(request.env ?? {}) };
    const env = sandboxEnvironment(serverEnv, { home, extraNames: this.settings.passEnv, fixed });
    let temp: string | undefined;
    let proxy: NetworkProxy | undefined;
    let cgroup: SandboxCgroup | undefined;
    const dispose = async (): Promise<void> => {
      const problems: unknown[] = [];
      await proxy?.close().catch((err: unknown) => problems.push(err));
      await cgroup?.remove().catch((err: unknown) => problems.push(err));
      if (temp) rmSync(temp, { recursive: true, force: true });
      if (problems.length > 0) throw problems[0];
    };
    try {
      let proxySocket: string | undefined;
      if (withNetwork) {
        temp = mkdtempSync(join(tmpdir(), 'triad-sandbox-'));
        proxySocket = join(temp, 'proxy.sock');
        proxy = new NetworkProxy(parsed.patterns, this.settings.credentials);
        await proxy.listen(proxySocket);
      }
      if (cgroups) cgroup = await cgroups.create(limits);
      const spec: SandboxSpec = {
        writable: request.writable,
        readOnly: [...this.settings.readOnlyPaths.filter((p) => existsSync(p)), ...(request.readOnly ?? [])],
        cwd: request.cwd,
        env,
        ...(proxySocket ? { proxySocket } : {}),
        system,
      };
      const rlimits = [`--cpu=${limits.maxCpuSeconds}`, `--fsize=${limits.maxFileBytes}`, `--core=0`];
      // A memory cgroup holds the whole sandbox and says when it stopped it; without one, each process's own limit.
      if (!cgroup || !cgroups?.limitsMemory) rlimits.push(`--data=${limits.maxMemoryBytes}`);
      // Without a pids cgroup, RLIMIT_NPROC is the limit (the kernel enforces it for any user but root).
      if (!cgroup) rlimits.push(`--nproc=${limits.maxProcesses}`);
      const prefix = [tools.prlimit, ...rlimits, '--', tools.bwrap, ...bubblewrapArgs(spec), '--', '/bin/sh', '-c', launcherScript(withNetwork), 'sandbox'];
      return { prefix, env, hostCwd: '/', ...(cgroup ? { cgroup } : {}), ...(proxy ? { proxy } : {}), dispose };
    } catch (err) {
      await dispose().catch(() => undefined); // the setup's own error is the one to report
      throw err;
    }
  }
}

/** Looks for bwrap, prlimit and socat, starts one empty sandbox, and finds a cgroup for the limits. */
function probeHost(settings: SandboxSettings, env: NodeJS.ProcessEnv): Probe {
  const system = systemLayout();
  if (settings.mode === 'off') return { status: { mode: 'off' }, tools: { bwrap: '', prlimit: '' }, system };
  const bwrap = findProgram('bwrap', env);
  const prlimit = findProgram('prlimit', env);
  const socat = findProgram('socat', env);
  const missing = (problem: string): Probe => ({ status: { mode: 'bubblewrap', ready: false, problem }, tools: { bwrap: bwrap ?? '', prlimit: prlimit ?? '' }, system });
  if (!bwrap) return missing('bubblewrap (bwrap) is not installed');
  if (!prlimit) return missing('prlimit (util-linux) is not installed');
  const version = spawnSync(bwrap, ['--version'], { encoding: 'utf8', env: {} }).stdout?.trim() ?? '';
  const probe = spawnSync(bwrap, [...bubblewrapArgs({ writable: [], readOnly: [], cwd: '/', env: { PATH: '/usr/bin:/bin' }, system }), '--', 'true'], { encoding: 'utf8', env: {}, timeout: 10_000 });
  if (probe.status !== 0) {
    const why = (probe.stderr || probe.error?.message || `exit ${probe.status}`).trim().split('\n')[0];
    return missing(`bubblewrap cannot start a sandbox here (${why}); user and PID namespaces must be allowed`);
  }
  const cgroups = Cgroups.detect();
  return {
    status: { mode: 'bubblewrap', ready: true, version, processLimit: cgroups ? 'cgroup' : 'rlimit', memoryLimit: cgroups?.limitsMemory ? 'cgroup' : 'rlimit', network: socat !== undefined },
    tools: { bwrap, prlimit, ...(socat ? { socat } : {}) },
    system,
    ...(cgroups ? { cgroups } : {}),
  };
}

/** Which system paths exist here: merged-/usr hosts have /bin, /lib… as links into /usr. */
function systemLayout(): SandboxSpec['system'] {
  const paths: string[] = [];
  const symlinks: Array<{ path: string; target: string }> = [];
  for (const path of SYSTEM_READ_ONLY) {
    try {
      const st = lstatSync(path);
      if (st.isSymbolicLink()) symlinks.push({ path, target: readlinkSync(path) });
      else if (st.isDirectory()) paths.push(path);
    } catch {
      // Not on this host (no /lib32 on most): nothing to show.
    }
  }
  const etc = ETC_READ_ONLY.filter((name) => existsSync(`/etc/${name}`));
  return { paths, etc, symlinks };
}

function findProgram(name: string, env: NodeJS.ProcessEnv): string | undefined {
  // The server's PATH; the usual places only when it has none.
  const dirs = (env.PATH !== undefined ? env.PATH.split(delimiter) : ['/usr/local/bin', '/usr/bin', '/bin']).filter(Boolean);
  for (const dir of dirs) {
    const file = join(dir, name);
    if (existsSync(file)) return file;
  }
  return undefined;
}
