import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { packageRoot } from '../src/cli/cli-io';

/**
 * The server process the `scale` and `procs` benchmarks measure, and their HTTP client: hand-written
 * because what is measured must be the app `triad serve` builds (from dist/, in a child process),
 * seen from outside through real HTTP, with an IPC side channel for what only the process knows.
 */

/** TRIAD_BENCH_DIST: another build of the app to measure (an A/B against older code), inside the checkout so it finds node_modules. */
export const DEFAULT_DIST = process.env.TRIAD_BENCH_DIST ?? join(packageRoot(), 'dist');
export const OPERATOR_KEY = 'bench-operator-0123456789abcdef';

/**
 * The server: `createHttpApp` as `triad serve` builds it, plus an IPC channel through which the
 * bench reads the event loop's lag, the heap, the supervisor's drivers, the process's CPU time and
 * the events it read from its store. It runs with
 * --expose-gc so the heap figures are live objects, not garbage.
 */
const SERVER_SCRIPT = `
const entry = require(process.env.SCALE_ENTRY);
const load = (name, file) => entry[name] ?? require(process.env[file])[name];
const createHttpApp = load('createHttpApp', 'SCALE_BOOTSTRAP');
const EVENT_STORE = load('EVENT_STORE', 'SCALE_EVENT_STORE');
// This build starts drivers through DriverPool.wake; an older one (an A/B) through RunSupervisor.start.
const DriverPool = entry.DriverPool ?? entry.RunSupervisor ?? require(process.env.SCALE_DRIVERS)[process.env.SCALE_DRIVERS_CLASS];
const START = typeof DriverPool.prototype.wake === 'function' ? 'wake' : 'start';
const { monitorEventLoopDelay } = require('node:perf_hooks');
(async () => {
  const app = await createHttpApp({ logger: ['error', 'warn'] });
  await app.listen(0, '127.0.0.1');
  const sup = app.get(DriverPool);
  const eventsRead = countReads(app.get(EVENT_STORE));
  const started = new Map();
  const drive = [];
  const origWake = sup[START].bind(sup);
  // A driver counts once it holds the run's lease; one started without getting it counts as
  // declined: a run placed on another process is not tried here, so declines are launches no
  // process was placed for (every one tries them, all but one give up) and recovery's attempts.
  let declined = 0;
  const stopped = [];
  sup[START] = (runId, ...rest) => {
    const fresh = !sup.isDriving(runId);
    const p = origWake(runId, ...rest);
    const active = fresh && sup.drivers.get(runId);
    if (active) {
      const t0 = performance.now();
      const record = () => (drive.push(performance.now() - t0), stopped.push(runId));
      // A build from before leases (an A/B against older code) drives every run it starts.
      (active.leased ?? Promise.resolve(true)).then((leased) => (leased ? p.then(record, record) : declined++), () => declined++);
    }
    return p;
  };
  let h;
  let sampler;
  let peakActive = 0;
  let atPeak = null;
  const mem = () => { const m = process.memoryUsage(); return { heapUsed: m.heapUsed, rss: m.rss }; };
  const fullGc = () => { global.gc(); global.gc(); };
  process.on('message', (m) => {
    if (m.cmd === 'baseline') { fullGc(); process.send({ id: m.id, mem: mem() }); }
    else if (m.cmd === 'start') {
      drive.length = 0; peakActive = 0; atPeak = null;
      h = monitorEventLoopDelay({ resolution: 1 });
      h.enable();
      sampler = setInterval(() => {
        const n = sup.activeCount;
        if (n > peakActive) peakActive = n;
      }, 50);
      process.send({ id: m.id });
    }
    // Every run launched, (nearly) all still active: the heap then, after a gc the lag histogram
    // does not see.
    else if (m.cmd === 'launched') { takePeak(sup.activeCount); process.send({ id: m.id }); }
    // With \`since\`: the runs whose driver stopped under their lease from that index on.
    else if (m.cmd === 'status') process.send({ id: m.id, active: sup.activeCount, drove: drive.length, stopped: m.since === undefined ? undefined : stopped.slice(m.since) });
    else if (m.cmd === 'cpu') process.send({ id: m.id, cpu: process.cpuUsage(), eventsRead: eventsRead(), drove: drive.length, declined, owner: sup.owner });
    else if (m.cmd === 'stop') {
      clearInterval(sampler);
      h.disable();
      const ns = (q) => h.percentile(q) / 1e6;
      const lag = { samples: h.count, p50: ns(50), p90: ns(90), p99: ns(99), max: h.max / 1e6, mean: h.mean / 1e6 };
      if (!atPeak) takePeak(sup.activeCount);
      fullGc();
      const sorted = [...drive].sort((a, b) => a - b);
      const q = (p) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0;
      process.send({ id: m.id, lag, peakActive, atPeak, waiting: mem(), drive: { p50: q(0.5), p99: q(0.99), max: sorted[sorted.length - 1] || 0 } });
    }
  });
  function takePeak(n) {
    h.disable();
    fullGc();
    atPeak = { active: n, ...mem() };
    h.enable();
  }
  // Events the process reads from its store (runs' streams, read models following the log), counted
  // on the store's read methods and its shared tail (one read near the head for all subscriptions);
  // a read the adapter makes through another of them counts twice.
  function countReads(store) {
    let n = 0;
    for (const name of ['readStream', 'readAll']) {
      const read = store[name].bind(store);
      store[name] = (...args) => read(...args).then((events) => { n += events.length; return events; });
    }
    const pages = store.readStreamPages.bind(store);
    store.readStreamPages = async function* (...args) { for await (const page of pages(...args)) { n += page.length; yield page; } };
    return () => n + (store.tail ? store.tail.eventsRead : 0);
  }
  process.send({ port: app.getHttpServer().address().port });
  const stop = () => app.close().then(() => process.exit(0), () => process.exit(1));
  process.once('SIGTERM', stop);
  process.once('disconnect', stop);
})().catch((err) => {
  process.stderr.write(String((err && err.stack) || err) + '\\n');
  process.exit(1);
});
`;

