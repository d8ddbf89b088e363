import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { httpCall, LAUNCH_BODY, launchRuns, serverEnv, startServer, waitUntil, waitUntilDriven, type Server } from './app-server';
import { dropPostgresSchema, machineInfo, type MachineInfo, machineLine, summariseFine, type Summary } from './machine';

/**
 * Many processes sharing the work on PostgreSQL (`npm run bench -- procs --runs N --latency-ms L
 * --processes 1,2,3`): for each process count P, P `triad serve` processes (the app from dist/, each
 * in a child process with its own data directory) on one fresh PostgreSQL schema, N runs launched
 * round-robin over them through HTTP, driven on the offline model (L ms per call) until each waits
 * at the review gate.
 *
 * Measured: the wall time from the first launch to the last run at the gate, the runs per second,
 * and the CPU time the servers spent from just before the first launch until their read models have
 * caught up after the last run reached the gate (process.cpuUsage() of each server, over IPC), per
 * run. The PostgreSQL backends serving the servers' connections (found by their application_name)
 * are added from /proc when PostgreSQL runs on this host; a backend that exits between two samples
 * (one a second) loses its last second. The target: CPU per run must not grow with P.
 */

export interface ProcsBenchOptions {
  /** Runs launched per process count (per process with `perProcess`); default 300. */
  runs?: number;
  /**
   * `runs` for each process (3 processes: 3 × runs, and 3 × the launches in flight), so that each is
   * as busy as one alone: what CPU per run costs when processes are added for more work, without
   * the fixed cost of a process's wake-ups being shared by fewer runs. Default: `runs` in all.
   */
  perProcess?: boolean;
  /** Model latency per call (ms); default 500. */
  latencyMs?: number;
  /** Process counts measured, in order; default 1, 2, 3. */
  processes?: number[];
  /** Repetitions per process count (a fresh schema and fresh servers each); medians reported. Default 1. */
  repeat?: number;
  /** Launch requests in flight at once, over all servers; default 32. */
  concurrency?: number;
  /**
   * Where runs are launched: round-robin on `each` server (default), or all on the `first`, so
   * that the others drive nothing and their CPU is what following the store costs a process.
   */
  launchOn?: 'each' | 'first';
  /**
   * Runs each server launches on itself and drives to the gate before the measurement (after its
   * one warm-up run), so that what is measured is processes whose code the JIT has compiled: a
   * process's warm-up is a cost per process, not per run. Default 0.
   */
  warmUpRuns?: number;
  pgUrl?: string;
  dataDir: string;
  log: (line: string) => void;
  /** Stop waiting for the runs to reach the gate after this long (the sample says it timed out); default 10 min. */
  timeoutMs?: number;
}

export interface ProcsProcess {
  /** The server's process id as a writer (every event's metadata.process). */
  owner: string;
  /** Runs launched through this server's HTTP API. */
  launched: number;
  /** Runs this server drove (the owner of their last DriverClaimed; placement may hand a launch to another process). */
  drove: number;
  /** Drivers this server ran under a run's lease to their stop (a run at the gate may be looked at again, so at least `drove`). */
  driverStarts: number;
  /** Drivers this server started for runs whose lease another process held (they stopped at once). */
  declined: number;
  cpuMs: number;
  /** Of cpuMs, the time spent in the kernel (system calls, and the cost of sharing the cores). */
  kernelMs: number;
  eventsRead: number;
}

export interface ProcsSample {
  processes: number;
  runs: number;
  timedOut: boolean;
  /** Runs found at awaiting_review afterwards (each checked through GET /v1/runs/:id). */
  runsAtGate: number;
  wallMs: number;
  runsPerSec: number;
  /** CPU (user + system) of the server processes, first launch to the read models caught up. */
  serverCpuMs: number;
  serverCpuMsPerRun: number;
  /** Of serverCpuMsPerRun, the kernel's share (system time). */
  serverKernelMsPerRun: number;
  /** CPU of the PostgreSQL backends of the servers' connections; null when PostgreSQL's processes are not readable here. */
  postgresCpuMs: number | null;
  postgresCpuMsPerRun: number | null;
  /** Events the servers read from the store, all of them together, per run. */
  eventsReadPerRun: number;
  /** DriverClaimed events per run: above 1 when a run changed hands (a lease lost, e.g. under CPU starvation). */
  claimsPerRun: number;
  perProcess: ProcsProcess[];
}

