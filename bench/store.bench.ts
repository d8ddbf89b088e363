import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { redactUrl } from '../src/config/config';
import type { EventStore, ExpectedRevision, NewEvent } from '../src/events/event-store/event-store.port';
import { PostgresEventStore } from '../src/events/event-store/postgres.event-store';
import { SqliteEventStore } from '../src/events/event-store/sqlite.event-store';
import {
  cpuProbeText,
  dropPostgresSchema,
  machineInfo,
  measureFdatasyncRate,
  postgresServerVersion,
  sqliteVersion,
  summarise,
  type FdatasyncRate,
  type MachineInfo,
  type Summary,
} from './machine';

/**
 * Event store throughput (`npm run bench -- store`): durable appends one at a time, from eight
 * concurrent writers, in batches, over many streams, and reading everything back. Every run
 * starts from an empty store; each scenario's median over the runs is what gets reported.
 */

export type BenchStoreKind = 'sqlite' | 'postgres';

export interface StoreBenchOptions {
  runs: number;
  stores: BenchStoreKind[];
  pgUrl?: string;
  dataDir: string;
  log: (line: string) => void;
}

type ScenarioName = 'single' | 'concurrent8' | 'batch10' | 'batch100' | 'manyStreams' | 'readAll';

interface ScenarioSpec {
  name: ScenarioName;
  description: string;
  unit: 'appends/s' | 'events/s';
}

export interface ScenarioResult extends Summary {
  name: ScenarioName;
  description: string;
  unit: 'appends/s' | 'events/s';
}

export interface TargetResult {
  store: BenchStoreKind;
  scenario: ScenarioName;
  target: number;
  unit: string;
  median: number;
  met: boolean;
}

export interface StoreBenchResult {
  benchmark: 'store';
  startedAt: string;
  durationMs: number;
  /** loadAverage: 1, 5 and 15-minute load when the benchmark started (other work on the machine skews timings). */
  machine: MachineInfo & { sqliteVersion: string; postgresVersion: string | null; loadAverage: number[] };
  fdatasync: FdatasyncRate;
  inputs: typeof INPUTS & { runs: number; stores: BenchStoreKind[]; dataDir: string; pgUrl: string | null };
  stores: Partial<Record<BenchStoreKind, { scenarios: ScenarioResult[] }>>;
  /** SQLite's median single-append rate divided by the disk's fdatasync rate (1.0: one sync per append, nothing else). */
  sqliteSingleToFdatasyncRatio: number | null;
  targets: TargetResult[];
}

const INPUTS = {
  singleAppends: 2000,
  concurrentWriters: 8,
  appendsPerConcurrentWriter: 250,
  batch10Batches: 300,
  batch100Batches: 100,
  manyStreams: 1000,
  manyStreamsAppends: 2000,
  readPageSize: 1000,
  readAtLeastEvents: 50_000,
  payloadBytes: 200,
  /** Untimed appends first, so SQLite's WAL has reached its working size and PG's connections are warm. */
  warmupAppends: 1000,
};

const SCENARIOS: ScenarioSpec[] = [
  { name: 'single', description: 'single-event durable appends, one writer, sequential', unit: 'appends/s' },
  { name: 'concurrent8', description: `single-event appends from ${INPUTS.concurrentWriters} concurrent writers`, unit: 'appends/s' },
  { name: 'batch10', description: 'appends of 10-event batches', unit: 'events/s' },
  { name: 'batch100', description: 'appends of 100-event batches', unit: 'events/s' },
  { name: 'manyStreams', description: `single-event appends round-robin over ${INPUTS.manyStreams} streams`, unit: 'appends/s' },
  { name: 'readAll', description: `readAll in pages of ${INPUTS.readPageSize}`, unit: 'events/s' },
];

const TARGETS: Array<{ store: BenchStoreKind; scenario: ScenarioName; target: number }> = [
  { store: 'sqlite', scenario: 'single', target: 5_000 },
  { store: 'sqlite', scenario: 'batch100', target: 80_000 },
  { store: 'sqlite', scenario: 'readAll', target: 200_000 },
  { store: 'postgres', scenario: 'concurrent8', target: 2_000 },
  { store: 'postgres', scenario: 'batch100', target: 20_000 },
];

