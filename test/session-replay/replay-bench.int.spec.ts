import { spawn } from 'node:child_process';
import { CLI } from '../recovery/crash-support';
import { buildBench } from '../support/build-bench';
import { tempDir } from '../support/temp-dir';

// `triad bench replay --turns N --json`: a tiny run, for the shape of its one JSON line, never
// for timings. The program (dist/) loads the benchmarks from build/bench/, compiled here first.

jest.setTimeout(60_000);

beforeAll(buildBench, 300_000);

it('prints one JSON line with events, replayMs, eventsPerSec and checkpointResumeMs', async () => {
  const dir = tempDir('triad-replay-bench-');
  try {
    const proc = spawn(process.execPath, [CLI, 'bench', 'replay', '--turns', '60', '--runs', '1', '--json'], {
      env: { ...process.env, TRIAD_DATA_DIR: dir.path, TMPDIR: dir.path },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: expect.stringContaining('60 turns') });
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const result = JSON.parse(lines[0]);
    expect(result).toMatchObject({ suite: 'replay', benchmark: 'replay', turns: 60, events: 60 * 4 + 7 });
    for (const key of ['replayMs', 'eventsPerSec', 'checkpointResumeMs', 'checkpointBytes']) expect(result[key]).toBeGreaterThan(0);
    // Each length twice: without a context limit, and with a model's context window.
    expect(result.lengths.map((l: { history: string }) => l.history)).toEqual(['unbounded', 'window']);
    const [length] = result.lengths;
    expect(length.checkpoint).toMatchObject({ tailEvents: 40, equalsFullReplay: true });
    expect(result.targets.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining([expect.stringMatching(/full replay/), expect.stringMatching(/resume/)]));
  } finally {
    dir.remove();
  }
});
