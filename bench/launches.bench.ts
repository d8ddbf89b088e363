import { Agent } from 'node:http';
import { loadavg } from 'node:os';
import { launchRuns, serverEnv, startServer } from './app-server';
import { cpuProbeText, type FdatasyncRate, machineInfo, type MachineInfo, machineLine, measureCpuSpeed, measureFdatasyncRate, summarise, type Summary } from './machine';

/**
 * Launches alone (`npm run bench -- launches`): how fast one `triad serve` accepts `POST /v1/runs`
 * when it drives none of them — its cap (`TRIAD_MAX_ACTIVE_RUNS`) is 1 and one run holds it, so
 * every launch is recorded and queued. What a launch costs (HTTP, validation, the auth guard, the
 * command path, hashing, the group commit and its fdatasync), apart from what driving costs; the
 * `scale` suite measures both together. Target: ≥ 2,000 launches accepted per second.
 */

export interface LaunchesBenchOptions {
  /** Launches measured per repetition; default 3,000. */
  launches?: number;
  /**
   * Launches before the measured ones, on the same server; default 5,000. A process fresh from its
   * start runs its code unoptimised until V8 has compiled the hot paths (about 3,000 launches
   * here), at about twice the CPU per launch: these are measured too, as the cold figure.
   */
  warmUp?: number;
  /** Repetitions (a fresh server each); default 3. */
  repeat?: number;
  /** Requests in flight; default 64. */
  concurrency?: number;
  dataDir: string;
  log: (line: string) => void;
}

export interface LaunchesSample {
  launches: number;
  perSec: number;
  p50Ms: number;
  p99Ms: number;
  /** The server's CPU (user + system) per launch, over the measured launches. */
  cpuMsPerLaunch: number;
  /** The warm-up's launches, the first after the server's start: their rate and CPU per launch. */
  cold: { launches: number; perSec: number; cpuMsPerLaunch: number };
  /**
   * The CPU probe (`measureCpuSpeed`) just before this repetition (the first repetition's is the
   * suite's own, on the machine line): this machine's speed varies from minute to minute.
   */
  cpuProbe: number;
}

export interface LaunchesBenchResult {
  benchmark: 'launches';
  machine: MachineInfo & { loadAverage: number[] };
  fdatasync: FdatasyncRate;
  inputs: { launches: number; repeat: number; concurrency: number; warmUp: number; store: 'sqlite' };
  samples: LaunchesSample[];
  perSec: Summary;
  cpuUsPerLaunch: Summary;
  /** The same for the warm-up's launches (the server's first). */
  coldPerSec: Summary;
  coldCpuUsPerLaunch: Summary;
  targets: Array<{ name: string; value: number; target: string; met: boolean }>;
}

export const LAUNCHES_TARGET_PER_SEC = 2000;
export const DEFAULT_WARM_UP = 5000;

const round2 = (n: number) => Math.round(n * 100) / 100;

async function once(opts: Required<Omit<LaunchesBenchOptions, 'log'>>, index: number, cpuProbe: number): Promise<LaunchesSample> {
  const env = serverEnv({ dataDir: `${opts.dataDir}/launches-${index}`, store: 'sqlite', latencyMs: 1000, maxActiveRuns: 1 });
  const server = await startServer({ ...env, TRIAD_MAX_ACTIVE_RUNS: '1' });
  const agent = new Agent({ keepAlive: true, maxSockets: opts.concurrency });
  try {
    const cpu = async () => {
      const c = (await server.ask<{ cpu: NodeJS.CpuUsage }>({ cmd: 'cpu' })).cpu;
      return { cpuMs: (c.user + c.system) / 1000, at: performance.now() };
    };
    const per = (n: number, from: { cpuMs: number; at: number }, to: { cpuMs: number; at: number }) => ({
      perSec: n > 0 ? Math.round((n * 1000) / (to.at - from.at)) : 0,
      cpuMsPerLaunch: n > 0 ? round2((to.cpuMs - from.cpuMs) / n) : 0,
    });
    const start = await cpu();
    await launchRuns(agent, server, opts.warmUp, opts.concurrency);
    const warm = await cpu();
    const latencies: number[] = [];
    await launchRuns(agent, server, opts.launches, opts.concurrency, { roundTripsMs: latencies });
    const end = await cpu();
    latencies.sort((a, b) => a - b);
    return {
      launches: opts.launches,
      ...per(opts.launches, warm, end),
      p50Ms: round2(latencies[Math.floor(latencies.length / 2)]),
      p99Ms: round2(latencies[Math.floor(latencies.length * 0.99)]),
      cold: { launches: opts.warmUp, ...per(opts.warmUp, start, warm) },
      cpuProbe,
    };
  } catch (err) {
    throw new Error(`${(err as Error).message}\nserver stderr:\n${server.stderr()}`);
  } finally {
    agent.destroy();
    await server.stop();
  }
}