export async function runStoreBench(opts: StoreBenchOptions): Promise<StoreBenchResult> {
  const runs = Math.max(1, Math.floor(opts.runs || 5));
  const started = Date.now();
  if (opts.stores.includes('postgres') && !opts.pgUrl) throw new Error('the postgres store benchmark needs pgUrl (TRIAD_PG_URL)');
  const machine = {
    ...machineInfo(),
    sqliteVersion: sqliteVersion(),
    postgresVersion: opts.stores.includes('postgres') ? await postgresServerVersion(opts.pgUrl!) : null,
    loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
  };
  const fdatasync = measureFdatasyncRate(opts.dataDir);
  opts.log(`machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.totalMemoryGiB} GiB, node ${machine.nodeVersion}, ` +
    `SQLite ${machine.sqliteVersion}${machine.postgresVersion ? `, PostgreSQL ${machine.postgresVersion}` : ''}, ${cpuProbeText(machine)}, load ${machine.loadAverage.join(' ')}`);
  opts.log(`fdatasync in ${fdatasync.dir}: ${fdatasync.syncsPerSecond}/s`);

  const stores: StoreBenchResult['stores'] = {};
  for (const kind of opts.stores) {
    const samples = new Map<ScenarioName, number[]>(SCENARIOS.map((s) => [s.name, []]));
    for (let run = 0; run < runs; run++) {
      const fresh = await openFresh(kind, opts, run);
      try {
        const rates = await runScenarios(fresh.store);
        for (const [name, rate] of rates) samples.get(name)!.push(rate);
      } finally {
        await fresh.dispose();
      }
      opts.log(`${kind}: run ${run + 1}/${runs} done`);
    }
    stores[kind] = { scenarios: SCENARIOS.map((s) => ({ ...s, ...summarise(samples.get(s.name)!) })) };
  }

  const sqliteSingle = stores.sqlite?.scenarios.find((s) => s.name === 'single')?.median;
  const targets: TargetResult[] = TARGETS.filter((t) => stores[t.store]).map((t) => {
    const scenario = stores[t.store]!.scenarios.find((s) => s.name === t.scenario)!;
    return { ...t, unit: scenario.unit, median: scenario.median, met: scenario.median >= t.target };
  });
  const result: StoreBenchResult = {
    benchmark: 'store',
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    machine,
    fdatasync,
    inputs: { ...INPUTS, runs, stores: opts.stores, dataDir: opts.dataDir, pgUrl: opts.pgUrl ? redactUrl(opts.pgUrl) : null },
    stores,
    sqliteSingleToFdatasyncRatio: sqliteSingle === undefined ? null : Math.round((sqliteSingle / fdatasync.syncsPerSecond) * 100) / 100,
    targets,
  };
  for (const line of formatTable(result)) opts.log(line);
  return result;
}

