import Database from 'better-sqlite3';
import { join } from 'node:path';
import { SUITES } from '../../bench/bench-command';
import { runScaleBench, type ScaleBenchResult } from '../../bench/scale.bench';
import { tempDir } from '../support/temp-dir';

/**
 * A tiny run of the scale benchmark through the real server (dist/, in a child process): the
 * shape of its result, never timings.
 */
describe('scale benchmark (tiny run)', () => {
  let result: ScaleBenchResult;
  const lines: string[] = [];
  const dir = tempDir('triad-scale-bench-');

  beforeAll(async () => {
    result = await runScaleBench({ runs: 4, warmUpRuns: 3, latencyMs: 5, concurrency: 2, dataDir: dir.path, log: (line) => lines.push(line), fdatasyncMs: 50 });
  }, 120_000);

  afterAll(() => dir.remove());

  it('is registered as the `scale` suite', () => {
    expect(Object.keys(SUITES)).toContain('scale');
  });

  it('reports wall time against the latency floor, lag, memory and launch rate', () => {
    expect(result).toMatchObject({ benchmark: 'scale', runs: 4, latencyMs: 5, store: 'sqlite', inputs: { warmUpRuns: 3 } });
    expect(result.samples).toHaveLength(1);
    const s = result.samples[0];
    // The offline model's run to the review gate: plan, work and review, one call per turn.
    expect(s.modelCallsPerRun).toBeGreaterThanOrEqual(3);
    expect(result.latencyFloorMs).toBe(s.modelCallsPerRun * 5);
    expect(s.eventsPerRun).toBeGreaterThan(s.modelCallsPerRun);
    expect(s.eventBytesPerRun).toBeGreaterThan(0);
    expect(s.wallMs).toBeGreaterThan(0);
    expect(s.launchesPerSec).toBeGreaterThan(0);
    expect(s).toMatchObject({ timedOut: false, runsAtGate: 4, waitingChecked: 4 });
    for (const k of ['p50', 'p90', 'p99', 'max', 'mean'] as const) expect(s.eventLoopLagMs[k]).toBeGreaterThanOrEqual(0);
    expect(typeof s.memory.heapPerActiveRunKiB).toBe('number');
    expect(typeof s.memory.heapPerWaitingRunKiB).toBe('number');
    expect(s.memory.peakActive).toBeGreaterThanOrEqual(0);
    expect(result.wallMs.samples).toHaveLength(1);
    expect(result.machine.cores).toBeGreaterThan(0);
    expect(result.fdatasync?.syncsPerSecond).toBeGreaterThan(0);
    expect(result.targets.map((t) => t.name)).toEqual(['wallToFloor', 'eventLoopLagP99', 'heapPerActiveRun', 'heapPerWaitingRun', 'launchRate']);
    for (const t of result.targets) expect(typeof t.met).toBe('boolean');
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('drives its warm-up runs on the same server before it measures: one to count model calls, then those asked for', () => {
    const db = new Database(join(dir.path, 'server-0', 'triad.db'), { readonly: true });
    try {
      expect(db.prepare(`SELECT count(*) AS n FROM events WHERE type = 'RunLaunched'`).get()).toEqual({ n: 1 + 3 + 4 });
    } finally {
      db.close();
    }
  });

  it('prints the machine, the inputs, a table and the targets', () => {
    const text = lines.join('\n');
    expect(text).toMatch(/^machine: /m);
    expect(text).toMatch(/^inputs: 4 runs at once, 5 ms model.* after 3 warm-up runs to the gate on the same server/m);
    expect(text).toMatch(/^wall ms, first launch to last run at the gate/m);
    expect(text).toMatch(/^target launchRate .* (met|MISSED)$/m);
  });
});