export interface ProcsPoint {
  processes: number;
  wallMs: Summary;
  runsPerSec: Summary;
  serverCpuMsPerRun: Summary;
  serverKernelMsPerRun: Summary;
  postgresCpuMsPerRun: Summary | null;
  eventsReadPerRun: Summary;
}

export interface ProcsBenchResult {
  benchmark: 'procs';
  startedAt: string;
  durationMs: number;
  runs: number;
  latencyMs: number;
  processes: number[];
  points: ProcsPoint[];
  samples: ProcsSample[];
  machine: MachineInfo & { loadAverage: number[] };
  inputs: { runs: number; latencyMs: number; processes: number[]; repeat: number; concurrency: number; launchOn: 'each' | 'first'; perProcess: boolean; warmUpRuns: number; store: 'postgres' };
  targets: Array<{ name: string; description: string; target: string; measured: number; unit: string; met: boolean }>;
}

/** Server CPU per run at the most processes ÷ at the fewest: at most this (what is left is noise). */
export const PROCS_TARGETS = { cpuPerRunGrowth: 1.1 };

export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

const round2 = (n: number) => Math.round(n * 100) / 100;
const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;

function clockTicksPerSecond(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** utime + stime of a process, in clock ticks; undefined when it is gone or not readable. */
function processTicks(pid: number): number | undefined {
  try {
    // The command name, in parentheses, may hold spaces: the fields are counted after it.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/**
 * The CPU of the PostgreSQL backends whose connections carry one application_name (PGAPPNAME of the
 * servers), sampled now and then: each backend's ticks at its first and last sight.
 */
class PostgresCpu {
  private readonly first = new Map<number, number>();
  private readonly last = new Map<number, number>();
  private readable = true;

  constructor(
    private readonly client: Client,
    private readonly appName: string,
    private readonly ticksPerSecond: number,
  ) {}

  /** The backends there now count from now; those seen later from zero (they started after it). */
  async baseline(): Promise<void> {
    await this.sample();
    for (const [pid, ticks] of this.last) this.first.set(pid, ticks);
  }

  async sample(): Promise<void> {
    const { rows } = await this.client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [this.appName]);
    for (const { pid } of rows) {
      const ticks = processTicks(pid);
      if (ticks === undefined) this.readable = false;
      else this.last.set(pid, ticks);
    }
  }

  /** CPU ms since the baseline; null when a backend's /proc entry could not be read (PostgreSQL elsewhere). */
  cpuMs(): number | null {
    if (!this.readable) return null;
    let ticks = 0;
    for (const [pid, t] of this.last) ticks += t - (this.first.get(pid) ?? 0);
    return (ticks * 1000) / this.ticksPerSecond;
  }
}

interface ServerReading {
  cpu: NodeJS.CpuUsage;
  eventsRead: number;
  drove: number;
  declined: number;
  owner: string;
}

const readAll = (servers: Server[]) => Promise.all(servers.map((s) => s.ask<ServerReading>({ cmd: 'cpu' })));

/** Launches `runs` runs, run i through server i mod P (or all through the first), `concurrency` requests in flight; their ids and servers. */
async function launchOverServers(servers: Server[], agents: Agent[], runs: number, concurrency: number, on: 'each' | 'first'): Promise<Array<{ runId: string; server: number }>> {
  const launched: Array<{ runId: string; server: number }> = [];
  let next = 0;
  const launcher = async () => {
    while (next < runs) {
      const server = on === 'first' ? 0 : next % servers.length;
      next++;
      const r = await httpCall(agents[server], servers[server].port, 'POST', '/v1/runs', LAUNCH_BODY);
      if (r.status !== 202) throw new Error(`launch answered ${r.status}: ${r.body}`);
      launched.push({ runId: (JSON.parse(r.body) as { runId: string }).runId, server });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, runs) }, launcher));
  return launched;
}

/**
 * One warm-up run per server, each waited for at the gate, so the baseline includes what a first
 * run loads; then `extra` more runs launched on each server, and every one of them driven to the gate.
 */
