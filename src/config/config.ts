import { HUMAN_ROLES as VALID_ROLES } from '../auth/roles';
import { isIP } from 'node:net';
import { join, relative, resolve } from 'node:path';
import { homedir } from 'node:os';
import { PG_SCHEMA_NAME } from '../shared/postgres-tables';
import { DEFAULT_RETRY_DELAYS_MS } from '../team/domain/resilience/policies';
import { normaliseName } from '../auth/names';
import { readFileSync } from 'node:fs';
import { McpConfigError, parseMcpConfig, secretsIn, type McpConfig } from '../team/tools/mcp/mcp-config';
import { DEFAULT_SANDBOX_LIMITS, parseNetworkAllowList, passedEnvProblem } from '../team/tools/sandbox/sandbox-policy';
import type { SandboxSettings } from '../team/tools/sandbox/sandbox';
import { isAbsolute } from 'node:path';
import { duplicateKeyIn, duplicateKeyMessage } from '../shared/strict-json';
import { LOG_LEVEL_SETTINGS, type LogLevelSetting } from '../observability/log-format';
import type { OperatorPriceRow } from '../team/domain/pricing';
import { carriesCredentials } from '../team/domain/model-pin';

/**
 * All configuration comes from the environment, read and validated in this one place.
 * Secrets are kept here and never logged: `describeConfig` prints a redacted view.
 *
 * One file over 400 lines on purpose: every variable's name, default, range and refusal message
 * is here, so that one read shows what a deployment can set and how each value is checked (the
 * parsers of structured values — MCP servers, sandbox policy, retry delays — are their modules').
 */

export type StoreKind = 'sqlite' | 'postgres' | 'esdb' | 'memory';
export type ModelKind = 'offline' | 'anthropic' | 'openai';

export interface ApiKeyEntry {
  name: string;
  roles: string[];
  secret: string;
}

export interface HttpEdgeSettings {
  /**
   * Host names (and IP addresses) a request's Host may name, lowercase, IPv6 in brackets; `*`
   * alone: any. Default on a loopback address: the address, `localhost`, `127.0.0.1` and `[::1]`.
   */
  allowedHosts: string[];
  /** A request's headers must arrive within this long (Node's headersTimeout). */
  headersTimeoutMs: number;
  /** A whole request, body included, must arrive within this long (Node's requestTimeout). */
  requestTimeoutMs: number;
  /** Failed authentications one client address may make per window before it is refused (429). */
  authFailuresPerWindow: number;
  authFailureWindowMs: number;
  /** When set, `GET /metrics` needs `Authorization: Bearer <this>`. Never printed. */
  metricsKey?: string;
}

export interface TriadConfig {
  dataDir: string;
  store: StoreKind;
  pgUrl?: string;
  esdbUrl?: string;
  port: number;
  host: string;
  apiKeys: ApiKeyEntry[];
  model: ModelKind;
  anthropicApiKey?: string;
  anthropicBaseUrl?: string;
  /** The OpenAI-compatible provider's key; absent with a base URL: a server that needs none (Ollama, llama.cpp). */
  openaiApiKey?: string;
  /** Any Chat-Completions-compatible server; absent: OpenAI's. */
  openaiBaseUrl?: string;
  /** PostgreSQL schema holding triad's tables (default `public`). */
  pgSchema?: string;
  /** Connections in this process's PostgreSQL pool (its LISTEN connection is one more). */
  pgPoolSize: number;
  /** Run leases: how long one lasts without a heartbeat. */
  leaseTtlMs: number;
  /** Runs one process drives at once; launches beyond it go to a less-loaded process, or wait queued. */
  maxActiveRuns: number;
  /** How often `triad serve` looks for runs to recover. */
  recoveryIntervalMs: number;
  /** How often review timeouts are checked. */
  reviewTimerIntervalMs: number;
  /** A checkpoint every N model turns (and at every phase boundary). */
  checkpointEveryTurns: number;
  /** A wait per offline model call, for demos and load tests (0: none). */
  offlineLatencyMs: number;
  /** How long a model call may go without a byte from the Messages API before it fails as `timeout` (and is retried). */
  modelIdleTimeoutMs: number;
  /** Waits before each retry of a transient model fault, for runs launched without their own. */
  modelRetryDelaysMs: number[];
  /** MCP servers from the file named by `TRIAD_MCP_CONFIG` (none without it). */
  mcp?: McpConfig;
  /** The operator's rows of the price table, from the file named by `TRIAD_MODEL_PRICES` (none without it). */
  modelPrices?: Record<string, OperatorPriceRow>;
  /** Lifetime of a web console session from sign-in. */
  sessionTtlMs: number;
  /** Express's `trust proxy`: whether X-Forwarded-Proto/-Host name the request's origin (false: not trusted). */
  trustProxy: boolean | number | string;
  /** The edge of the HTTP server (TRIAD_ALLOWED_HOSTS, TRIAD_HEADERS_TIMEOUT_MS, …): see docs/API.md, "Request rules". */
  http: HttpEdgeSettings;
  /** The OS sandbox of run_command and stdio MCP servers (TRIAD_SANDBOX and TRIAD_SANDBOX_*). */
  sandbox: SandboxSettings;
  /** The server's signing key and the keys it trusts besides its own (TRIAD_SIGNING_KEY_FILE, TRIAD_TRUSTED_KEYS). */
  signing: SigningSettings;
  /** Where passkeys are enrolled and used (TRIAD_WEBAUTHN_RP_ID, TRIAD_WEBAUTHN_ORIGINS). */
  webauthn: WebAuthnSettings;
  /** The server's address as people reach it (TRIAD_PUBLIC_URL): links in webhooks. */
  publicUrl: string;
  /** Outbound webhooks: how long one attempt may take, and the retry schedule (TRIAD_WEBHOOK_*). */
  webhooks: WebhookSettings;
}

