import { runReplayBench } from '../../bench/replay.bench';
import { tempDir } from '../support/temp-dir';

// The replay benchmark (`npm run bench -- replay`) on a tiny run, for the shape of its result, never
// for timings. It runs in-process from the sources: how `triad bench` finds the compiled suites is
// test/cli/bench-verb.unit.spec.ts's.

jest.setTimeout(60_000);

it('reports events, replayMs, eventsPerSec and checkpointResumeMs, for each length with and without a context window', async () => {
  const dir = tempDir('triad-replay-bench-');
  const log: string[] = [];
  try {
    const result = await runReplayBench({ turns: 60, runs: 1, dataDir: dir.path, log: (line) => log.push(line) });
    expect(log.join('\n')).toContain('60 turns');
    const json = JSON.parse(JSON.stringify(result));
    expect(json).toMatchObject({ turns: 60, events: 60 * 4 + 7 });
    for (const key of ['replayMs', 'eventsPerSec', 'checkpointResumeMs', 'checkpointBytes']) expect(json[key]).toBeGreaterThan(0);
    // Each length twice: without a context limit, and with a model's context window.
    expect(json.lengths.map((l: { history: string }) => l.history)).toEqual(['unbounded', 'window']);
    const [length] = json.lengths;
    expect(length.checkpoint).toMatchObject({ tailEvents: 40, equalsFullReplay: true });
    expect(json.targets.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining([expect.stringMatching(/full replay/), expect.stringMatching(/resume/)]));
  } finally {
    dir.remove();
  }
});
