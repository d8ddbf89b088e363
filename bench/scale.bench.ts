import { Agent } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { httpCall, LAUNCH_BODY, launchRuns, serverEnv, startServer, waitUntil, waitUntilDriven, type Server } from './app-server';
import { cpuProbeText, type FdatasyncRate, machineInfo, type MachineInfo, machineLine, measureCpuSpeed, measureFdatasyncRate, summariseFine, type Summary } from './machine';

/**
 * One process, many runs (`npm run bench -- scale --runs N --latency-ms L`): N runs launched at
 * once through the real HTTP API of one `triad serve` process (the app `createHttpApp` builds, from
 * dist/, in a child process), driven by its supervisor on the offline model with a model latency of
 * L ms (TRIAD_OFFLINE_LATENCY_MS) until each waits for a human at the review gate.
 *
 * Measured in the server process: the event loop's lag while the runs are driven, the heap per
 * active run (when the most runs are active at once, after a forced gc) and per run waiting at the
 * gate (every driver released, after a forced gc), and when each run's driver started and
 * stopped. Measured by the client: the launch rate (202s per second, `concurrency` requests in
 * flight on keep-alive connections) and the wall time from the first launch to the last run
 * waiting. The latency floor is the model calls of a run × L: what a run takes if nothing but the
 * model counted.
 */

export interface ScaleBenchOptions {
  /** Runs launched at once; default 1000. */
  runs?: number;
  /** Model latency per call (ms); default 1000. */
  latencyMs?: number;
  /** Repetitions (a fresh server and store each); medians reported. Default 1. */
  repeat?: number;
  /** Launch requests in flight at once; default 64. */
  concurrency?: number;
  /** Store of the server; default sqlite (in a directory under dataDir). */
  store?: 'sqlite' | 'postgres' | 'memory';
  pgUrl?: string;
  dataDir: string;
  log: (line: string) => void;
  /** Duration of the fdatasync probe (ms); default 1000. */
  fdatasyncMs?: number;
  /** Stop waiting for the runs to reach the gate after this long (the sample says it timed out); default 10 min, TRIAD_BENCH_SCALE_TIMEOUT_MS. */
  timeoutMs?: number;
  /**
   * Runs launched and driven to the gate before the measurement, on the same server, so that what
   * is measured is a process whose code the JIT has compiled (see docs/BENCHMARKS.md); default 0.
   */
  warmUpRuns?: number;
}

export interface ScaleSample {
  runs: number;
  /** The runs were not all at the gate within `timeoutMs`: wallMs is the timeout, the heap per waiting run counts the active ones too. */
  timedOut: boolean;
  /** Drivers that stopped (at the gate) by the end. */
  runsAtGate: number;
  wallMs: number;
  latencyFloorMs: number;
  /** wallMs ÷ latencyFloorMs. */
  wallToFloor: number;
  /** Launches answered 202 per second, first request sent to last answer. */
  launchesPerSec: number;
  launchMs: number;
  /** Launch request round trips (ms). */
  launchLatencyMs: { p50: number; p99: number; max: number };
  /** Per run, the supervisor's start of its driver to the driver's stop at the gate (ms). */
  driveMs: { p50: number; p99: number; max: number };
  /** Model calls of one run (its ModelCallStarted events). */
  modelCallsPerRun: number;
  /** The server's CPU time (process.cpuUsage(), user + system) from the first launch to the last run at the gate, ÷ runs: launch and drive of one run. */
  serverCpuMsPerRun: number;
  /** Events of one run up to the gate, and their data + metadata JSON bytes (what a store writes, before its own overhead). */
  eventsPerRun: number;
  eventBytesPerRun: number;
  eventLoopLagMs: { samples: number; p50: number; p90: number; p99: number; max: number; mean: number };
  memory: {
    baselineHeapMiB: number;
    baselineRssMiB: number;
    /** The most drivers active at once, and the heap then (after a gc) minus the baseline, per active run. */
    peakActive: number;
    heapPerActiveRunKiB: number;
    /** RSS at that moment minus the baseline, per active run (RSS is not given back at once; an upper bound). */
    rssPerActiveRunKiB: number;
    /** Every run waiting at the gate, no driver held: heap after a gc minus the baseline, per run. */
    heapPerWaitingRunKiB: number;
  };
  /** Runs found at awaiting_review (a sample of them is checked through GET /v1/runs/:id). */
  waitingChecked: number;
  storeFsyncs: number | null;
  /**
   * The CPU probe (`measureCpuSpeed`) just before this repetition (the first repetition's is the
   * suite's own, on the machine line): this machine's speed varies from minute to minute.
   */
  cpuProbe: number;
}