export interface WebhookSettings {
  /** One attempt's limit, from connecting to the end of the answer. */
  timeoutMs: number;
  /** The first retry's wait at most (jittered); each next one up to twice the last. */
  retryBaseMs: number;
  /** No wait between attempts is longer. */
  retryMaxMs: number;
  /** A delivery not acknowledged this long after its first attempt fails for good. */
  giveUpAfterMs: number;
}

export interface WebAuthnSettings {
  /** The passkeys' relying party id, a domain; unset: the host of the origins, or of the request. */
  rpId?: string;
  /** The console's origins a passkey may be used from; empty: the origin each request reached. */
  origins: string[];
}

export interface SigningSettings {
  /** The Ed25519 private key (PKCS#8 PEM), made on first start when missing; never inside the data directory. */
  keyFile: string;
  /** Public keys of other processes sharing the store (base64 SPKI DER), whose decisions this one acts on. */
  trustedKeys: string[];
  /** TRIAD_REQUIRE_SIGNED_DECISIONS=1: human decisions must carry the person's own signature. */
  requireSignedDecisions: boolean;
}

/**
 * Runs a process drives at once by default. A driver mostly waits on its model, so one process
 * holds many; the cap bounds its memory, open model streams and event-loop work, and spreads a
 * burst of launches over the processes sharing a store.
 */
export const DEFAULT_MAX_ACTIVE_RUNS = 100;

/**
 * Connections a process keeps to PostgreSQL by default. Appends in flight are bounded by it; the
 * processes sharing a database together must stay under its `max_connections` (100 by default).
 */
export const DEFAULT_PG_POOL_SIZE = 10;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** The human roles an API key may carry (the table is auth/roles.ts). */
export { VALID_ROLES };

/**
 * setTimeout's longest wait (2^31 - 1 ms, about 24.8 days): a longer one fires at once, so an
 * interval or latency past it is refused rather than turned into a busy loop.
 */
