/**
 * What a sandboxed process may see and do, as data, and the bubblewrap arguments that enforce it.
 * Pure: no process is started here (sandbox.ts does that). The boundary itself is the kernel's —
 * namespaces, a read-only system, one writable folder, no network — set up by bubblewrap; this
 * module only decides what to ask it for.
 */

import { formatBytes } from '../builtin/outcomes';

export type SandboxMode = 'bubblewrap' | 'off';

/** Limits of one sandboxed command (or MCP server), each configurable (TRIAD_SANDBOX_MAX_*). */
export interface SandboxLimits {
  /** Processes and threads alive at once in the sandbox (a pids cgroup; RLIMIT_NPROC where none). */
  maxProcesses: number;
  /**
   * Memory of the whole sandbox (a memory cgroup), and of each process (RLIMIT_DATA: its writable
   * private memory; not RLIMIT_AS, which V8's and WebAssembly's address-space reservations exceed).
   */
  maxMemoryBytes: number;
  /** CPU time per process (RLIMIT_CPU): SIGXCPU, then SIGKILL. */
  maxCpuSeconds: number;
  /** Largest file a process may write (RLIMIT_FSIZE): SIGXFSZ. */
  maxFileBytes: number;
  /** Output the command may write in all (stdout and stderr) before it is stopped. */
  maxOutputBytes: number;
}

export const DEFAULT_SANDBOX_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  maxProcesses: 256,
  maxMemoryBytes: 2 * 1024 ** 3,
  maxCpuSeconds: 300,
  maxFileBytes: 512 * 1024 ** 2,
  maxOutputBytes: 16 * 1024 ** 2,
});

/**
 * The system the sandbox sees, read-only: programs and libraries. `/etc` only in part — the files
 * programs need to run, resolve names and check certificates; never a file that may hold a
 * credential (`shadow`, `npmrc`, `pip.conf`, `ssh/`, …).
 */
export const SYSTEM_READ_ONLY = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/opt'] as const;
export const ETC_READ_ONLY = [
  'alternatives',
  'ca-certificates',
  'ca-certificates.conf',
  'ssl',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'nsswitch.conf',
  'passwd',
  'group',
  'hosts',
  'host.conf',
  'gai.conf',
  'resolv.conf',
  'protocols',
  'services',
  'mime.types',
  'magic',
  'magic.mime',
  'os-release',
  'debian_version',
  'gitconfig',
  'inputrc',
  'profile',
  'bash.bashrc',
  'environment',
  'locale.alias',
  'xdg',
] as const;