export interface ScaleBenchResult {
  benchmark: 'scale';
  startedAt: string;
  durationMs: number;
  runs: number;
  latencyMs: number;
  store: string;
  /** Medians over the repetitions. */
  wallMs: Summary;
  latencyFloorMs: number;
  wallToFloor: Summary;
  launchesPerSec: Summary;
  eventLoopLagP99Ms: Summary;
  serverCpuMsPerRun: Summary;
  heapPerActiveRunKiB: Summary;
  heapPerWaitingRunKiB: Summary;
  samples: ScaleSample[];
  machine: MachineInfo & { loadAverage: number[] };
  fdatasync: FdatasyncRate | null;
  inputs: { runs: number; latencyMs: number; repeat: number; concurrency: number; store: string; warmUpRuns: number };
  targets: Array<{ name: string; description: string; target: string; measured: number; unit: string; met: boolean }>;
}

export const SCALE_TARGETS = {
  wallToFloor: 1.5,
  lagP99Ms: 20,
  heapPerActiveRunKiB: 100,
  heapPerWaitingRunKiB: 10,
  launchesPerSec: 2000,
};

const quantile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0);
const round2 = (n: number) => Math.round(n * 100) / 100;
const kib = (bytes: number, n: number) => (n > 0 ? round2(bytes / 1024 / n) : 0);

async function serverCpuMs(server: Server): Promise<number> {
  const { cpu } = await server.ask<{ cpu: { user: number; system: number } }>({ cmd: 'cpu' });
  return (cpu.user + cpu.system) / 1000;
}

