import { SUITES } from '../../bench/bench-command';
import { runProcsBench, type ProcsBenchResult } from '../../bench/procs.bench';
import { PG_URL, withClient } from '../support/pg';
import { tempDir } from '../support/temp-dir';

/**
 * A tiny run of the procs benchmark through real servers (dist/, in child processes) on the real
 * PostgreSQL: the shape of its result and that every schema it made is gone, never timings.
 */
describe('procs benchmark (tiny run)', () => {
  let result: ProcsBenchResult;
  const lines: string[] = [];
  const dir = tempDir('triad-procs-bench-');

  beforeAll(async () => {
    result = await runProcsBench({ runs: 4, latencyMs: 5, processes: [1, 2], concurrency: 2, warmUpRuns: 2, pgUrl: PG_URL, dataDir: dir.path, log: (line) => lines.push(line) });
  }, 240_000);

  afterAll(() => dir.remove());

  it('is registered as the `procs` suite', () => {
    expect(Object.keys(SUITES)).toContain('procs');
  });

  it('reports runs/s, CPU per run and the runs each process drove, per process count', () => {
    expect(result).toMatchObject({ benchmark: 'procs', runs: 4, latencyMs: 5, processes: [1, 2], inputs: { warmUpRuns: 2 } });
    expect(result.samples.map((s) => s.processes)).toEqual([1, 2]);
    for (const s of result.samples) {
      expect(s).toMatchObject({ timedOut: false, runsAtGate: 4 });
      expect(s.perProcess).toHaveLength(s.processes);
      // Launched round-robin; every run driven by one of the processes.
      expect(s.perProcess.map((p) => p.launched)).toEqual(s.processes === 1 ? [4] : [2, 2]);
      expect(s.perProcess.reduce((n, p) => n + p.drove, 0)).toBeGreaterThanOrEqual(4);
      expect(new Set(s.perProcess.map((p) => p.owner)).size).toBe(s.processes);
      expect(s.wallMs).toBeGreaterThan(0);
      expect(s.runsPerSec).toBeGreaterThan(0);
      expect(s.serverCpuMsPerRun).toBeGreaterThan(0);
      expect(s.eventsReadPerRun).toBeGreaterThan(0);
      expect(s.claimsPerRun).toBeGreaterThanOrEqual(1);
      if (s.postgresCpuMsPerRun !== null) expect(s.postgresCpuMsPerRun).toBeGreaterThanOrEqual(0);
    }
    expect(result.points.map((p) => p.processes)).toEqual([1, 2]);
    expect(result.points[0].serverCpuMsPerRun.samples).toHaveLength(1);
    expect(result.machine.cores).toBeGreaterThan(0);
    expect(result.targets.map((t) => t.name)).toEqual(['cpuPerRunGrowth']);
    expect(typeof result.targets[0].met).toBe('boolean');
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('drops the schemas it made', async () => {
    const { rows } = await withClient((c) => c.query(`SELECT nspname FROM pg_namespace WHERE nspname LIKE 'triad_bench_procs_${process.pid}_%'`));
    expect(rows).toEqual([]);
  });

  it('prints the machine, the inputs, a table and the target', () => {
    const text = lines.join('\n');
    expect(text).toMatch(/^machine: /m);
    expect(text).toMatch(/^inputs: 4 runs per process count, launched round-robin, 5 ms model, processes 1, 2, .*after 2 warm-up runs per process, /m);
    expect(text).toMatch(/^processes +wall ms +runs\/s +server CPU ms\/run/m);
    expect(text).toMatch(/^target cpuPerRunGrowth .* (met|MISSED)$/m);
  });
});