const MAX_TIMER_MS = 2_147_483_647;
/** The longest model idle timeout: Node's fetch (undici) ends a body silent for 300 s by itself. */
export const MAX_MODEL_IDLE_TIMEOUT_MS = 300_000;
/** A lease's longest lifetime: a day (a crashed process's runs wait this long for another to take them). */
const MAX_LEASE_TTL_MS = 86_400_000;
/** A console session's longest lifetime: a year. */
const MAX_SESSION_TTL_MS = 365 * 24 * 60 * 60 * 1000;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): TriadConfig {
  const store = (env.TRIAD_STORE || 'sqlite') as StoreKind;
  if (!['sqlite', 'postgres', 'esdb', 'memory'].includes(store)) {
    throw new ConfigError(`TRIAD_STORE must be sqlite, postgres, esdb or memory, got '${shown(store)}'`);
  }
  if (store === 'postgres' && !env.TRIAD_PG_URL) throw new ConfigError('TRIAD_STORE=postgres needs TRIAD_PG_URL');
  if (store === 'esdb' && !env.TRIAD_ESDB_URL) throw new ConfigError('TRIAD_STORE=esdb needs TRIAD_ESDB_URL');
  if (store === 'postgres') checkPgUrl(env.TRIAD_PG_URL!);
  const pgSchema = env.TRIAD_PG_SCHEMA || undefined;
  if (pgSchema !== undefined) checkPgSchema(pgSchema);
  const rawPort = env.TRIAD_PORT;
  const port = rawPort === undefined || rawPort === '' ? 3000 : /^\d{1,5}$/.test(rawPort) ? Number(rawPort) : NaN;
  if (!Number.isInteger(port) || port > 65535) throw new ConfigError(`TRIAD_PORT must be a port number from 0 to 65535 (0: any free port), got '${shown(rawPort ?? '')}'`);
  const host = env.TRIAD_HOST || '127.0.0.1';
  if (!isIP(host) && !HOST_NAME.test(host)) {
    throw new ConfigError(`TRIAD_HOST must be an IP address or a host name (no port), got '${shown(host)}'`);
  }
  const dataDir = env.TRIAD_DATA_DIR || './.triad';
  if (dataDir.trim() === '') throw new ConfigError('TRIAD_DATA_DIR is blank');
  const requested = env.TRIAD_MODEL;
  if (requested !== undefined && requested !== '' && requested !== 'offline' && requested !== 'anthropic' && requested !== 'openai') {
    throw new ConfigError(`TRIAD_MODEL must be offline, anthropic or openai, got '${shown(requested)}'`);
  }
  const anthropicApiKey = env.ANTHROPIC_API_KEY || undefined;
  // Never echoed: it is a secret.
  if (anthropicApiKey !== undefined && /\s/.test(anthropicApiKey)) throw new ConfigError('ANTHROPIC_API_KEY holds whitespace (a key has none)');
  if (requested === 'anthropic' && !anthropicApiKey) throw new ConfigError('TRIAD_MODEL=anthropic needs ANTHROPIC_API_KEY');
  const anthropicBaseUrl = env.ANTHROPIC_BASE_URL || undefined;
  if (anthropicBaseUrl !== undefined) {
    checkHttpUrl('ANTHROPIC_BASE_URL', anthropicBaseUrl);
    refuseCredentials('ANTHROPIC_BASE_URL', anthropicBaseUrl, 'ANTHROPIC_API_KEY');
  }
  const openai = openaiEnv(env);
  if (requested === 'openai' && !openai.openaiApiKey && !openai.openaiBaseUrl) {
    throw new ConfigError('TRIAD_MODEL=openai needs OPENAI_API_KEY, or OPENAI_BASE_URL for a server that takes no key');
  }
  const model: ModelKind = requested === 'openai' ? 'openai' : requested === 'offline' || !anthropicApiKey ? 'offline' : 'anthropic';
  return {
    dataDir: resolve(dataDir),
    store,
    pgUrl: env.TRIAD_PG_URL || undefined,
    esdbUrl: env.TRIAD_ESDB_URL || undefined,
    port,
    host,
    apiKeys: parseApiKeys(env.TRIAD_API_KEYS ?? ''),
    model,
    anthropicApiKey,
    anthropicBaseUrl,
    ...openai,
    pgSchema,
    pgPoolSize: intEnv(env, 'TRIAD_PG_POOL_SIZE', DEFAULT_PG_POOL_SIZE, 1, 1000),
    leaseTtlMs: intEnv(env, 'TRIAD_LEASE_TTL_MS', 15_000, 100, MAX_LEASE_TTL_MS),
    maxActiveRuns: intEnv(env, 'TRIAD_MAX_ACTIVE_RUNS', DEFAULT_MAX_ACTIVE_RUNS, 1, 1_000_000),
    recoveryIntervalMs: intEnv(env, 'TRIAD_RECOVERY_INTERVAL_MS', 5_000, 0, MAX_TIMER_MS),
    reviewTimerIntervalMs: intEnv(env, 'TRIAD_REVIEW_TIMER_MS', 1_000, 0, MAX_TIMER_MS),
    checkpointEveryTurns: intEnv(env, 'TRIAD_CHECKPOINT_EVERY_TURNS', 100, 1, 1_000_000),
    offlineLatencyMs: intEnv(env, 'TRIAD_OFFLINE_LATENCY_MS', 0, 0, MAX_TIMER_MS),
    // At most 5 min: Node's HTTP client ends a response body silent for that long on its own.
    modelIdleTimeoutMs: intEnv(env, 'TRIAD_MODEL_IDLE_TIMEOUT_MS', MAX_MODEL_IDLE_TIMEOUT_MS, 1_000, MAX_MODEL_IDLE_TIMEOUT_MS),
    modelRetryDelaysMs: retryDelaysEnv(env, 'TRIAD_MODEL_RETRY_DELAYS_MS'),
    ...(env.TRIAD_MCP_CONFIG ? { mcp: loadMcpConfig(env.TRIAD_MCP_CONFIG, env) } : {}),
    ...(env.TRIAD_MODEL_PRICES ? { modelPrices: loadModelPrices(env.TRIAD_MODEL_PRICES) } : {}),
    sessionTtlMs: intEnv(env, 'TRIAD_SESSION_TTL_MS', 8 * 60 * 60 * 1000, 1000, MAX_SESSION_TTL_MS),
    trustProxy: trustProxyEnv(env.TRIAD_TRUST_PROXY),
    http: httpEdgeSettings(env, host),
    sandbox: sandboxSettings(env),
    signing: signingSettings(env, resolve(dataDir)),
    webauthn: webauthnSettings(env),
    publicUrl: publicUrlEnv(env, host, port),
    webhooks: {
      timeoutMs: intEnv(env, 'TRIAD_WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
      retryBaseMs: intEnv(env, 'TRIAD_WEBHOOK_RETRY_BASE_MS', 1_000, 10, MAX_TIMER_MS),
      retryMaxMs: intEnv(env, 'TRIAD_WEBHOOK_RETRY_MAX_MS', 10 * 60_000, 10, MAX_TIMER_MS),
      giveUpAfterMs: intEnv(env, 'TRIAD_WEBHOOK_GIVE_UP_MS', 24 * 60 * 60_000, 1_000, 30 * 24 * 60 * 60_000),
    },
  };
}

/**
 * TRIAD_LOG_LEVEL: how much `triad serve` logs (`log` by default: what it does, warnings, errors;
 * `debug` adds the framework's start-up lines, every route it maps among them).
 */
export function logLevelSetting(env: NodeJS.ProcessEnv = process.env): LogLevelSetting {
  const raw = env.TRIAD_LOG_LEVEL || 'log';
  if (!(LOG_LEVEL_SETTINGS as readonly string[]).includes(raw)) throw new ConfigError(`TRIAD_LOG_LEVEL must be ${LOG_LEVEL_SETTINGS.join(', ')}, got '${shown(raw)}'`);
  return raw as LogLevelSetting;
}

/**
 * TRIAD_PUBLIC_URL: where people reach this server (behind a proxy, its address there), the
 * base of the console links webhooks carry; default `http://TRIAD_HOST:TRIAD_PORT`. An http(s)
 * URL with no query or fragment; kept without a trailing slash.
 */
function publicUrlEnv(env: NodeJS.ProcessEnv, host: string, port: number): string {
  const raw = env.TRIAD_PUBLIC_URL;
  if (raw === undefined || raw === '') return `http://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
  checkHttpUrl('TRIAD_PUBLIC_URL', raw);
  const url = new URL(raw);
  if (url.search || url.hash || url.username || url.password) throw new ConfigError(`TRIAD_PUBLIC_URL takes no query, fragment or credentials, got '${shownUrl(raw)}'`);
  return url.href.replace(/\/+$/, '');
}

/** Whether `host` (an address or a name, as TRIAD_HOST takes it) reaches this machine only. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** A host as a Host header's name part carries it: lowercase, IPv6 in brackets, no trailing dot. */
export function normaliseHostName(host: string): string {
  const h = host.trim().toLowerCase().replace(/\.$/, '');
  return isIP(h) === 6 ? `[${h}]` : h;
}

/**
 * TRIAD_ALLOWED_HOSTS (comma-separated host names or addresses, no port; `*`: any) and the
 * edge's time limits. Without TRIAD_ALLOWED_HOSTS a loopback bind allows the names of this
 * machine; any other bind needs the list: a browser page whose name resolves to the server
 * (DNS rebinding) must not reach it.
 */
export function httpEdgeSettings(env: NodeJS.ProcessEnv, bindHost: string): HttpEdgeSettings {
  const raw = (env.TRIAD_ALLOWED_HOSTS ?? '').split(',').map((h) => h.trim()).filter((h) => h !== '');
  let allowedHosts: string[];
  if (raw.length === 0) {
    if (!isLoopbackHost(bindHost)) {
      throw new ConfigError(`TRIAD_HOST=${shown(bindHost)} serves beyond this machine: set TRIAD_ALLOWED_HOSTS to the host names clients reach it by (comma-separated; * for any)`);
    }
    allowedHosts = [...new Set([normaliseHostName(bindHost), 'localhost', '127.0.0.1', '[::1]'])];
  } else if (raw.includes('*')) {
    if (raw.length > 1) throw new ConfigError('TRIAD_ALLOWED_HOSTS: * allows any host and takes no other entry');
    allowedHosts = ['*'];
  } else {
    for (const h of raw) {
      const bare = h.replace(/^\[(.*)\]$/, '$1');
      if (!isIP(bare) && !HOST_NAME.test(bare)) throw new ConfigError(`TRIAD_ALLOWED_HOSTS takes host names or addresses without a port, got '${shown(h)}'`);
    }
    allowedHosts = [...new Set(raw.map(normaliseHostName))];
  }
  const metricsKey = env.TRIAD_METRICS_KEY || undefined;
  // Never echoed: it is a secret.
  if (metricsKey !== undefined && (metricsKey.length < 16 || /\s/.test(metricsKey))) throw new ConfigError('TRIAD_METRICS_KEY must be at least 16 characters with no whitespace');
  const headersTimeoutMs = intEnv(env, 'TRIAD_HEADERS_TIMEOUT_MS', 10_000, 1_000, 600_000);
  const requestTimeoutMs = intEnv(env, 'TRIAD_REQUEST_TIMEOUT_MS', 30_000, 1_000, 3_600_000);
  if (headersTimeoutMs > requestTimeoutMs) throw new ConfigError(`TRIAD_HEADERS_TIMEOUT_MS (${headersTimeoutMs}) may not be longer than TRIAD_REQUEST_TIMEOUT_MS (${requestTimeoutMs}): the headers are part of the request`);
  return {
    allowedHosts,
    headersTimeoutMs,
    requestTimeoutMs,
    authFailuresPerWindow: intEnv(env, 'TRIAD_AUTH_FAILURES_PER_WINDOW', 10, 1, 1_000_000),
    authFailureWindowMs: intEnv(env, 'TRIAD_AUTH_FAILURE_WINDOW_MS', 60_000, 1_000, 86_400_000),
    ...(metricsKey ? { metricsKey } : {}),
  };
}

const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** Whether `host` is `rpId` or a subdomain of it (WebAuthn's rule for an origin's rp id). */
export function hostWithinRpId(host: string, rpId: string): boolean {
  return host === rpId || host.endsWith(`.${rpId}`);
}

/**
 * TRIAD_WEBAUTHN_ORIGINS (comma-separated `https://host[:port]`) and TRIAD_WEBAUTHN_RP_ID (a domain;
 * default the first origin's host). Every origin's host must be the rp id or under it; an IP
 * address is no rp id (browsers refuse one).
 */
export function webauthnSettings(env: NodeJS.ProcessEnv): WebAuthnSettings {
  const rawRpId = (env.TRIAD_WEBAUTHN_RP_ID ?? '').trim().toLowerCase();
  if (rawRpId !== '' && (!DOMAIN.test(rawRpId) || /^[0-9.]+$/.test(rawRpId))) throw new ConfigError(`TRIAD_WEBAUTHN_RP_ID must be a domain name (as console.example.com), got '${shown(rawRpId)}'`);
  const origins = (env.TRIAD_WEBAUTHN_ORIGINS ?? '').split(',').map((o) => o.trim()).filter((o) => o !== '');
  for (const o of origins) {
    let u: URL | undefined;
    try {
      u = new URL(o);
    } catch {
      u = undefined; // not a URL: refused just below
    }
    if (!u || (u.protocol !== 'https:' && u.protocol !== 'http:') || u.origin !== o) throw new ConfigError(`TRIAD_WEBAUTHN_ORIGINS holds '${shown(o)}', not an origin (scheme://host[:port], no path or trailing slash)`);
  }
  const rpId = rawRpId || (origins[0] ? new URL(origins[0]).hostname : undefined);
  if (rpId !== undefined && (!DOMAIN.test(rpId) || /^[0-9.]+$/.test(rpId))) throw new ConfigError(`TRIAD_WEBAUTHN_ORIGINS' first host '${shown(rpId)}' is no domain name for passkeys; set TRIAD_WEBAUTHN_RP_ID`);
  for (const o of origins) {
    const host = new URL(o).hostname;
    if (!hostWithinRpId(host, rpId!)) throw new ConfigError(`TRIAD_WEBAUTHN_ORIGINS holds '${shown(o)}', whose host is not ${rpId} or under it (TRIAD_WEBAUTHN_RP_ID)`);
  }
  return { ...(rpId !== undefined ? { rpId } : {}), origins };
}

/**
 * The signing key's file: TRIAD_SIGNING_KEY_FILE, else `triad/signing-key.pem` under
 * XDG_CONFIG_HOME (default ~/.config). It must lie outside the data directory, where the store,
 * the workspaces and every agent's files are.
 */
export function signingSettings(env: NodeJS.ProcessEnv, dataDir: string): SigningSettings {
  const given = env.TRIAD_SIGNING_KEY_FILE;
  if (given !== undefined && given !== '' && given.trim() === '') throw new ConfigError('TRIAD_SIGNING_KEY_FILE is blank');
  const configHome = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  const keyFile = resolve(given || join(configHome, 'triad', 'signing-key.pem'));
  const rel = relative(dataDir, keyFile);
  if (rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))) {
    throw new ConfigError(`TRIAD_SIGNING_KEY_FILE must lie outside the data directory (${dataDir}): whoever can read the store or a workspace must not read the key`);
  }
  const trustedKeys = (env.TRIAD_TRUSTED_KEYS ?? '').split(',').map((k) => k.trim()).filter((k) => k !== '');
  for (const k of trustedKeys) {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(k)) throw new ConfigError(`TRIAD_TRUSTED_KEYS holds '${shown(k)}', not a public key (base64, as \`triad decisions keys\` prints it)`);
  }
  const require = env.TRIAD_REQUIRE_SIGNED_DECISIONS ?? '';
  if (!['', '0', '1', 'true', 'false'].includes(require)) throw new ConfigError(`TRIAD_REQUIRE_SIGNED_DECISIONS must be 1 or 0, got '${shown(require)}'`);
  return { keyFile, trustedKeys, requireSignedDecisions: require === '1' || require === 'true' };
}

