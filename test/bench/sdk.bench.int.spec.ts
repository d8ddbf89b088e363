import { SUITES } from '../../bench/bench-command';
import { runSdkBench, SDK_WAYS, type SdkBenchResult } from '../../bench/sdk.bench';

/**
 * A tiny run of the SDK benchmark: client processes on the real Anthropic SDK (on Node's fetch and
 * on node:http) and on raw node:http, against the loopback Messages API. The shape of its result,
 * never timings.
 */
describe('sdk benchmark (tiny run)', () => {
  let result: SdkBenchResult;
  const lines: string[] = [];

  beforeAll(async () => {
    result = await runSdkBench({ runs: 5, repeat: 1, log: (line) => lines.push(line) });
  }, 120_000);

  it('is registered as the `sdk` suite', () => {
    expect(Object.keys(SUITES)).toContain('sdk');
  });

  it('measures the client CPU of each way per call, one sample each', () => {
    expect(result).toMatchObject({ benchmark: 'sdk', inputs: { calls: 5, warmUpCalls: 5, inFlight: 20, repeat: 1 } });
    expect(result.inputs.sdkVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(result.samples.map((s) => s.way)).toEqual([...SDK_WAYS]);
    for (const s of result.samples) {
      expect(s.calls).toBe(5);
      expect(s.cpuUsPerCall).toBeGreaterThan(0);
      expect(s.cpuUsPerCall).toBeGreaterThanOrEqual(s.userUsPerCall);
      expect(s.cpuProbe).toBeGreaterThan(0);
    }
    for (const way of SDK_WAYS) expect(result.ways[way].cpuUsPerCall.samples).toHaveLength(1);
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('prints the machine, the inputs, each sample and the medians', () => {
    const text = lines.join('\n');
    expect(text).toMatch(/^machine: .*CPU probe/m);
    expect(text).toMatch(/^inputs: 5 streamed calls per sample/m);
    expect(text).toMatch(/#1 sdk-node-http: \d+ µs of client CPU per call/);
    expect(text).toMatch(/^medians, µs of client CPU per call: sdk \d+, sdk-node-http \d+, raw \d+$/m);
  });
});
