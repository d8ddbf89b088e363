import { DEFAULT_CHECKPOINT_EVERY_TURNS } from '../../src/team/driver/run-driver';
import { SUITES } from '../../bench/bench-command';
import { runTurnsBench, type TurnsBenchResult } from '../../bench/turns.bench';
import { tempDir } from '../support/temp-dir';

/** A tiny run of the turns benchmark: the shape of its result and flat bytes per turn, never timings. */
describe('turns benchmark (tiny run)', () => {
  let result: TurnsBenchResult;
  const lines: string[] = [];
  const dir = tempDir('triad-turns-bench-');

  beforeAll(async () => {
    result = await runTurnsBench({
      turns: 20,
      runs: 1,
      store: 'sqlite',
      dataDir: dir.path,
      log: (line) => lines.push(line),
      concurrency: { runs: 10, turnsPerRun: 3, latencyMs: 5 },
      lengths: [10, 100],
      fdatasyncMs: 100,
    });
  }, 60_000);

  afterAll(() => dir.remove());

  it('is registered as the `turns` suite', () => {
    expect(Object.keys(SUITES)).toContain('turns');
  });

  it('reports the headline figures at the top level', () => {
    expect(result.benchmark).toBe('turns');
    expect(result.turns).toBe(20);
    expect(result.store).toBe('sqlite');
    for (const key of ['seconds', 'turnsPerSec', 'storeBytes', 'bytesPerTurn', 'rowBytes', 'rowBytesPerTurn'] as const) {
      expect(typeof result[key]).toBe('number');
      expect(result[key]).toBeGreaterThan(0);
    }
    expect(result.bytesPerTurn).toBe(Math.round(result.storeBytes / 20));
    expect(result.storeBytesBasis).toMatch(/SQLite/);
    // Each turn carries a ~400-byte tool_use and a ~400-byte result, plus event envelopes.
    expect(result.rowBytesPerTurn).toBeGreaterThan(800);
  });

  it('nests durable, overhead, concurrency, bytes by length, machine and inputs', () => {
    expect(result.durable.turnsPerSec.samples).toHaveLength(1);
    expect(result.durable.runsCompleted).toBe(1);
    // One commit per turn: a repeatable tool's result is committed with the next model call.
    expect(result.durable.appendsPerTurn).toBeGreaterThanOrEqual(1);
    expect(result.durable.appendsPerTurn).toBeLessThan(1.1);
    expect(result.durable.fsyncCeilingTurnsPerSec).toBeGreaterThan(0);
    expect(result.overhead.store).toBe('memory');
    expect(result.overhead.usPerTurn.median).toBeGreaterThan(0);
    expect(result.overhead.withoutCheckpointsUsPerTurn?.samples).toHaveLength(1);
    expect(result.overhead.sqliteNoSyncWithoutCheckpointsUsPerTurn?.samples).toHaveLength(1);
    expect(result.durable.withoutCheckpointsTurnsPerSec?.samples).toHaveLength(1);
    expect(result.durable.storeBreakdown?.eventsBytes).toBeGreaterThan(0);
    expect(result.inputs.checkpointEveryTurns).toBe(DEFAULT_CHECKPOINT_EVERY_TURNS);

    const c = result.concurrency;
    expect(c).toMatchObject({ store: 'sqlite', runs: 10, turnsPerRun: 3, latencyMs: 5, totalTurns: 30 });
    expect(c.modelCalls).toBe(10 * (3 + 3)); // plan, 3 tool turns, submit, verdict
    expect(c.wallMs).toBeGreaterThan(0);
    for (const k of ['p50', 'p90', 'p99', 'max', 'mean'] as const) expect(c.eventLoopLagMs[k]).toBeGreaterThanOrEqual(0);
    expect(c.eventLoopLagMs.resolutionMs).toBeLessThanOrEqual(5);
    expect(typeof c.memory.peakHeapUsedPerRunKiB).toBe('number');

    expect(result.bytesByLength.map((b) => b.turns)).toEqual([10, 100]);
    for (const b of result.bytesByLength) {
      expect(b.eventsPerTurn).toBe(4);
      expect(b.appendsPerTurn).toBeLessThan(1.5); // one commit per turn, plus the phases' own appends
    }
    expect(result.machine.cores).toBeGreaterThan(0);
    expect(result.fdatasync.syncsPerSecond).toBeGreaterThan(0);
    expect(result.inputs).toMatchObject({ turns: 20, runs: 1, store: 'sqlite', messageBytes: 400, lengths: [10, 100] });
    expect(result.targets.map((t) => t.name)).toEqual(['durableTurnsPerSec', 'overheadUsPerTurn', 'eventLoopLagP99', 'flatBytesPerTurn']);
    for (const t of result.targets) expect(typeof t.met).toBe('boolean');
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('stores about the same bytes per turn at 10 and 100 turns', () => {
    const [at10, at100] = result.bytesByLength.map((b) => b.avgBytesPerTurn);
    expect(Math.abs(at10 - at100) / Math.min(at10, at100)).toBeLessThanOrEqual(0.15);
  });

  it('prints a readable table with the machine, inputs and targets', () => {
    const text = lines.join('\n');
    expect(text).toMatch(/^machine: /m);
    expect(text).toMatch(/^inputs: 20 turns x 1 runs on sqlite/m);
    expect(text).toMatch(/same run, in-memory store: us\/turn/);
    expect(text).toMatch(/^target durableTurnsPerSec .* (met|MISSED)$/m);
  });
});