async function runOnce(opts: Required<Pick<ScaleBenchOptions, 'runs' | 'latencyMs' | 'concurrency' | 'timeoutMs'>> & ScaleBenchOptions, index: number, cpuProbe: number): Promise<ScaleSample> {
  const dataDir = join(opts.dataDir, `server-${index}`);
  // One process driving every run at once is what is measured: its cap must not queue them
  // (the default cap, 100, would run 1,000 runs in ten waves).
  const env = serverEnv({ dataDir, store: opts.store ?? 'sqlite', pgUrl: opts.pgUrl, latencyMs: opts.latencyMs, maxActiveRuns: Math.max(opts.runs, opts.warmUpRuns ?? 0) + 1 });
  const server = await startServer(env);
  const agent = new Agent({ keepAlive: true, maxSockets: opts.concurrency });
  try {
    // Warm-up: one run through the whole path, so the baseline includes what the first run loads.
    const warm = await httpCall(agent, server.port, 'POST', '/v1/runs', LAUNCH_BODY);
    if (warm.status !== 202) throw new Error(`warm-up launch answered ${warm.status}: ${warm.body}`);
    const warmId = (JSON.parse(warm.body) as { runId: string }).runId;
    await httpCall(agent, server.port, 'POST', `/v1/runs/${warmId}/wait?timeoutMs=600000`);
    const events = JSON.parse((await httpCall(agent, server.port, 'GET', `/v1/runs/${warmId}/events`)).body) as {
      events: Array<{ type: string; data: unknown; metadata: unknown }>;
    };
    const modelCallsPerRun = events.events.filter((e) => e.type === 'ModelCallStarted').length;
    const warmUpRuns = opts.warmUpRuns ?? 0;
    if (warmUpRuns > 0) {
      await launchRuns(agent, server, warmUpRuns, opts.concurrency);
      await waitUntilDriven([server], warmUpRuns + 1, opts.timeoutMs, `the ${warmUpRuns} warm-up runs`);
    }
    const eventsPerRun = events.events.length;
    const eventBytesPerRun = events.events.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e.data)) + Buffer.byteLength(JSON.stringify(e.metadata)), 0);

    const baseline = (await server.ask<{ mem: { heapUsed: number; rss: number } }>({ cmd: 'baseline' })).mem;
    await server.ask({ cmd: 'start', runs: opts.runs });
    const cpuBefore = await serverCpuMs(server);
    const started = performance.now();
    const runIds: string[] = [];
    const launchLatency: number[] = [];
    await launchRuns(agent, server, opts.runs, opts.concurrency, { runIds, roundTripsMs: launchLatency });
    const launchMs = performance.now() - started;
    await server.ask({ cmd: 'launched' });
    let atGate = 0;
    const allAtGate = await waitUntil(async () => {
      const s = await server.ask<{ active: number; drove: number }>({ cmd: 'status' });
      atGate = s.drove;
      return s.drove >= opts.runs && s.active === 0;
    }, opts.timeoutMs);
    const wallMs = performance.now() - started;
    const cpuMs = (await serverCpuMs(server)) - cpuBefore;
    const end = await server.ask<{
      lag: ScaleSample['eventLoopLagMs'];
      peakActive: number;
      atPeak: { active: number; heapUsed: number; rss: number };
      waiting: { heapUsed: number; rss: number };
      drive: ScaleSample['driveMs'];
    }>({ cmd: 'stop' });
    // A sample of the runs: each must be waiting at the review gate (not checked after a timeout).
    const step = Math.max(1, Math.floor(runIds.length / 20));
    let waitingChecked = 0;
    for (let i = 0; allAtGate && i < runIds.length; i += step) {
      const r = await httpCall(agent, server.port, 'GET', `/v1/runs/${runIds[i]}`);
      const status = (JSON.parse(r.body) as { status?: string }).status;
      if (status !== 'awaiting_review') throw new Error(`run ${runIds[i]} is ${status}, not awaiting_review`);
      waitingChecked++;
    }
    const latencyFloorMs = modelCallsPerRun * opts.latencyMs;
    const sortedLaunch = [...launchLatency].sort((a, b) => a - b);
    return {
      runs: opts.runs,
      timedOut: !allAtGate,
      runsAtGate: allAtGate ? opts.runs : atGate,
      wallMs: Math.round(wallMs),
      latencyFloorMs,
      wallToFloor: latencyFloorMs > 0 ? round2(wallMs / latencyFloorMs) : 0,
      launchesPerSec: Math.round((opts.runs * 1000) / launchMs),
      launchMs: Math.round(launchMs),
      launchLatencyMs: { p50: round2(quantile(sortedLaunch, 0.5)), p99: round2(quantile(sortedLaunch, 0.99)), max: round2(sortedLaunch[sortedLaunch.length - 1] ?? 0) },
      driveMs: { p50: Math.round(end.drive.p50), p99: Math.round(end.drive.p99), max: Math.round(end.drive.max) },
      modelCallsPerRun,
      serverCpuMsPerRun: round2(cpuMs / opts.runs),
      eventsPerRun,
      eventBytesPerRun,
      eventLoopLagMs: {
        samples: end.lag.samples,
        // Recorded delay minus the 1 ms resolution.
        p50: round2(Math.max(0, end.lag.p50 - 1)),
        p90: round2(Math.max(0, end.lag.p90 - 1)),
        p99: round2(Math.max(0, end.lag.p99 - 1)),
        max: round2(Math.max(0, end.lag.max - 1)),
        mean: round2(Math.max(0, end.lag.mean - 1)),
      },
      memory: {
        baselineHeapMiB: Math.round(baseline.heapUsed / 1024 / 1024),
        baselineRssMiB: Math.round(baseline.rss / 1024 / 1024),
        peakActive: end.atPeak.active,
        heapPerActiveRunKiB: kib(end.atPeak.heapUsed - baseline.heapUsed, end.atPeak.active),
        rssPerActiveRunKiB: kib(end.atPeak.rss - baseline.rss, end.atPeak.active),
        heapPerWaitingRunKiB: kib(end.waiting.heapUsed - baseline.heapUsed, opts.runs),
      },
      waitingChecked,
      storeFsyncs: null,
      cpuProbe,
    };
  } catch (err) {
    throw new Error(`${(err as Error).message}\nserver stderr:\n${server.stderr()}`);
  } finally {
    agent.destroy();
    await server.stop();
  }
}

