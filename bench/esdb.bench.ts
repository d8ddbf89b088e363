import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { redactUrl } from '../src/config/config';
import { EsdbConnection } from '../src/events/esdb.client';
import { EsdbEventStore } from '../src/events/event-store/esdb.event-store';
import type { NewEvent } from '../src/events/event-store/event-store.port';
import { startFakeEsdb, type FakeEsdbServer } from '../test/support/esdb-server/esdb-server';
import { cpuProbeText, machineInfo, summarise, summariseFine, type MachineInfo, type Summary } from './machine';

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
  name: 'single' | 'batch10' | 'concurrent8' | 'readAll' | 'follow5' | 'follow5Reads';
  description: string;
  unit: 'appends/s' | 'events/s' | 'reads/append';
}

const SCENARIOS: Scenario[] = [
  { name: 'single', description: '300 appends of 1 event, one at a time, exact expected revision', unit: 'appends/s' },
  { name: 'batch10', description: '60 appends of 10 events, one at a time', unit: 'events/s' },
  { name: 'concurrent8', description: '8 writers x 40 appends of 1 event, a stream each', unit: 'appends/s' },
  { name: 'readAll', description: 'every event of the run read back with readAll, 1,000 a page', unit: 'events/s' },
  { name: 'follow5', description: '200 appends of 1 event, one at a time, on two streams, while 5 live subscriptions with different filters follow (until each has seen its events)', unit: 'appends/s' },
  { name: 'follow5Reads', description: 'reads of the server (stream and $all) per append in follow5, the append\'s own read of its position included', unit: 'reads/append' },
];

/** Filters like a process's subscriptions': everything, the read models' types, a run's stream, another stream, a type never written. */
const FOLLOW_FILTERS = [undefined, { types: ['BenchEvent'] }, { streamPrefixes: ['follow-a'] }, { streamPrefixes: ['follow-b'] }, { types: ['NeverWritten'] }];

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
  // Counts the reads the store makes of the server (follow5Reads).
  let reads = 0;
  const counted = new Proxy(conn, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (key === 'readAll' || key === 'readStream') reads++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const samples = new Map<Scenario['name'], number[]>(SCENARIOS.map((s) => [s.name, []]));
  const took = (start: bigint, n: number) => n / (Number(process.hrtime.bigint() - start) / 1e9);
  try {
    for (let run = 0; run < runs; run++) {
      const store = new EsdbEventStore(counted, { namespace: `bench${randomBytes(4).toString('hex')}` });
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

      const head = await store.headPosition();
      const seen = FOLLOW_FILTERS.map(() => 0);
      const subs = FOLLOW_FILTERS.map((filter) => store.subscribe({ filter, after: head }));
      const followers = subs.map((sub, i) =>
        (async () => {
          for await (const _ of sub) seen[i]++;
        })(),
      );
      const readsBefore = reads;
      start = process.hrtime.bigint();
      for (let i = 0; i < 200; i++) await store.append(i % 2 === 0 ? 'follow-a' : 'follow-b', [event(i)], { expectedRevision: i < 2 ? 'no_stream' : Math.floor(i / 2) - 1 });
      const want = [200, 200, 100, 100, 0];
      const deadline = Date.now() + 60_000;
      const failed = Promise.race(followers).then(() => new Error('a subscription ended early'), (err: unknown) => err);
      let failure: unknown;
      void failed.then((err) => (failure = err));
      while (want.some((n, i) => seen[i] < n)) {
        if (failure !== undefined) throw failure;
        if (Date.now() > deadline) throw new Error(`follow5: the subscriptions saw ${seen.join('/')} of ${want.join('/')} events after 60 s`);
        await new Promise((r) => setTimeout(r, 1));
      }
      samples.get('follow5')!.push(took(start, 200));
      samples.get('follow5Reads')!.push((reads - readsBefore) / 200);
      for (const sub of subs) sub.close();
      await Promise.all(followers);
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
    scenarios: SCENARIOS.map((s) => ({ ...s, ...(s.unit === 'reads/append' ? summariseFine : summarise)(samples.get(s.name)!) })),
  };
  options.log(`esdb: ${server}; ${runs} run(s); ${cpuProbeText(result.machine)}; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  for (const s of result.scenarios) options.log(`  ${s.name.padEnd(12)} ${String(s.median).padStart(7)} ${s.unit} (min ${s.min}, max ${s.max}) — ${s.description}`);
  return result;
}