const MIB = 1024 * 1024;

/**
 * TRIAD_SANDBOX (`on`, the default, or `off`), the deployment's network allow-list, the server
 * variables passed in by name, more read-only paths, the limits, and the proxy's credentials file.
 */
export function sandboxSettings(env: NodeJS.ProcessEnv): SandboxSettings {
  const raw = (env.TRIAD_SANDBOX ?? '').trim().toLowerCase();
  if (!['', 'on', 'bubblewrap', 'off'].includes(raw)) throw new ConfigError(`TRIAD_SANDBOX must be on or off, got '${shown(raw)}'`);
  const list = (name: string) =>
    (env[name] ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
  const network = parseNetworkAllowList(list('TRIAD_SANDBOX_NETWORK'), 'TRIAD_SANDBOX_NETWORK');
  if ('problem' in network) throw new ConfigError(network.problem);
  const passEnv = list('TRIAD_SANDBOX_ENV');
  for (const name of passEnv) {
    const problem = passedEnvProblem(name);
    if (problem) throw new ConfigError(`TRIAD_SANDBOX_ENV: ${problem}`);
  }
  const readOnlyPaths = (env.TRIAD_SANDBOX_PATHS ?? '').split(/[,:]/).map((p) => p.trim()).filter(Boolean);
  for (const path of readOnlyPaths) if (!isAbsolute(path)) throw new ConfigError(`TRIAD_SANDBOX_PATHS entries must be absolute paths, got '${shown(path)}'`);
  const d = DEFAULT_SANDBOX_LIMITS;
  return {
    mode: raw === 'off' ? 'off' : 'bubblewrap',
    limits: {
      maxProcesses: intEnv(env, 'TRIAD_SANDBOX_MAX_PROCESSES', d.maxProcesses, 8, 100_000),
      maxMemoryBytes: intEnv(env, 'TRIAD_SANDBOX_MAX_MEMORY_MB', d.maxMemoryBytes / MIB, 64, 1_048_576) * MIB,
      maxCpuSeconds: intEnv(env, 'TRIAD_SANDBOX_MAX_CPU_SECONDS', d.maxCpuSeconds, 1, 86_400),
      maxFileBytes: intEnv(env, 'TRIAD_SANDBOX_MAX_FILE_MB', d.maxFileBytes / MIB, 1, 1_048_576) * MIB,
      maxOutputBytes: intEnv(env, 'TRIAD_SANDBOX_MAX_OUTPUT_MB', d.maxOutputBytes / MIB, 1, 4096) * MIB,
    },
    defaultNetwork: network.normalised,
    passEnv,
    readOnlyPaths,
    credentials: env.TRIAD_SANDBOX_CREDENTIALS_FILE ? loadSandboxCredentials(env.TRIAD_SANDBOX_CREDENTIALS_FILE, env) : {},
  };
}

/**
 * The network proxy's credentials: `{"<host>": {"<header>": "<value>"}}`, `${VAR}` taken from the
 * environment. Values are never echoed.
 */
function loadSandboxCredentials(file: string, env: NodeJS.ProcessEnv): Record<string, Record<string, string>> {
  const path = resolve(file);
  let parsed: unknown;
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
    parsed = JSON.parse(text);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(`TRIAD_SANDBOX_CREDENTIALS_FILE ${path}: ${code === 'ENOENT' ? 'no such file' : code ? `cannot be read (${code})` : 'is not JSON'}`);
  }
  const duplicate = duplicateKeyIn(text, 'the file');
  if (duplicate !== undefined) throw new ConfigError(`TRIAD_SANDBOX_CREDENTIALS_FILE ${path}: ${duplicateKeyMessage(duplicate)}`);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(`TRIAD_SANDBOX_CREDENTIALS_FILE ${path}: must be an object of hosts, each an object of headers`);
  const out: Record<string, Record<string, string>> = {};
  for (const [host, headers] of Object.entries(parsed)) {
    const pattern = parseNetworkAllowList([host], 'host');
    if ('problem' in pattern || host.includes('*')) throw new ConfigError(`TRIAD_SANDBOX_CREDENTIALS_FILE ${path}: '${shown(host)}' is not a host name`);
    if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) throw new ConfigError(`TRIAD_SANDBOX_CREDENTIALS_FILE ${path}: '${shown(host)}' must be an object of headers`);
    const set: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers as Record<string, unknown>)) {
      if (!/^[A-Za-z0-9-]{1,64}$/.test(name) || typeof value !== 'string') throw new ConfigError(`TRIAD_SANDBOX_CREDENTIALS_FILE ${path}: '${shown(host)}' headers must be names with string values`);
      set[name.toLowerCase()] = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, v: string) => {
        const found = env[v];
        if (found === undefined) throw new ConfigError(`TRIAD_SANDBOX_CREDENTIALS_FILE ${path}: uses \${${v}}, which is not set`);
        return found;
      });
    }
    out[host.toLowerCase()] = set;
  }
  return out;
}