async function warmUp(servers: Server[], agents: Agent[], extra: number, concurrency: number, timeoutMs: number): Promise<void> {
  await Promise.all(
    servers.map(async (server, i) => {
      const warm = await httpCall(agents[i], server.port, 'POST', '/v1/runs', LAUNCH_BODY);
      if (warm.status !== 202) throw new Error(`warm-up launch answered ${warm.status}: ${warm.body}`);
      const runId = (JSON.parse(warm.body) as { runId: string }).runId;
      await httpCall(agents[i], server.port, 'POST', `/v1/runs/${runId}/wait?timeoutMs=600000`);
    }),
  );
  if (extra === 0) return;
  await Promise.all(servers.map((server, i) => launchRuns(agents[i], server, extra, concurrency)));
  await waitUntilDriven(servers, 1 + extra, timeoutMs, `the ${extra} warm-up runs per process`);
}

type RunOptions = Required<Pick<ProcsBenchOptions, 'runs' | 'latencyMs' | 'concurrency' | 'timeoutMs' | 'pgUrl'>> & ProcsBenchOptions;

async function runOnce(options: RunOptions, processes: number, index: number, ticksPerSecond: number): Promise<ProcsSample> {
  const opts = options.perProcess ? { ...options, runs: options.runs * processes, concurrency: options.concurrency * processes } : options;
  const schema = `triad_bench_procs_${process.pid}_${randomBytes(4).toString('hex')}`;
  const appName = `triad-bench-${schema}`;
  const servers: Server[] = [];
  const agents = Array.from({ length: processes }, () => new Agent({ keepAlive: true, maxSockets: opts.concurrency }));
  const pg = new Client({ connectionString: opts.pgUrl, connectionTimeoutMillis: 5000, application_name: 'triad-bench-procs-observer' });
  await pg.connect();
  try {
    // One after the other: the first creates the schema's tables, the others find them.
    for (let p = 0; p < processes; p++) {
      const env = serverEnv({
        dataDir: join(opts.dataDir, `p${processes}-r${index}-server-${p}`),
        store: 'postgres',
        pgUrl: opts.pgUrl,
        pgSchema: schema,
        latencyMs: opts.latencyMs,
        maxActiveRuns: Math.max(opts.runs, opts.warmUpRuns ?? 0) + processes + 1,
      });
      servers.push(await startServer({ ...env, PGAPPNAME: appName }));
    }
    await warmUp(servers, agents, opts.warmUpRuns ?? 0, options.concurrency, opts.timeoutMs);
    // A warm-up run's driver stops just after its run reaches the gate: counted before the baseline.
    await waitUntil(async () => (await Promise.all(servers.map((s) => s.ask<{ active: number }>({ cmd: 'status' })))).every((s) => s.active === 0), 60_000);
    const pgCpu = new PostgresCpu(pg, appName, ticksPerSecond);
    await pgCpu.baseline();
    const before = await readAll(servers);
    const started = performance.now();
    const launched = await launchOverServers(servers, agents, opts.runs, opts.concurrency, opts.launchOn ?? 'each');
    let lastPgSample = 0;
    const pending = new Set(launched.map((l) => l.runId));
    const seen = servers.map(() => 0);
    const atGate = await waitUntil(async () => {
      if (performance.now() - lastPgSample > 1000) {
        lastPgSample = performance.now();
        await pgCpu.sample();
      }
      const status = await Promise.all(servers.map((s, i) => s.ask<{ active: number; stopped: string[] }>({ cmd: 'status', since: seen[i] })));
      status.forEach((s, i) => {
        seen[i] += s.stopped.length;
        for (const runId of s.stopped) pending.delete(runId);
      });
      return pending.size === 0 && status.every((s) => s.active === 0);
    }, opts.timeoutMs);
    const wallMs = performance.now() - started;
    // The read models follow the log after the last run stops: the CPU counts until no server reads any more.
    let previous = -1;
    await waitUntil(async () => {
      await new Promise((r) => setTimeout(r, 400));
      await pgCpu.sample();
      const total = (await readAll(servers)).reduce((n, r) => n + r.eventsRead, 0);
      const settled = total === previous;
      previous = total;
      return settled;
    }, 30_000);
    const after = await readAll(servers);
    await pgCpu.sample();
    const postgresCpuMs = pgCpu.cpuMs();
    // Each run's status, and who drove it: the owner of its last DriverClaimed.
    let runsAtGate = 0;
    let claims = 0;
    const droveBy = new Map<string, number>();
    for (const { runId, server } of launched) {
      const r = await httpCall(agents[server], servers[server].port, 'GET', `/v1/runs/${runId}`);
      if ((JSON.parse(r.body) as { status?: string }).status === 'awaiting_review') runsAtGate++;
      const history = JSON.parse((await httpCall(agents[server], servers[server].port, 'GET', `/v1/runs/${runId}/events`)).body) as {
        events: Array<{ type: string; data: { owner?: string } }>;
      };
      const claimed = history.events.filter((e) => e.type === 'DriverClaimed');
      claims += claimed.length;
      const owner = claimed[claimed.length - 1]?.data.owner;
      if (owner) droveBy.set(owner, (droveBy.get(owner) ?? 0) + 1);
    }
    if (atGate && runsAtGate !== opts.runs) throw new Error(`${opts.runs - runsAtGate} of ${opts.runs} runs are not at awaiting_review`);
    const perProcess = servers.map((_, i) => ({
      owner: after[i].owner,
      launched: launched.filter((l) => l.server === i).length,
      drove: droveBy.get(after[i].owner) ?? 0,
      driverStarts: after[i].drove - before[i].drove,
      declined: after[i].declined - before[i].declined,
      cpuMs: Math.round(cpuMs(after[i].cpu) - cpuMs(before[i].cpu)),
      kernelMs: Math.round((after[i].cpu.system - before[i].cpu.system) / 1000),
      eventsRead: after[i].eventsRead - before[i].eventsRead,
    }));
    const serverCpuMs = perProcess.reduce((n, p) => n + p.cpuMs, 0);
    return {
      processes,
      runs: opts.runs,
      timedOut: !atGate,
      runsAtGate,
      wallMs: Math.round(wallMs),
      runsPerSec: round2((opts.runs * 1000) / wallMs),
      serverCpuMs,
      serverCpuMsPerRun: round2(serverCpuMs / opts.runs),
      serverKernelMsPerRun: round2(perProcess.reduce((n, p) => n + p.kernelMs, 0) / opts.runs),
      postgresCpuMs: postgresCpuMs === null ? null : Math.round(postgresCpuMs),
      postgresCpuMsPerRun: postgresCpuMs === null ? null : round2(postgresCpuMs / opts.runs),
      eventsReadPerRun: round2(perProcess.reduce((n, p) => n + p.eventsRead, 0) / opts.runs),
      claimsPerRun: round2(claims / opts.runs),
      perProcess,
    };
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${servers.map((s, i) => `server ${i} stderr:\n${s.stderr()}`).join('\n')}`);
  } finally {
    for (const a of agents) a.destroy();
    await Promise.all(servers.map((s) => s.stop()));
    await pg.end();
    await dropPostgresSchema(opts.pgUrl, schema);
  }
}

function describeSample(s: ProcsSample): string {
  const pgPart = s.postgresCpuMsPerRun === null ? '' : ` + PostgreSQL ${s.postgresCpuMsPerRun}`;
  const drove = s.perProcess.map((p) => p.drove).join('/');
  const declined = s.perProcess.map((p) => p.declined).join('/');
  const each = s.perProcess.map((p) => round2(p.cpuMs / s.runs)).join('/');
  return (
    `${s.timedOut ? `TIMED OUT with ${s.runsAtGate} of ${s.runs} runs at the gate; ` : ''}wall ${s.wallMs} ms, ${s.runsPerSec} runs/s; ` +
    `CPU ms/run ${s.serverCpuMsPerRun} (servers, ${s.serverKernelMsPerRun} in the kernel; by process ${each})${pgPart}; events read/run ${s.eventsReadPerRun}; claims/run ${s.claimsPerRun}; drove ${drove}, declined ${declined}`
  );
}

function printTable(result: ProcsBenchResult, log: (line: string) => void): void {
  const med = (s: Summary | null) => (s ? `${s.median}${s.samples.length > 1 ? ` (${s.min}-${s.max})` : ''}` : 'n/a');
  const header = ['processes', 'wall ms', 'runs/s', 'server CPU ms/run', 'of which kernel', 'PostgreSQL CPU ms/run', 'events read/run', 'runs driven per process', 'drivers declined'];
  const rows = result.points.map((p) => {
    const first = result.samples.find((s) => s.processes === p.processes)!;
    return [String(p.processes), med(p.wallMs), med(p.runsPerSec), med(p.serverCpuMsPerRun), med(p.serverKernelMsPerRun), med(p.postgresCpuMsPerRun), med(p.eventsReadPerRun), first.perProcess.map((x) => x.drove).join(' / '), first.perProcess.map((x) => x.declined).join(' / ')];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ');
  log(line(header));
  log(line(widths.map((w) => '-'.repeat(w))));
  for (const r of rows) log(line(r));
}

export async function runProcsBench(options: ProcsBenchOptions): Promise<ProcsBenchResult> {
  const opts: RunOptions = {
    ...options,
    runs: options.runs ?? 300,
    latencyMs: options.latencyMs ?? 500,
    concurrency: options.concurrency ?? 32,
    timeoutMs: options.timeoutMs ?? 600_000,
    pgUrl: options.pgUrl ?? DEFAULT_PG_URL,
  };
  const processes = options.processes ?? [1, 2, 3];
  const repeat = options.repeat ?? 1;
  const t0 = Date.now();
  const machine = { ...machineInfo(), loadAverage: loadavg().map(round2) };
  const ticksPerSecond = clockTicksPerSecond();
  opts.log(machineLine(machine));
  opts.log(
    `inputs: ${opts.runs} runs ${opts.perProcess ? 'per process (each as busy as one alone)' : 'per process count'}, launched ${opts.launchOn === 'first' ? 'all on the first process' : 'round-robin'}, ${opts.latencyMs} ms model, processes ${processes.join(', ')}, ${repeat} repetition(s), ` +
      `${opts.concurrency} launch requests in flight${opts.perProcess ? ' per process' : ''}, ${opts.warmUpRuns ? `after ${opts.warmUpRuns} warm-up runs per process, ` : ''}one PostgreSQL schema per sample`,
  );
  const samples: ProcsSample[] = [];
  for (const p of processes) {
    for (let i = 0; i < repeat; i++) {
      const s = await runOnce(opts, p, i, ticksPerSecond);
      samples.push(s);
      opts.log(`  ${p} process(es) #${i + 1}: ${describeSample(s)}`);
    }
  }
  const points: ProcsPoint[] = processes.map((p) => {
    const of = samples.filter((s) => s.processes === p);
    const pgValues = of.map((s) => s.postgresCpuMsPerRun);
    return {
      processes: p,
      wallMs: summariseFine(of.map((s) => s.wallMs)),
      runsPerSec: summariseFine(of.map((s) => s.runsPerSec)),
      serverCpuMsPerRun: summariseFine(of.map((s) => s.serverCpuMsPerRun)),
      serverKernelMsPerRun: summariseFine(of.map((s) => s.serverKernelMsPerRun)),
      postgresCpuMsPerRun: pgValues.every((v): v is number => v !== null) ? summariseFine(pgValues) : null,
      eventsReadPerRun: summariseFine(of.map((s) => s.eventsReadPerRun)),
    };
  });
  const fewest = points.reduce((a, b) => (b.processes < a.processes ? b : a));
  const most = points.reduce((a, b) => (b.processes > a.processes ? b : a));
  const growth = fewest.serverCpuMsPerRun.median > 0 ? round2(most.serverCpuMsPerRun.median / fewest.serverCpuMsPerRun.median) : 0;
  const result: ProcsBenchResult = {
    benchmark: 'procs',
    startedAt: new Date(t0).toISOString(),
    durationMs: Date.now() - t0,
    runs: opts.runs,
    latencyMs: opts.latencyMs,
    processes,
    points,
    samples,
    machine,
    inputs: { runs: opts.runs, latencyMs: opts.latencyMs, processes, repeat, concurrency: opts.concurrency, launchOn: opts.launchOn ?? 'each', perProcess: opts.perProcess ?? false, warmUpRuns: opts.warmUpRuns ?? 0, store: 'postgres' },
    targets: [
      {
        name: 'cpuPerRunGrowth',
        description: `server CPU per run at ${most.processes} process(es) / at ${fewest.processes}`,
        target: `<= ${PROCS_TARGETS.cpuPerRunGrowth}`,
        measured: growth,
        unit: 'x',
        met: growth <= PROCS_TARGETS.cpuPerRunGrowth,
      },
    ],
  };
  printTable(result, opts.log);
  opts.log('CPU: the server processes, first launch until their read models caught up; PostgreSQL: its backends of those servers\' connections (from /proc), n/a when not readable.');
  for (const t of result.targets) opts.log(`target ${t.name} (${t.description}) ${t.target} ${t.unit}: ${t.measured} ${t.met ? 'met' : 'MISSED'}`);
  return result;
}
