import { SUITES } from '../../bench/bench-command';
import { runStartupBench, type StartupBenchResult } from '../../bench/startup.bench';
import { tempDir } from '../support/temp-dir';

/**
 * A tiny run of the start-up benchmark: the program from dist/ in new processes, as the bundle and
 * module by module. The shape of its result, never timings.
 */
describe('startup benchmark (tiny run)', () => {
  let result: StartupBenchResult;
  const lines: string[] = [];
  const dir = tempDir('triad-startup-bench-');

  beforeAll(async () => {
    result = await runStartupBench({ runs: 1, dataDir: dir.path, log: (line) => lines.push(line) });
  }, 120_000);

  afterAll(() => dir.remove());

  it('is registered as the `startup` suite', () => {
    expect(Object.keys(SUITES)).toContain('startup');
  });

  it('reports wall time and CPU of `--version` and of `serve` until it listens, both ways, with the cold start apart', () => {
    expect(result).toMatchObject({ benchmark: 'startup', inputs: { runs: 1 } });
    for (const command of ['version', 'serve'] as const) {
      for (const way of ['bundle', 'modules'] as const) {
        const side = result[command][way];
        expect(side.wallMs.samples).toHaveLength(1);
        expect(side.cpuMs.median).toBeGreaterThan(0);
        expect(side.wallMs.median).toBeGreaterThan(0);
      }
      expect(result[command].bundle.cold).toEqual({ wallMs: expect.any(Number), cpuMs: expect.any(Number) });
      expect(result[command].modules.cold).toBeNull();
    }
    expect(lines.some((l) => l.startsWith('machine:'))).toBe(true);
    expect(lines.some((l) => l.includes('bundle, first start'))).toBe(true);
  });
});