/** Every credential value of the sandbox's proxy (and its bearer token alone): secrets to redact. */
export function sandboxSecrets(settings: SandboxSettings): string[] {
  return Object.values(settings.credentials).flatMap((headers) => Object.values(headers).flatMap(secretsIn));
}

/** The text of a file a variable names, or a configuration error naming both and why it cannot be read. */
function readConfigFile(variable: string, file: string): { path: string; text: string } {
  const path = resolve(file);
  try {
    return { path, text: readFileSync(path, 'utf8') };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(`${variable} ${path}: cannot be read (${code === 'ENOENT' ? 'no such file' : (code ?? (err as Error).message)})`);
  }
}

const PRICE_FIELDS = ['input', 'output', 'cacheRead', 'cacheWrite', 'contextTokens'] as const;
/** Past any real price (USD per million tokens): a figure this large is a mistake (cents per token, say). */
const MAX_PRICE = 10_000;

/**
 * The operator's price rows: `{"<model id or prefix>": {"input": 0.5, "output": 1.5, "cacheRead"?: …,
 * "cacheWrite"?: …, "contextTokens"?: …}}`, USD per million tokens. Read and checked now: a bad
 * file is a configuration error naming it and the row.
 */
function loadModelPrices(file: string): Record<string, OperatorPriceRow> {
  const { path, text } = readConfigFile('TRIAD_MODEL_PRICES', file);
  const where = `TRIAD_MODEL_PRICES ${path}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(`${where}: is not JSON`);
  }
  const duplicate = duplicateKeyIn(text, 'the file');
  if (duplicate !== undefined) throw new ConfigError(`${where}: ${duplicateKeyMessage(duplicate)}`);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(`${where}: must be an object of model ids, each {"input": …, "output": …}`);
  const rows: Record<string, OperatorPriceRow> = {};
  for (const [model, row] of Object.entries(parsed)) {
    const name = `'${shown(model)}'`;
    if (!/^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$/.test(model)) throw new ConfigError(`${where}: ${name} is not a model id`);
    if (typeof row !== 'object' || row === null || Array.isArray(row)) throw new ConfigError(`${where}: ${name} must be an object with input and output prices`);
    const fields = row as Record<string, unknown>;
    const unknown = Object.keys(fields).find((k) => !(PRICE_FIELDS as readonly string[]).includes(k));
    if (unknown !== undefined) throw new ConfigError(`${where}: ${name} has '${shown(unknown)}'; a row takes ${PRICE_FIELDS.join(', ')}`);
    for (const field of PRICE_FIELDS) {
      const value = fields[field];
      if (value === undefined && field !== 'input' && field !== 'output') continue;
      const limit = field === 'contextTokens' ? 100_000_000 : MAX_PRICE;
      const ok = typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= limit && (field !== 'contextTokens' || (Number.isInteger(value) && value > 0));
      if (!ok) throw new ConfigError(`${where}: ${name}.${field} must be ${field === 'contextTokens' ? 'a whole number of tokens' : `a price in USD per million tokens, 0 to ${MAX_PRICE}`}`);
    }
    rows[model] = fields as unknown as OperatorPriceRow;
  }
  return rows;
}

/** The MCP servers file, read and checked now: a bad file is a configuration error naming it. */
function loadMcpConfig(file: string, env: NodeJS.ProcessEnv): McpConfig {
  const { path, text } = readConfigFile('TRIAD_MCP_CONFIG', file);
  try {
    return parseMcpConfig(text, path, env);
  } catch (err) {
    if (err instanceof McpConfigError) throw new ConfigError(`TRIAD_MCP_CONFIG ${path}: ${err.message}`);
    throw err;
  }
}

const MAX_RETRIES = 20;
const MAX_RETRY_DELAY_MS = 3_600_000;

/** Comma-separated waits in ms, one per retry (`10000,30000,90000`); `none` for no retry. */
function retryDelaysEnv(env: NodeJS.ProcessEnv, name: string): number[] {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return [...DEFAULT_RETRY_DELAYS_MS];
  if (raw === 'none') return [];
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length > MAX_RETRIES || parts.some((p) => !/^\d+$/.test(p) || Number(p) > MAX_RETRY_DELAY_MS)) {
    throw new ConfigError(`${name} must be up to ${MAX_RETRIES} comma-separated waits in ms, each at most ${MAX_RETRY_DELAY_MS} (e.g. 10000,30000,90000), or none; got '${shown(raw)}'`);
  }
  return parts.map(Number);
}

/** `true`/`false`, a hop count, or addresses and subnets (`loopback`, `10.0.0.0/8,::1`) as Express reads them. */
function trustProxyEnv(raw: string | undefined): boolean | number | string {
  const v = raw?.trim();
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  if (/^\d+$/.test(v)) return Number(v);
  const parts = v.split(',').map((p) => p.trim());
  if (!parts.every(isProxyAddress)) {
    throw new ConfigError(`TRIAD_TRUST_PROXY must be true, false, a hop count, or addresses and subnets (loopback, linklocal, uniquelocal, 10.0.0.0/8, ::1), got '${shown(v)}'`);
  }
  return v;
}

/** What Express's `trust proxy` accepts in a list: a named range, an address, or an address/prefix or /mask. */
function isProxyAddress(part: string): boolean {
  if (part === 'loopback' || part === 'linklocal' || part === 'uniquelocal') return true;
  const [address, range, ...rest] = part.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (range === undefined) return true;
  if (/^\d{1,3}$/.test(range)) return Number(range) <= (family === 4 ? 32 : 128);
  return family === 4 && isIP(range) === 4;
}

function intEnv(env: NodeJS.ProcessEnv, name: string, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number ${max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`}, got '${shown(raw)}'`);
  }
  return Number(raw);
}

/** A value echoed in a message: control characters shown as `?`, at most 80 characters. */
export function shown(text: string): string {
  const one = text.replace(/[\u0000-\u001f\u007f]/g, '?');
  return one.length > 80 ? `${one.slice(0, 79)}…` : one;
}

/** A URL echoed in a message: what stands before the last `@` of its authority (user, password) hidden, then as `shown`. */
export function shownUrl(text: string): string {
  return shown(text.replace(/\/\/[^/?#]*@/, '//***@'));
}

/** A DNS name: dot-separated labels of letters, digits and inner hyphens. */
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

/** A schema of triad's own: a plain identifier, not one of PostgreSQL's (`pg_*`, `information_schema`). */
function checkPgSchema(schema: string): void {
  if (!PG_SCHEMA_NAME.test(schema)) throw new ConfigError(`TRIAD_PG_SCHEMA must be a schema name (letters, digits and _, up to 63), got '${shown(schema)}'`);
  if (/^pg_/i.test(schema) || schema.toLowerCase() === 'information_schema') {
    throw new ConfigError(`TRIAD_PG_SCHEMA '${schema}' is one of PostgreSQL's own schemas: name one for triad`);
  }
}