export interface Server {
  port: number;
  ask<T = Record<string, unknown>>(msg: Record<string, unknown>): Promise<T>;
  stderr(): string;
  stop(): Promise<void>;
}

/**
 * `dist`: the build to run (default this checkout's dist/, or TRIAD_BENCH_DIST). The program as
 * `triad serve` loads it (the bundle dist/triad.cjs, through the entry); a build from before the
 * bundle (an A/B against older code) has neither, and its modules are loaded instead.
 */
export async function startServer(env: NodeJS.ProcessEnv, dist: string = DEFAULT_DIST): Promise<Server> {
  const ENTRY = join(dist, 'cli', 'main.js');
  const BOOTSTRAP = join(dist, 'http', 'bootstrap.js');
  const pool = join(dist, 'team', 'dispatch', 'driver-pool.js');
  const [DRIVERS, DRIVERS_CLASS] = existsSync(pool) ? [pool, 'DriverPool'] : [join(dist, 'team', 'run-supervisor.js'), 'RunSupervisor'];
  // Where the port is in this build (a folder of its own), or in an older one (an A/B).
  const EVENT_STORE_PORT = [join(dist, 'events', 'event-store', 'event-store.port.js'), join(dist, 'events', 'event-store.port.js')].find((f) => existsSync(f)) ?? '';
  if (!existsSync(BOOTSTRAP)) throw new Error(`${BOOTSTRAP} is missing: build dist/ first (npm run build)`);
  // TRIAD_BENCH_NODE_ARGS: extra flags for the server (e.g. --cpu-prof) when profiling.
  const extra = (process.env.TRIAD_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const child: ChildProcess = spawn(process.execPath, ['--expose-gc', ...extra, '-e', SERVER_SCRIPT], {
    env: { ...env, SCALE_ENTRY: ENTRY, SCALE_BOOTSTRAP: BOOTSTRAP, SCALE_DRIVERS: DRIVERS, SCALE_DRIVERS_CLASS: DRIVERS_CLASS, SCALE_EVENT_STORE: EVENT_STORE_PORT },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-20_000)));
  let seq = 0;
  const pending = new Map<number, { res: (v: Record<string, unknown>) => void; rej: (e: Error) => void }>();
  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start within 60 s\n${stderr}`)), 60_000);
    child.on('message', (m: Record<string, unknown>) => {
      if (typeof m.port === 'number') {
        clearTimeout(timer);
        resolvePort(m.port);
      } else if (typeof m.id === 'number') {
        pending.get(m.id)?.res(m);
        pending.delete(m.id);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      const exited = new Error(`the server exited (${code ?? signal})\n${stderr}`);
      reject(exited);
      // A question the server will never answer fails instead of hanging the benchmark.
      for (const ask of pending.values()) ask.rej(exited);
      pending.clear();
    });
  });
  return {
    port,
    ask: <T>(msg: Record<string, unknown>) =>
      new Promise<T>((res, rej) => {
        const id = ++seq;
        pending.set(id, { res: res as (v: Record<string, unknown>) => void, rej });
        child.send({ ...msg, id });
      }),
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(kill);
    },
  };
}

export interface Reply {
  status: number;
  body: string;
}

export function httpCall(agent: Agent, port: number, method: string, path: string, body?: unknown): Promise<Reply> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((res, rej) => {
    const req = httpRequest(
      {
        agent,
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: {
          authorization: `Bearer ${OPERATOR_KEY}`,
          ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        },
      },
      (r) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => res({ status: r.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        r.on('error', rej);
      },
    );
    req.on('error', rej);
    req.end(payload);
  });
}

export const LAUNCH_BODY = {
  goal: 'Write a greeting',
  acceptanceCriteria: ['file hello.txt contains "Hello"'],
};

/**
 * Launches `runs` runs through the server's `POST /v1/runs`, `concurrency` requests in flight on
 * the agent's connections; each must be answered 202. Their round trips (ms) and run ids go into
 * the arrays given.
 */
export async function launchRuns(
  agent: Agent,
  server: Pick<Server, 'port'>,
  runs: number,
  concurrency: number,
  into: { roundTripsMs?: number[]; runIds?: string[] } = {},
): Promise<void> {
  let next = 0;
  const launcher = async () => {
    while (next < runs) {
      next++;
      const t0 = performance.now();
      const r = await httpCall(agent, server.port, 'POST', '/v1/runs', LAUNCH_BODY);
      into.roundTripsMs?.push(performance.now() - t0);
      if (r.status !== 202) throw new Error(`launch answered ${r.status}: ${r.body}`);
      into.runIds?.push((JSON.parse(r.body) as { runId: string }).runId);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, runs) }, launcher));
}

/**
 * Waits until each server's supervisor has driven at least `runs` runs since it started (or since
 * the last `start` command) and drives none any more: every run it was given is at the gate.
 * Throws, naming `what`, when that takes longer than `timeoutMs`.
 */
export async function waitUntilDriven(servers: Server[], runs: number, timeoutMs: number, what: string): Promise<void> {
  const driven = await waitUntil(async () => {
    const status = await Promise.all(servers.map((s) => s.ask<{ active: number; drove: number }>({ cmd: 'status' })));
    return status.every((s) => s.drove >= runs && s.active === 0);
  }, timeoutMs);
  if (!driven) throw new Error(`${what} did not all reach the gate within ${timeoutMs} ms`);
}


/** Polls `check` until it holds (true) or `timeoutMs` has passed (false). */
export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}
export interface ServerEnvOptions {
  dataDir: string;
  store: 'sqlite' | 'postgres' | 'memory';
  pgUrl?: string;
  pgSchema?: string;
  latencyMs: number;
  /** TRIAD_MAX_ACTIVE_RUNS of the server (TRIAD_MAX_ACTIVE_RUNS set by the caller wins). */
  maxActiveRuns: number;
  /** A Messages-API server to use instead of the offline model (the `provider` benchmark). */
  anthropic?: { baseUrl: string; apiKey: string };
}

/** The environment of one server: the offline model at the given latency (or the Messages-API server given), an operator key, nothing else of the caller's store or model. */
export function serverEnv(o: ServerEnvOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TRIAD_DATA_DIR: o.dataDir,
    TRIAD_STORE: o.store,
    TRIAD_API_KEYS: `bench:operator:${OPERATOR_KEY}`,
    TRIAD_MODEL: 'offline',
    TRIAD_OFFLINE_LATENCY_MS: String(o.latencyMs),
    TRIAD_LOG_LEVEL: 'warn',
    TRIAD_MAX_ACTIVE_RUNS: process.env.TRIAD_MAX_ACTIVE_RUNS ?? String(o.maxActiveRuns),
  };
  delete env.ANTHROPIC_API_KEY;
  delete env.TRIAD_ESDB_URL;
  if (o.store === 'postgres' && o.pgUrl) env.TRIAD_PG_URL = o.pgUrl;
  else delete env.TRIAD_PG_URL;
  if (o.store === 'postgres' && o.pgSchema) env.TRIAD_PG_SCHEMA = o.pgSchema;
  if (o.anthropic) Object.assign(env, { TRIAD_MODEL: 'anthropic', ANTHROPIC_BASE_URL: o.anthropic.baseUrl, ANTHROPIC_API_KEY: o.anthropic.apiKey });
  return env;
}