/** Variables always passed from the server's environment when set: none of them is a secret. */
export const PASSED_ENV = ['PATH', 'LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'TERM', 'TZ'] as const;
/** A PATH for when the server has none. */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Set in every sandbox: a private home, and an identity for `git commit` (no one's real name). */
export function baseEnvironment(home: string): Record<string, string> {
  return {
    HOME: home,
    TMPDIR: '/tmp',
    GIT_AUTHOR_NAME: 'triad agent',
    GIT_AUTHOR_EMAIL: 'agent@triad.invalid',
    GIT_COMMITTER_NAME: 'triad agent',
    GIT_COMMITTER_EMAIL: 'agent@triad.invalid',
  };
}

/**
 * The environment inside the sandbox: an allow-list, never the server's environment minus a
 * deny-list. `PASSED_ENV` and the operator's `extraNames` (TRIAD_SANDBOX_ENV) are copied from the
 * server's environment when set; `fixed` (a proxy address, an MCP server's own `env`) is added as is.
 */
export function sandboxEnvironment(
  serverEnv: NodeJS.ProcessEnv,
  options: { home: string; extraNames?: readonly string[]; fixed?: Record<string, string> },
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of [...PASSED_ENV, ...(options.extraNames ?? [])]) {
    const value = serverEnv[name];
    if (value !== undefined && value !== '') env[name] = value;
  }
  env.PATH ??= DEFAULT_PATH;
  Object.assign(env, baseEnvironment(options.home), options.fixed ?? {});
  return env;
}

/** Names an operator may not pass into a sandbox: triad's own configuration and anything named like a secret. */
const NEVER_PASSED = /^(TRIAD_|ANTHROPIC_|OPENAI_|PG|AWS_|GOOGLE_|AZURE_)|KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|COOKIE|SESSION/i;

/** Why `name` cannot be in TRIAD_SANDBOX_ENV, or undefined when it can. */
export function passedEnvProblem(name: string): string | undefined {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return `'${name}' is not a variable name`;
  if (NEVER_PASSED.test(name)) return `'${name}' may hold a secret or triad's own configuration; give credentials to the sandbox's network proxy instead (TRIAD_SANDBOX_CREDENTIALS_FILE)`;
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Network allow-lists

/**
 * One allow-list entry: a host name (`registry.npmjs.org`), a wildcard for its sub-domains
 * (`*.github.com`, which does not match `github.com` itself), or an IP address; optionally with a
 * port (`127.0.0.1:8080`, `[::1]:8080`). Without a port, 80 and 443 only.
 */
export interface HostPattern {
  host: string;
  wildcard: boolean;
  port?: number;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
export const MAX_NETWORK_ENTRIES = 50;

/** The entry parsed and lower-cased, or a message saying what is wrong with it. */
export function parseHostPattern(entry: string): HostPattern | string {
  const text = entry.trim().toLowerCase();
  if (text === '' || text.length > 260) return 'must be a host name, *.domain or an IP address, with an optional :port';
  let host = text;
  let port: number | undefined;
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/.exec(text);
  if (bracketed) {
    host = bracketed[1]!;
    if (bracketed[2] !== undefined) port = Number(bracketed[2]);
  } else if (/^[^:]+:\d{1,5}$/.test(text)) {
    const at = text.lastIndexOf(':');
    host = text.slice(0, at);
    port = Number(text.slice(at + 1));
  }
  if (port !== undefined && (port < 1 || port > 65535)) return 'has a port outside 1 to 65535';
  const wildcard = host.startsWith('*.');
  if (wildcard) host = host.slice(2);
  if (isIpLiteral(host)) {
    if (wildcard) return 'cannot put a wildcard on an IP address';
    return { host, wildcard, ...(port !== undefined ? { port } : {}) };
  }
  const labels = host.split('.');
  if (labels.length < (wildcard ? 2 : 1) || !labels.every((l) => LABEL.test(l))) return 'must be a host name, *.domain or an IP address, with an optional :port';
  return { host, wildcard, ...(port !== undefined ? { port } : {}) };
}

/** Parses a whole list; the first bad entry is reported with its place (`where[2]`). */
export function parseNetworkAllowList(entries: readonly string[], where: string): { patterns: HostPattern[]; normalised: string[] } | { problem: string } {
  if (entries.length > MAX_NETWORK_ENTRIES) return { problem: `${where} may hold at most ${MAX_NETWORK_ENTRIES} hosts` };
  // By their written form: duplicates once, in a stable order.
  const byForm = new Map<string, HostPattern>();
  for (const [i, entry] of entries.entries()) {
    const parsed = parseHostPattern(entry);
    if (typeof parsed === 'string') return { problem: `${where}[${i}] ${JSON.stringify(entry)} ${parsed}` };
    byForm.set(formatHostPattern(parsed), parsed);
  }
  const normalised = [...byForm.keys()].sort();
  return { patterns: normalised.map((form) => byForm.get(form)!), normalised };
}

export function formatHostPattern(p: HostPattern): string {
  const host = p.host.includes(':') ? `[${p.host}]` : p.host;
  return `${p.wildcard ? '*.' : ''}${host}${p.port !== undefined ? `:${p.port}` : ''}`;
}

/** True when a request for `host:port` is allowed by one of the patterns. */
export function hostAllowed(patterns: readonly HostPattern[], host: string, port: number): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
  return patterns.some((p) => {
    const portOk = p.port !== undefined ? p.port === port : port === 80 || port === 443;
    if (!portOk) return false;
    return p.wildcard ? h.endsWith(`.${p.host}`) : h === p.host;
  });
}

function isIpLiteral(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || (host.includes(':') && /^[0-9a-f:.]+$/.test(host));
}

// ---------------------------------------------------------------------------------------------
// bubblewrap's arguments

export interface SandboxSpec {
  /** Host paths bound read-write, at the same path inside (a run's workspace; an MCP server's own folder). */
  writable: readonly string[];
  /** Host paths bound read-only at the same path, besides the system (an MCP server's `paths`). */
  readOnly: readonly string[];
  /** The working directory inside. */
  cwd: string;
  /** The environment inside (also the bubblewrap process's own: it must hold no secret). */
  env: Record<string, string>;
  /** A Unix socket on the host to the network proxy, bound inside at PROXY_SOCKET; none: no network at all. */
  proxySocket?: string;
  /** Which of SYSTEM_READ_ONLY and /etc's entries exist on this host (sandbox.ts looks once). */
  system: { paths: readonly string[]; etc: readonly string[]; symlinks: ReadonlyArray<{ path: string; target: string }> };
}

/** Where the proxy's socket appears inside the sandbox, and the port its bridge listens on there. */
export const PROXY_SOCKET = '/run/triad/proxy.sock';
export const PROXY_PORT = 3128;

/**
 * bubblewrap's arguments for one sandbox, up to (not including) the program to run. Every
 * namespace unshared (user, PID, network, IPC, UTS, cgroup); no capabilities and no new user
 * namespaces inside; a new session (no terminal injection); killed with its parent; a fresh /proc
 * that shows only the sandbox's processes, a minimal /dev, a private /tmp.
 */
export function bubblewrapArgs(spec: SandboxSpec): string[] {
  const args = ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--hostname', 'sandbox'];
  for (const path of spec.system.paths) args.push('--ro-bind', path, path);
  for (const link of spec.system.symlinks) args.push('--symlink', link.target, link.path);
  for (const name of spec.system.etc) args.push('--ro-bind', `/etc/${name}`, `/etc/${name}`);
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--tmpfs', '/run');
  // After the tmpfs mounts, so that a path under /tmp (a test's workspace) is bound over them.
  for (const path of spec.readOnly) args.push('--ro-bind', path, path);
  for (const path of spec.writable) args.push('--bind', path, path);
  if (spec.proxySocket !== undefined) args.push('--dir', '/run/triad', '--bind', spec.proxySocket, PROXY_SOCKET);
  args.push('--chdir', spec.cwd, '--clearenv');
  for (const [name, value] of Object.entries(spec.env)) args.push('--setenv', name, value);
  return args;
}

/** The proxy variables a sandbox with network gets (curl, git, npm, pip and Node's fetch with them read these). */
export function proxyEnvironment(): Record<string, string> {
  const url = `http://127.0.0.1:${PROXY_PORT}`;
  // NODE_USE_ENV_PROXY: Node's own fetch and http honour the variables too (Node 22.21, 24 and later).
  return { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, ALL_PROXY: url, NO_PROXY: '', npm_config_proxy: url, npm_config_https_proxy: url, NODE_USE_ENV_PROXY: '1' };
}

/**
 * The shell line that starts a sandbox's program: with network, the bridge from the sandbox's own
 * loopback port to the proxy's socket first (socat), waited for until it listens; then `exec` of
 * the program, so that the program is the process whose exit ends the sandbox.
 */
export function launcherScript(withNetwork: boolean): string {
  if (!withNetwork) return 'exec "$@"';
  const port = PROXY_PORT.toString(16).toUpperCase().padStart(4, '0');
  return (
    `socat TCP-LISTEN:${PROXY_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${PROXY_SOCKET} </dev/null >/dev/null 2>&1 & ` +
    `i=0; while ! grep -q ':${port} 00000000:0000 0A' /proc/net/tcp 2>/dev/null; do i=$((i+1)); [ $i -gt 500 ] && { echo 'sandbox: the network bridge did not start' >&2; exit 125; }; sleep 0.01; done; ` +
    'exec "$@"'
  );
}

// ---------------------------------------------------------------------------------------------
// Limits reported to the agent

/** What a command's end says about the limits it hit, in words for the agent (undefined: none). */
export function limitHit(
  limits: SandboxLimits,
  end: { code: number | null; signal: NodeJS.Signals | null; pidsHit?: boolean; memoryHit?: boolean; outputHit?: boolean },
): string | undefined {
  const sig = end.signal ?? (end.code !== null && end.code > 128 ? SIGNAL_BY_NUMBER[end.code - 128] : undefined);
  if (end.outputHit) return `the command wrote more than its output limit of ${formatBytes(limits.maxOutputBytes)} and was stopped`;
  if (end.memoryHit) return `the command reached its memory limit of ${formatBytes(limits.maxMemoryBytes)} and was stopped`;
  if (sig === 'SIGXCPU') return `a process of the command used more than its CPU time limit of ${limits.maxCpuSeconds} s and was stopped`;
  if (sig === 'SIGXFSZ') return `a process of the command tried to write a file larger than its limit of ${formatBytes(limits.maxFileBytes)}`;
  if (end.pidsHit) return `the command tried to run more than its limit of ${limits.maxProcesses} processes at once; the extra ones could not start`;
  return undefined;
}

const SIGNAL_BY_NUMBER: Record<number, NodeJS.Signals> = { 9: 'SIGKILL', 24: 'SIGXCPU', 25: 'SIGXFSZ' };
