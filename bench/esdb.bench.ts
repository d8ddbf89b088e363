import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { redactUrl } from '../src/config/config';
import { EsdbConnection } from '../src/events/esdb.client';
import { EsdbEventStore } from '../src/events/esdb.event-store';
import type { NewEvent } from '../src/events/event-store.port';
import { startFakeEsdb, type FakeEsdbServer } from '../test/support/esdb-server/esdb-server';
import { machineInfo, summarise, type MachineInfo, type Summary } from './machine';

/**
 * The EventStoreDB adapter's throughput (`npm run bench -- esdb`): appends one at a time, in
 * batches of ten, from eight writers, and reading everything back through `readAll`. Against
 * TRIAD_ESDB_URL when set; otherwise against the in-process test server in this process (its
 * figures measure the adapter, the client and gRPC over loopback — not an EventStoreDB, which
 * writes to disk). Each run writes under a namespace of its own; medians over the runs.
 */

export interface EsdbBenchOptions {
  runs?: number;
  url?: string;
  log: (line: string) => void;
}

interface Scenario {
  name: 'single' | 'batch10' | 'concurrent8' | 'readAll';
  description: string;
  unit: 'appends/s' | 'events/s';
}

const SCENARIOS: Scenario[] = [
  { name: 'single', description: '300 appends of 1 event, one at a time, exact expected revision', unit: 'appends/s' },
  { name: 'batch10', description: '60 appends of 10 events, one at a time', unit: 'events/s' },
  { name: 'concurrent8', description: '8 writers x 40 appends of 1 event, a stream each', unit: 'appends/s' },
  { name: 'readAll', description: 'every event of the run read back with readAll, 1,000 a page', unit: 'events/s' },
];

export interface EsdbBenchResult {
  machine: MachineInfo;
  server: string;
  runs: number;
  scenarios: Array<Scenario & Summary>;
}

const event = (i: number): NewEvent => ({ type: 'BenchEvent', data: { i, text: 'x'.repeat(200) }, metadata: { actor: 'system', correlationId: `c-${i}` } });

export async function runEsdbBench(options: EsdbBenchOptions): Promise<EsdbBenchResult> {
  const runs = options.runs ?? 3;
  let fake: FakeEsdbServer | undefined;
  const url = options.url ?? (fake = await startFakeEsdb()).url;
  const server = fake ? 'in-process test server (loopback gRPC, memory)' : redactUrl(url);
  const conn = new EsdbConnection(url);
  const samples = new Map<Scenario['name'], number[]>(SCENARIOS.map((s) => [s.name, []]));
  const took = (start: bigint, n: number) => n / (Number(process.hrtime.bigint() - start) / 1e9);
  try {
    for (let run = 0; run < runs; run++) {
      const store = new EsdbEventStore(conn, { namespace: `bench${randomBytes(4).toString('hex')}` });
      let start = process.hrtime.bigint();
      for (let i = 0; i < 300; i++) await store.append('single', [event(i)], { expectedRevision: i === 0 ? 'no_stream' : i - 1 });
      samples.get('single')!.push(took(start, 300));

      start = process.hrtime.bigint();
      for (let i = 0; i < 60; i++) await store.append('batch', Array.from({ length: 10 }, (_, k) => event(i * 10 + k)), { expectedRevision: i === 0 ? 'no_stream' : i * 10 - 1 });
      samples.get('batch10')!.push(took(start, 600));

      start = process.hrtime.bigint();
      await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          for (let i = 0; i < 40; i++) await store.append(`writer-${w}`, [event(i)], { expectedRevision: i === 0 ? 'no_stream' : i - 1 });
        }),
      );
      samples.get('concurrent8')!.push(took(start, 320));

      start = process.hrtime.bigint();
      let read = 0;
      for (let after = 0; ; ) {
        const page = await store.readAll({ after, maxCount: 1000 });
        read += page.length;
        if (page.length < 1000) break;
        after = page[page.length - 1].position;
      }
      samples.get('readAll')!.push(took(start, read));
      await store.close();
    }
  } finally {
    await conn.close();
    await fake?.stop();
  }
  const result: EsdbBenchResult = {
    machine: machineInfo(),
    server,
    runs,
    scenarios: SCENARIOS.map((s) => ({ ...s, ...summarise(samples.get(s.name)!) })),
  };
  options.log(`esdb: ${server}; ${runs} run(s); load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  for (const s of result.scenarios) options.log(`  ${s.name.padEnd(12)} ${String(s.median).padStart(7)} ${s.unit} (min ${s.min}, max ${s.max}) — ${s.description}`);
  return result;
}