export async function runLaunchesBench(options: LaunchesBenchOptions): Promise<LaunchesBenchResult> {
  const opts = { launches: options.launches ?? 3000, warmUp: options.warmUp ?? DEFAULT_WARM_UP, repeat: options.repeat ?? 3, concurrency: options.concurrency ?? 64, dataDir: options.dataDir };
  const machine = { ...machineInfo(), loadAverage: loadavg().map(round2) };
  const fdatasync = measureFdatasyncRate(opts.dataDir);
  options.log(machineLine(machine, `fdatasync ${fdatasync.syncsPerSecond}/s`));
  options.log(`inputs: ${opts.launches} launches after ${opts.warmUp} to warm up (the server's first, measured as cold), ${opts.concurrency} in flight on keep-alive connections, one server (SQLite, cap 1: nothing driven), ${opts.repeat} repetition(s)`);
  const samples: LaunchesSample[] = [];
  for (let i = 0; i < opts.repeat; i++) {
    const s = await once(opts, i, i === 0 ? machine.cpuProbe : measureCpuSpeed());
    samples.push(s);
    options.log(
      `  #${i + 1}: ${s.perSec} launches/s, round trip p50 ${s.p50Ms} ms, p99 ${s.p99Ms} ms, server CPU ${s.cpuMsPerLaunch} ms per launch; ` +
        `cold (the first ${s.cold.launches}): ${s.cold.perSec} launches/s, ${s.cold.cpuMsPerLaunch} ms per launch; ${cpuProbeText(s)} before it`,
    );
  }
  const perSec = summarise(samples.map((s) => s.perSec));
  const cpuUsPerLaunch = summarise(samples.map((s) => s.cpuMsPerLaunch * 1000));
  const coldPerSec = summarise(samples.map((s) => s.cold.perSec));
  const coldCpuUsPerLaunch = summarise(samples.map((s) => s.cold.cpuMsPerLaunch * 1000));
  options.log(`launches/s: ${perSec.median} (${perSec.min}-${perSec.max}); server CPU per launch: ${cpuUsPerLaunch.median} µs (${cpuUsPerLaunch.min}-${cpuUsPerLaunch.max})`);
  if (opts.warmUp > 0) {
    options.log(
      `cold, the first ${opts.warmUp} after start: ${coldPerSec.median} launches/s (${coldPerSec.min}-${coldPerSec.max}); ${coldCpuUsPerLaunch.median} µs (${coldCpuUsPerLaunch.min}-${coldCpuUsPerLaunch.max})`,
    );
  }
  const met = perSec.median >= LAUNCHES_TARGET_PER_SEC;
  options.log(`target launchRate (launches accepted per second, nothing driven) >= ${LAUNCHES_TARGET_PER_SEC} /s: ${perSec.median} ${met ? 'met' : 'MISSED'}`);
  return {
    benchmark: 'launches',
    machine,
    fdatasync,
    inputs: { launches: opts.launches, repeat: opts.repeat, concurrency: opts.concurrency, warmUp: opts.warmUp, store: 'sqlite' },
    samples,
    perSec,
    cpuUsPerLaunch,
    coldPerSec,
    coldCpuUsPerLaunch,
    targets: [{ name: 'launchRate', value: perSec.median, target: `>= ${LAUNCHES_TARGET_PER_SEC}`, met }],
  };
}