async function openFresh(kind: BenchStoreKind, opts: StoreBenchOptions, run: number): Promise<{ store: EventStore; dispose(): Promise<void> }> {
  if (kind === 'sqlite') {
    const dir = join(opts.dataDir, `store-bench-${process.pid}-${run}`);
    rmSync(dir, { recursive: true, force: true });
    const store = new SqliteEventStore({ file: join(dir, 'triad.db') });
    return {
      store,
      dispose: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const schema = `triad_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  const store = await PostgresEventStore.connect({ url: opts.pgUrl!, schema, poolSize: INPUTS.concurrentWriters + 2 });
  return {
    store,
    dispose: async () => {
      await store.close();
      await dropPostgresSchema(opts.pgUrl!, schema);
    },
  };
}

async function runScenarios(store: EventStore): Promise<Map<ScenarioName, number>> {
  const rates = new Map<ScenarioName, number>();
  const payload = 'x'.repeat(INPUTS.payloadBytes);
  let seq = 0;
  const event = (stream: string): NewEvent => ({
    type: 'BenchEventRecorded',
    data: { seq: seq++, payload },
    metadata: { runId: 'bench', correlationId: stream, causationId: null, actor: 'system' },
  });
  /** Appends with the exact expected revision, as the command-handling path does. */
  const writer = () => {
    const heads = new Map<string, ExpectedRevision>();
    return async (stream: string, batch: NewEvent[]) => {
      const r = await store.append(stream, batch, { expectedRevision: heads.get(stream) ?? 'no_stream' });
      heads.set(stream, r.nextExpectedRevision);
    };
  };

  const warm = writer();
  for (let i = 0; i < INPUTS.warmupAppends; i++) await warm('warmup', [event('warmup')]);

  const single = writer();
  rates.set('single', await rate(INPUTS.singleAppends, async () => {
    for (let i = 0; i < INPUTS.singleAppends; i++) await single('single', [event('single')]);
  }));

  rates.set('concurrent8', await rate(INPUTS.concurrentWriters * INPUTS.appendsPerConcurrentWriter, async () => {
    await Promise.all(
      Array.from({ length: INPUTS.concurrentWriters }, async (_, w) => {
        const append = writer();
        for (let i = 0; i < INPUTS.appendsPerConcurrentWriter; i++) await append(`concurrent-${w}`, [event(`concurrent-${w}`)]);
      }),
    );
  }));

  const batched = writer();
  rates.set('batch10', await rate(INPUTS.batch10Batches * 10, async () => {
    for (let i = 0; i < INPUTS.batch10Batches; i++) await batched('batch10', Array.from({ length: 10 }, () => event('batch10')));
  }));
  rates.set('batch100', await rate(INPUTS.batch100Batches * 100, async () => {
    for (let i = 0; i < INPUTS.batch100Batches; i++) await batched('batch100', Array.from({ length: 100 }, () => event('batch100')));
  }));

  const many = writer();
  rates.set('manyStreams', await rate(INPUTS.manyStreamsAppends, async () => {
    for (let i = 0; i < INPUTS.manyStreamsAppends; i++) {
      const stream = `many-${i % INPUTS.manyStreams}`;
      await many(stream, [event(stream)]);
    }
  }));

  let read = 0;
  const readStarted = process.hrtime.bigint();
  while (read < INPUTS.readAtLeastEvents) {
    let after = 0;
    for (;;) {
      const page = await store.readAll({ after, maxCount: INPUTS.readPageSize });
      if (page.length === 0) break;
      read += page.length;
      after = page[page.length - 1].position;
    }
  }
  rates.set('readAll', read / (Number(process.hrtime.bigint() - readStarted) / 1e9));
  return rates;
}

/** Runs `work` once; returns `count` per second of wall time. */
async function rate(count: number, work: () => Promise<void>): Promise<number> {
  const started = process.hrtime.bigint();
  await work();
  return count / (Number(process.hrtime.bigint() - started) / 1e9);
}

function formatTable(result: StoreBenchResult): string[] {
  const lines: string[] = [];
  const kinds = Object.keys(result.stores) as BenchStoreKind[];
  const header = ['scenario', 'unit', ...kinds.map((k) => `${k} median (min-max)`)];
  const rows = SCENARIOS.map((s) => [
    s.name,
    s.unit,
    ...kinds.map((k) => {
      const r = result.stores[k]!.scenarios.find((x) => x.name === s.name)!;
      return `${fmt(r.median)} (${fmt(r.min)}-${fmt(r.max)})`;
    }),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  lines.push(`event store, median of ${result.inputs.runs} runs`);
  lines.push(line(header));
  lines.push(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) lines.push(line(r));
  if (result.sqliteSingleToFdatasyncRatio !== null) {
    lines.push(`sqlite single appends / fdatasync rate (${fmt(result.fdatasync.syncsPerSecond)}/s): ${result.sqliteSingleToFdatasyncRatio}`);
  }
  for (const t of result.targets) {
    lines.push(`target ${t.store} ${t.scenario} >= ${fmt(t.target)} ${t.unit}: ${fmt(t.median)} ${t.met ? 'met' : 'MISSED'}`);
  }
  return lines;
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