/** A postgres:// URL with a host; named in messages with its password hidden. */
function checkPgUrl(raw: string): void {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ConfigError('TRIAD_PG_URL is not a URL (postgres://user:password@host:5432/database)');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError(`TRIAD_PG_URL must start with postgres:// or postgresql://, got '${shown(url.protocol)}//…'`);
  }
  if (!url.hostname && !url.searchParams.get('host')) throw new ConfigError(`TRIAD_PG_URL names no host (${shown(redactUrl(raw))})`);
}

/** An http(s) URL (the Messages API's base). */
/**
 * The OpenAI-compatible provider's settings: set up whenever OPENAI_API_KEY or OPENAI_BASE_URL is
 * (TRIAD_MODEL=openai makes it the default; a role's `provider: "openai"` uses it otherwise).
 */
function openaiEnv(env: NodeJS.ProcessEnv): Pick<TriadConfig, 'openaiApiKey' | 'openaiBaseUrl'> {
  const openaiApiKey = env.OPENAI_API_KEY || undefined;
  // Never echoed: it is a secret.
  if (openaiApiKey !== undefined && /\s/.test(openaiApiKey)) throw new ConfigError('OPENAI_API_KEY holds whitespace (a key has none)');
  const openaiBaseUrl = env.OPENAI_BASE_URL || undefined;
  if (openaiBaseUrl !== undefined) {
    checkHttpUrl('OPENAI_BASE_URL', openaiBaseUrl);
    refuseCredentials('OPENAI_BASE_URL', openaiBaseUrl, 'OPENAI_API_KEY');
  }
  return { ...(openaiApiKey ? { openaiApiKey } : {}), ...(openaiBaseUrl ? { openaiBaseUrl } : {}) };
}

