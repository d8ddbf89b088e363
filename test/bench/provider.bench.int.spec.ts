import { SUITES } from '../../bench/bench-command';
import { runProviderBench, type ProviderBenchResult } from '../../bench/provider.bench';
import { tempDir } from '../support/temp-dir';

/**
 * A tiny run of the production-path benchmark: the real server (dist/, in a child process) on the
 * real Anthropic SDK against the loopback Messages API. The shape of its result, never timings.
 */
describe('provider benchmark (tiny run)', () => {
  let result: ProviderBenchResult;
  const lines: string[] = [];
  const dir = tempDir('triad-provider-bench-');

  beforeAll(async () => {
    result = await runProviderBench({ runs: 3, latencyMs: 5, concurrency: 2, dataDir: dir.path, log: (line) => lines.push(line) });
  }, 120_000);

  afterAll(() => dir.remove());

  it('is registered as the `provider` suite', () => {
    expect(Object.keys(SUITES)).toContain('provider');
  });

  it('reports wall time against the floor, launches, lag, /health, CPU, memory and requests per model call', () => {
    expect(result).toMatchObject({ benchmark: 'provider', inputs: { runs: 3, latencyMs: 5, store: 'sqlite', builds: ['this'] } });
    expect(result.samples).toHaveLength(1);
    const s = result.samples[0];
    // Plan, write a file, submit the work, approve: four calls to the review gate.
    expect(s.modelCallsPerRun).toBe(4);
    expect(s).toMatchObject({ build: 'this', runs: 3, timedOut: false, latencyFloorMs: 20 });
    expect(s.requests.modelCalls).toBe(12);
    // Every model call is one messages request (no retries).
    expect(s.requests.messages).toBe(12);
    // Four short calls, far below the 200k window: no token count is worth asking for.
    expect(s.requests.countTokens).toBe(0);
    expect(s.requestsPerModelCall).toBe(1);
    expect(s.requests.connections).toBeGreaterThan(0);
    expect(s.wallMs).toBeGreaterThan(0);
    expect(s.launchesPerSec).toBeGreaterThan(0);
    expect(s.serverCpuMsPerRun).toBeGreaterThan(0);
    expect(s.serverCpuMsPerModelCall).toBeCloseTo(s.serverCpuMsPerRun / 4, 1);
    for (const k of ['p50', 'p99', 'max'] as const) {
      expect(s.eventLoopLagMs[k]).toBeGreaterThanOrEqual(0);
      expect(s.healthMs[k]).toBeGreaterThanOrEqual(0);
    }
    expect(s.healthMs.samples).toBeGreaterThan(0);
    expect(typeof s.memory.heapPerActiveRunKiB).toBe('number');
    expect(typeof s.memory.rssPerActiveRunKiB).toBe('number');
    expect(s.loadAverage).toHaveLength(3);
    expect(result.builds.this.serverCpuMsPerRun.samples).toHaveLength(1);
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('prints the machine, the inputs, each sample and the medians', () => {
    const text = lines.join('\n');
    expect(text).toMatch(/^machine: .*CPU probe/m);
    expect(text).toMatch(/^inputs: 3 runs, loopback Messages API answering after 5 ms/m);
    expect(text).toMatch(/#1 this: wall \d+ ms \(floor 20, x[\d.]+\).*HTTP requests\/model call/);
    expect(text).toMatch(/^this medians: wall \d+ ms/m);
  });
});