export async function runScaleBench(options: ScaleBenchOptions): Promise<ScaleBenchResult> {
  const opts = {
    ...options,
    runs: options.runs ?? 1000,
    latencyMs: options.latencyMs ?? 1000,
    repeat: options.repeat ?? 1,
    concurrency: options.concurrency ?? 64,
    timeoutMs: options.timeoutMs ?? (Number(process.env.TRIAD_BENCH_SCALE_TIMEOUT_MS) || 600_000),
  };
  const store = opts.store ?? 'sqlite';
  const t0 = Date.now();
  const machine = { ...machineInfo(), loadAverage: loadavg().map((l) => round2(l)) };
  const fdatasync = store === 'sqlite' ? measureFdatasyncRate(opts.dataDir, opts.fdatasyncMs ?? 1000) : null;
  opts.log(machineLine(machine));
  opts.log(`inputs: ${opts.runs} runs at once, ${opts.latencyMs} ms model, ${opts.repeat} repetition(s), ${opts.concurrency} launch requests in flight, ${opts.warmUpRuns ? `after ${opts.warmUpRuns} warm-up runs to the gate on the same server, ` : ''}${store} store${fdatasync ? ` (fdatasync ${Math.round(fdatasync.syncsPerSecond)}/s)` : ''}`);
  const samples: ScaleSample[] = [];
  for (let i = 0; i < opts.repeat; i++) {
    const s = await runOnce(opts, i, i === 0 ? machine.cpuProbe : measureCpuSpeed());
    samples.push(s);
    opts.log(
      `  #${i + 1}: ${s.timedOut ? `TIMED OUT with ${s.runsAtGate} of ${s.runs} runs at the gate; ` : ''}wall ${s.wallMs} ms (floor ${s.latencyFloorMs}, x${s.wallToFloor}); launches ${s.launchesPerSec}/s; lag p99 ${s.eventLoopLagMs.p99} ms; ` +
        `server CPU ${s.serverCpuMsPerRun} ms/run; heap/active run ${s.memory.heapPerActiveRunKiB} KiB (${s.memory.peakActive} active), /waiting run ${s.memory.heapPerWaitingRunKiB} KiB; ${cpuProbeText(s)} before it`,
    );
  }
  const sum = (f: (s: ScaleSample) => number): Summary => summariseFine(samples.map(f));
  const result: ScaleBenchResult = {
    benchmark: 'scale',
    startedAt: new Date(t0).toISOString(),
    durationMs: Date.now() - t0,
    runs: opts.runs,
    latencyMs: opts.latencyMs,
    store,
    wallMs: sum((s) => s.wallMs),
    latencyFloorMs: samples[0].latencyFloorMs,
    wallToFloor: sum((s) => s.wallToFloor),
    launchesPerSec: sum((s) => s.launchesPerSec),
    eventLoopLagP99Ms: sum((s) => s.eventLoopLagMs.p99),
    serverCpuMsPerRun: sum((s) => s.serverCpuMsPerRun),
    heapPerActiveRunKiB: sum((s) => s.memory.heapPerActiveRunKiB),
    heapPerWaitingRunKiB: sum((s) => s.memory.heapPerWaitingRunKiB),
    samples,
    machine,
    fdatasync,
    inputs: { runs: opts.runs, latencyMs: opts.latencyMs, repeat: opts.repeat, concurrency: opts.concurrency, store, warmUpRuns: opts.warmUpRuns ?? 0 },
    targets: [],
  };
  const target = (name: string, description: string, limit: number, measured: number, unit: string, atMost = true) => ({
    name,
    description,
    target: `${atMost ? '<=' : '>='} ${limit}`,
    measured,
    unit,
    met: atMost ? measured <= limit : measured >= limit,
  });
  result.targets = [
    target('wallToFloor', 'wall time / latency floor', SCALE_TARGETS.wallToFloor, result.wallToFloor.median, 'x'),
    target('eventLoopLagP99', 'event-loop lag p99', SCALE_TARGETS.lagP99Ms, result.eventLoopLagP99Ms.median, 'ms'),
    target('heapPerActiveRun', 'heap per active run', SCALE_TARGETS.heapPerActiveRunKiB, result.heapPerActiveRunKiB.median, 'KiB'),
    target('heapPerWaitingRun', 'heap per run waiting for a human', SCALE_TARGETS.heapPerWaitingRunKiB, result.heapPerWaitingRunKiB.median, 'KiB'),
    target('launchRate', 'launches accepted per second', SCALE_TARGETS.launchesPerSec, result.launchesPerSec.median, '/s', false),
  ];
  const med = (s: Summary) => `${s.median} (${s.min}-${s.max})`;
  const rows: Array<[string, string]> = [
    [`measure (${opts.runs} runs, ${opts.latencyMs} ms model, ${store})`, `median of ${samples.length} (min-max)`],
    ['wall ms, first launch to last run at the gate', `${med(result.wallMs)}; latency floor ${result.latencyFloorMs} (${samples[0].modelCallsPerRun} model calls x ${opts.latencyMs} ms)`],
    ['  wall / floor', med(result.wallToFloor)],
    ['  per-run drive ms p50 / p99 / max (first repetition)', `${samples[0].driveMs.p50} / ${samples[0].driveMs.p99} / ${samples[0].driveMs.max}`],
    ['server CPU ms per run (launch and drive)', med(result.serverCpuMsPerRun)],
    ['events per run to the gate / their JSON bytes', `${samples[0].eventsPerRun} / ${samples[0].eventBytesPerRun}`],
    ['launches/s (202s)', med(result.launchesPerSec)],
    ['  launch round trip ms p50 / p99 (first repetition)', `${samples[0].launchLatencyMs.p50} / ${samples[0].launchLatencyMs.p99}`],
    ['event-loop lag ms p99', med(result.eventLoopLagP99Ms)],
    ['  p50 / p90 / max (first repetition)', `${samples[0].eventLoopLagMs.p50} / ${samples[0].eventLoopLagMs.p90} / ${samples[0].eventLoopLagMs.max}`],
    ['heap KiB per active run (after gc)', `${med(result.heapPerActiveRunKiB)}; ${samples[0].memory.peakActive} active at once`],
    ['  rss KiB per active run (first repetition)', `${samples[0].memory.rssPerActiveRunKiB}`],
    ['heap KiB per run waiting at the gate (after gc)', med(result.heapPerWaitingRunKiB)],
  ];
  const w0 = Math.max(...rows.map((r) => r[0].length));
  rows.forEach((r, i) => {
    opts.log(`${r[0].padEnd(w0)}  ${r[1]}`);
    if (i === 0) opts.log(`${'-'.repeat(w0)}  ${'-'.repeat(r[1].length)}`);
  });
  for (const t of result.targets) opts.log(`target ${t.name} (${t.description}) ${t.target} ${t.unit}: ${t.measured} ${t.met ? 'met' : 'MISSED'}`);
  return result;
}
