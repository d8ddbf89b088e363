import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { closeSync, fdatasyncSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { cpus, platform, release, totalmem, arch } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';

/** Shared by the benchmarks: what machine a figure came from, and how fast its disk can sync. */

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  totalMemoryGiB: number;
  platform: string;
  osRelease: string;
  arch: string;
  nodeVersion: string;
  /**
   * The CPU's speed when the suite started: iterations per second of a fixed workload on one
   * thread (`measureCpuSpeed`). A shared or virtual machine runs at different speeds from hour to
   * hour; figures from two sittings compare only as far as their probes agree.
   */
  cpuProbe: number;
}

export function machineInfo(): MachineInfo {
  const cpuList = cpus();
  return {
    cpuModel: cpuList[0]?.model.trim() ?? 'unknown',
    cores: cpuList.length,
    totalMemoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    platform: platform(),
    osRelease: release(),
    arch: arch(),
    nodeVersion: process.version,
    cpuProbe: measureCpuSpeed(),
  };
}

/** The probe's workload, built once: an event-like record of about 2 KB. */
const PROBE_RECORD = {
  type: 'ToolCallCompleted',
  data: { runId: 'run_0123456789abcdef01234567', turn: 12, tool: 'write_file', input: { path: 'src/index.ts', content: 'x'.repeat(1200) }, ok: true },
  metadata: { actor: 'executor', process: 'host:1234:abcdef01', causationId: '01234567-89ab-cdef-0123-456789abcdef', tags: ['a', 'b', 'c'] },
};

/**
 * How long the machine probes run, in ms: the CPU probe's warm-up and each of its five slices, and
 * the fdatasync loop when its caller names no length. By default 400, 60 and 1000, steady enough
 * to compare sittings; TRIAD_BENCH_PROBES=quick makes them 20, 5 and 50, for the suite's tiny
 * benchmark runs, which check that the probes are taken and printed, not their figures, and would
 * otherwise spend most of their time in them.
 */
export function probeLengths(env: NodeJS.ProcessEnv = process.env): { warmUpMs: number; sliceMs: number; fdatasyncMs: number } {
  return env.TRIAD_BENCH_PROBES === 'quick' ? { warmUpMs: 20, sliceMs: 5, fdatasyncMs: 50 } : { warmUpMs: 400, sliceMs: 60, fdatasyncMs: 1000 };
}

/**
 * Iterations per second of a fixed piece of the work triad's hot paths do (JSON out and back in,
 * a SHA-256 of the text, a map of the parsed records), on this thread: after a warm-up, the median
 * of five slices (`probeLengths`). It reads the CPU's speed now, not triad's.
 */
export function measureCpuSpeed(): number {
  const { warmUpMs, sliceMs } = probeLengths();
  const slice = (ms: number) => {
    const seen = new Map<number, unknown>();
    let n = 0;
    const started = performance.now();
    while (performance.now() - started < ms) {
      for (let i = 0; i < 20; i++, n++) {
        const text = JSON.stringify({ ...PROBE_RECORD, position: n });
        seen.set(n % 64, JSON.parse(text));
        createHash('sha256').update(text).digest('hex');
      }
    }
    return (n * 1000) / (performance.now() - started);
  };
  slice(warmUpMs);
  const rates = Array.from({ length: 5 }, () => slice(sliceMs)).sort((a, b) => a - b);
  return Math.round(rates[2]);
}

/** The probe as the suites print it. */
export function cpuProbeText(machine: Pick<MachineInfo, 'cpuProbe'>): string {
  return `CPU probe ${machine.cpuProbe.toLocaleString('en-US')}/s`;
}

/**
 * The `machine:` line the suites print first: CPU, cores, memory, OS, Node and the CPU probe, then
 * the load average when the suite read one, then what else the suite measured of the machine.
 */
export function machineLine(machine: MachineInfo & { loadAverage?: readonly number[] }, ...extras: string[]): string {
  const load = machine.loadAverage ? [`load ${machine.loadAverage.join(' ')}`] : [];
  const head = `machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.totalMemoryGiB} GiB, ${machine.platform} ${machine.osRelease}, Node ${machine.nodeVersion}, ${cpuProbeText(machine)}`;
  return [head, ...load, ...extras].join('; ');
}

export interface FdatasyncRate {
  /** Directory measured: the one the benchmark writes its databases to. */
  dir: string;
  syncsPerSecond: number;
  bytesPerWrite: number;
  durationMs: number;
}

/**
 * The ceiling for durable single-event commits: a loop of a small write plus fdatasync on one
 * file in `dir`, for about `durationMs` (by default `probeLengths`'). A store that syncs once per
 * commit cannot beat it.
 */
export function measureFdatasyncRate(dir: string, durationMs = probeLengths().fdatasyncMs, bytesPerWrite = 512): FdatasyncRate {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `fdatasync-probe-${process.pid}.bin`);
  const fd = openSync(file, 'w');
  const buffer = Buffer.alloc(bytesPerWrite, 0x61);
  let syncs = 0;
  const started = process.hrtime.bigint();
  let elapsedMs = 0;
  try {
    while (elapsedMs < durationMs) {
      writeSync(fd, buffer, 0, buffer.length, (syncs % 8) * bytesPerWrite);
      fdatasyncSync(fd);
      syncs++;
      elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  return { dir, syncsPerSecond: Math.round((syncs / elapsedMs) * 1000), bytesPerWrite, durationMs: Math.round(elapsedMs) };
}

export function sqliteVersion(): string {
  const db = new Database(':memory:');
  try {
    return (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
  } finally {
    db.close();
  }
}

export async function postgresServerVersion(url: string): Promise<string> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
    return rows[0].server_version;
  } finally {
    await client.end();
  }
}

/** Drops a benchmark's own PostgreSQL schema and everything in it. */
export async function dropPostgresSchema(url: string, schema: string): Promise<void> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

export interface Summary {
  median: number;
  min: number;
  max: number;
  samples: number[];
}

/**
 * Median to two decimals with the min, max and samples as measured: for figures where integers are
 * too coarse (a ratio, ms per run, a few KiB).
 */
export function summariseFine(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median: Math.round(median * 100) / 100, min: sorted[0], max: sorted[sorted.length - 1], samples };
}

/** Median with min and max of repeated runs; the median is what benchmarks report. */
export function summarise(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median: Math.round(median), min: Math.round(sorted[0]), max: Math.round(sorted[sorted.length - 1]), samples: samples.map(Math.round) };
}