/** A model server's URL with credentials in it is refused (carriesCredentials says why). */
function refuseCredentials(name: string, raw: string, keyVariable: string): void {
  if (carriesCredentials(raw)) throw new ConfigError(`${name} must not carry credentials: set ${keyVariable}`);
}

function checkHttpUrl(name: string, raw: string): void {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) {
    throw new ConfigError(`${name} must be an http:// or https:// URL, got '${shownUrl(raw)}'`);
  }
}

/** `name:role+role:secret` entries separated by commas; names normalised (see src/auth/names.ts). */
export function parseApiKeys(text: string): ApiKeyEntry[] {
  const entries: Array<ApiKeyEntry & { given: string }> = [];
  for (const raw of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const first = raw.indexOf(':');
    const second = raw.indexOf(':', first + 1);
    if (first <= 0 || second <= first + 1 || second === raw.length - 1) {
      throw new ConfigError(`TRIAD_API_KEYS entry ${entries.length + 1} is not name:role+role:secret`);
    }
    const name = raw.slice(0, first);
    const roles = raw.slice(first + 1, second).split('+');
    const secret = raw.slice(second + 1);
    // Nothing but a valid name is echoed: a value in the wrong place may be the secret.
    if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(name)) throw new ConfigError(`TRIAD_API_KEYS entry ${entries.length + 1} has a name that is not 1-64 letters, digits, _ . @ -`);
    for (const r of roles) {
      if (!(VALID_ROLES as readonly string[]).includes(r)) {
        throw new ConfigError(`TRIAD_API_KEYS entry '${name}' has an unknown role (name:role+role:secret, roles: ${VALID_ROLES.join(', ')})`);
      }
    }
    if (secret.length < 8) throw new ConfigError(`TRIAD_API_KEYS entry '${name}' has a secret shorter than 8 characters`);
    // Names are case-insensitive identities: two entries naming one user are refused, not merged.
    const same = entries.find((e) => e.name === normaliseName(name));
    if (same) throw new ConfigError(`TRIAD_API_KEYS entries '${same.given}' and '${name}' name the same user (names are case-insensitive)`);
    // One secret, one identity: a shared one would sign in as whichever entry comes last.
    const twin = entries.find((e) => e.secret === secret);
    if (twin) throw new ConfigError(`TRIAD_API_KEYS entries '${twin.given}' and '${name}' have the same secret: each key needs its own`);
    entries.push({ name: normaliseName(name), given: name, roles, secret });
  }
  return entries.map(({ name, roles, secret }) => ({ name, roles, secret }));
}

/** A view safe to print: no secrets, URLs without passwords. */
export function describeConfig(c: TriadConfig): Record<string, unknown> {
  return {
    dataDir: c.dataDir,
    store: c.store,
    pgUrl: c.pgUrl ? redactUrl(c.pgUrl) : undefined,
    esdbUrl: c.esdbUrl ? redactUrl(c.esdbUrl) : undefined,
    port: c.port,
    host: c.host,
    apiKeys: c.apiKeys.map((k) => `${k.name}:${k.roles.join('+')}`),
    model: c.model,
    anthropicBaseUrl: c.anthropicBaseUrl,
    openaiBaseUrl: c.openaiBaseUrl,
    modelRetryDelaysMs: c.modelRetryDelaysMs,
    ...(c.mcp ? { mcpServers: c.mcp.servers.map((s) => `${s.name} (${s.transport})`) } : {}),
    sessionTtlMs: c.sessionTtlMs,
    trustProxy: c.trustProxy,
    allowedHosts: c.http.allowedHosts,
    metricsKey: c.http.metricsKey ? 'set' : undefined,
    webauthn: c.webauthn,
  };
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparseable url>';
  }
}
