import Database from 'better-sqlite3';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { SUITES } from '../../bench/bench-command';
import { runLaunchesBench, type LaunchesBenchResult } from '../../bench/launches.bench';
import { tempDir } from '../support/temp-dir';

/**
 * A tiny run of the launches benchmark through a real server (dist/, in a child process): the
 * shape of its result, never timings.
 */
describe('launches benchmark (tiny run)', () => {
  let result: LaunchesBenchResult;
  const lines: string[] = [];
  const dir = tempDir('triad-launches-bench-');

  beforeAll(async () => {
    result = await runLaunchesBench({ launches: 40, warmUp: 30, repeat: 2, concurrency: 4, dataDir: dir.path, log: (line) => lines.push(line) });
  }, 240_000);

  afterAll(() => dir.remove());

  it('is registered as the `launches` suite', () => {
    expect(Object.keys(SUITES)).toContain('launches');
  });

  it('reports launches per second, round trips and CPU per launch, per repetition and as medians', () => {
    expect(result).toMatchObject({ benchmark: 'launches', inputs: { launches: 40, warmUp: 30, repeat: 2, concurrency: 4, store: 'sqlite' } });
    expect(result.samples).toHaveLength(2);
    for (const s of result.samples) {
      expect(s.launches).toBe(40);
      expect(s.perSec).toBeGreaterThan(0);
      expect(s.p99Ms).toBeGreaterThanOrEqual(s.p50Ms);
      expect(s.cpuMsPerLaunch).toBeGreaterThan(0);
      // The warm-up's launches, the server's first, are measured apart as the cold figure.
      expect(s.cold).toEqual({ launches: 30, perSec: expect.any(Number), cpuMsPerLaunch: expect.any(Number) });
      expect(s.cold.perSec).toBeGreaterThan(0);
    }
    expect(result.coldPerSec.samples).toHaveLength(2);
    expect(result.perSec.samples).toHaveLength(2);
    expect(result.targets).toEqual([expect.objectContaining({ name: 'launchRate', target: '>= 2000' })]);
    expect(lines.some((l) => l.startsWith('machine:'))).toBe(true);
    // The CPU's speed when the suite started, for comparing sittings.
    expect(result.machine.cpuProbe).toBeGreaterThan(0);
    expect(lines.find((l) => l.startsWith('machine:'))).toMatch(/, CPU probe [\d,]+\/s;/);
    expect(lines.some((l) => l.startsWith('target launchRate'))).toBe(true);
    expect(lines.some((l) => l.startsWith('cold, the first 30 after start:'))).toBe(true);
  });

  it('records every launch it counts, warm-up included, each repetition on a fresh server', () => {
    const dirs = readdirSync(dir.path).filter((d) => d.startsWith('launches-'));
    expect(dirs).toHaveLength(2);
    for (const d of dirs) {
      const file = join(dir.path, d, 'triad.db');
      expect(existsSync(file)).toBe(true);
      const db = new Database(file, { readonly: true });
      try {
        expect(db.prepare(`SELECT count(*) AS n FROM events WHERE type = 'RunLaunched'`).get()).toEqual({ n: 30 + 40 });
      } finally {
        db.close();
      }
    }
  });
});
