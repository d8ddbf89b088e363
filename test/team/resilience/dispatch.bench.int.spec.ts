import { SUITES } from '../../../bench/bench-command';
import { runDispatchBench, type DispatchBenchResult } from '../../../bench/dispatch.bench';
import { tempDir } from '../../support/temp-dir';

/** A tiny run of the dispatch benchmark: its shape, and that concurrency shows (never exact timings). */
describe('dispatch benchmark (tiny run)', () => {
  let result: DispatchBenchResult;
  const lines: string[] = [];
  const dir = tempDir('triad-dispatch-bench-');

  beforeAll(async () => {
    result = await runDispatchBench({ tools: 4, toolMs: 30, runs: 2, dataDir: dir.path, log: (line) => lines.push(line) });
  }, 60_000);
  afterAll(() => dir.remove());

  it('is registered as the `dispatch` suite', () => {
    expect(Object.keys(SUITES)).toContain('dispatch');
  });

  it('reports the dispatch alone and the driver tool step per store, three-pass and serial', () => {
    expect(result).toMatchObject({ benchmark: 'dispatch', tools: 4, toolMs: 30, runs: 2, target: { limit: 39 } });
    for (const s of [result.dispatch['three-pass'], result.dispatch.serial, result.driver.memory['three-pass'], result.driver.sqlite.serial]) {
      expect(s.samplesMs).toHaveLength(2);
      expect(s.medianMs).toBeGreaterThan(0);
    }
    expect(result.machine.cores).toBeGreaterThan(0);
    expect(lines.join('\n')).toMatch(/target: three-pass tool step/);
  });

  // How much faster three-pass is, is the benchmark's to say (docs/BENCHMARKS.md): timings on a
  // loaded machine order nothing, so only the floor that no load can lower is asserted here. That
  // read-only tools run concurrently is asserted by test/team/resilience/scripted-dispatch.int.spec.ts.
  it('serial takes at least all four tools, one after another', () => {
    expect(result.driver.memory.serial.medianMs).toBeGreaterThanOrEqual(4 * 30 - 5);
    expect(result.dispatch.serial.medianMs).toBeGreaterThanOrEqual(4 * 30 - 5);
  });
});
