import { Signer } from '../src/attestation/attestation';
import { checkAttestations } from '../src/attestation/attestation-check';
import { KeyTrust } from '../src/attestation/decision-trust';
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { redactUrl } from '../src/config/config';
import type { EventStore } from '../src/events/event-store/event-store.port';
import { SqliteEventStore } from '../src/events/event-store/sqlite.event-store';
import { recordFrom, type DecisionEvent } from '../src/review-gate/decision-log/chain';
import { expectationFrom, verifyChain, verifyChainAsync, verifyInOrder } from '../src/review-gate/decision-log/chain-verification';
import { DecisionLog } from '../src/review-gate/decision-log/decision-log';
import { seedRunAwaitingReview } from './seed-review';
import { DecisionLogProjection } from '../src/review-gate/decision-log/decision-log.projection';
import type { DecisionRecord } from '../src/review-gate/decision-log/decision-record';
import { SqliteDecisionRecordRepository } from '../src/review-gate/decision-log/sqlite.decision-record.repository';
import { reviewIdOf } from '../src/team/domain/review-id';
import { agentIdentity, toRunStreamId, type ReviewDecidedData } from '../src/team/domain/run-events';
import { cpuProbeText, dropPostgresSchema, machineInfo, measureFdatasyncRate, sqliteVersion, summarise, type FdatasyncRate, type MachineInfo, type Summary } from './machine';

/**
 * Decision log (`npm run bench -- decisions`):
 *
 * (a) verification over N records (default 100,000): records built with recordFrom in memory,
 *     verified chain-only, against the decision events with the complete check (expectation +
 *     ChainVerifier) and with the in-order check (records and events side by side, as
 *     `GET /v1/decisions/verify` does first); then the same decisions as events in a SQLite store,
 *     projected into the SQLite repository by the real projector, and verified end to end
 *     (DecisionLog.verify: events and records read page by page, the in-order check), chain-only
 *     from SQLite, and once with the last record altered (the in-order check, then the complete one);
 * (b) decisions per second through the API: runs launched with a review policy and brought to
 *     `awaiting_review` by appending their events directly (so the agents cost nothing), then
 *     N reviews approved over real HTTP by a few concurrent clients; median of the rounds.
 */

export interface DecisionsBenchOptions {
  /** Records verified in (a); default 100,000. */
  records?: number;
  /** Approvals per round in (b); default 300. */
  decisions?: number;
  /** Concurrent HTTP clients in (b); default 4. */
  clients?: number;
  /** Repetitions of every measurement (median reported); default 3. */
  runs?: number;
  /** When given, (b) also runs on PostgreSQL (a fresh schema, dropped afterwards). */
  pgUrl?: string;
  /** Scratch directory: databases are created under it. */
  dataDir: string;
  log: (line: string) => void;
}

export interface ApiRound {
  decisions: number;
  ms: number;
  decisionsPerSec: number;
  latencyMs: { p50: number; p95: number; max: number };
}

export interface ApiResult {
  store: 'sqlite' | 'postgres';
  durability: string;
  clients: number;
  decisionsPerRound: number;
  decisionsPerSec: Summary;
  rounds: ApiRound[];
  /** GET /v1/decisions/verify after the rounds: every decision made is in the log, intact. */
  verify: { ok: boolean; checked: number; ms: number };
}

export interface DecisionsBenchResult {
  benchmark: 'decisions';
  startedAt: string;
  durationMs: number;
  records: number;
  memory: {
    buildRecordsPerSec: Summary;
    verifyChainOnlyRecordsPerSec: Summary;
    /** The complete check; its expectation (payload hash of every decision event) is built first and timed apart. */
    verifyAgainstStoreRecordsPerSec: Summary;
    buildExpectationMs: Summary;
    /** The in-order check (what DecisionLog.verify does first): each record against its event, side by side. */
    verifyInOrderRecordsPerSec: Summary;
    /** The server's attestation of a decision: signed as it is appended, and checked by verify (checkAttestations) and by every fold of its run. */
    attestSignPerSec: Summary;
    attestCheckPerSec: Summary;
  };
  sqlite: {
    /** The projector appending records from the decision events. */
    projectRecordsPerSec: number;
    /** DecisionLog.verify: reads the decision events and the records, checks chain and content (the in-order check). */
    verifyEndToEndRecordsPerSec: Summary;
    verifyChainOnlyRecordsPerSec: Summary;
    /**
     * One more DecisionLog.verify, with the time spent reading decision events (store readAll) and
     * records (repository list) added up apart; `checkInOrder` is the rest.
     */
    endToEndBreakdownMs: { readDecisionEvents: number; readRecords: number; checkInOrder: number };
    /**
     * DecisionLog.verify with the last record altered (one run): the in-order check reads to the
     * end before it finds it, then the complete check runs — the worst case.
     */
    verifyLastRecordAlteredMs: number;
  };
  api: ApiResult[];
  machine: MachineInfo & { sqliteVersion: string };
  fdatasync: FdatasyncRate;
  inputs: { records: number; decisions: number; clients: number; runs: number; pgUrl: string | null; dataDir: string };
  targets: Array<{ name: string; target: string; measured: number; unit: string; met: boolean }>;
}

const TARGET_VERIFY_RECORDS_PER_SEC = 100_000;
const CRITERIA = ['file hello.txt contains "Hello"', 'the tests pass'];
const REASON = 'checked every criterion against the workspace: looks good, approved';

/** A ReviewDecided event as a store hands it out (for the verification part). */
function syntheticDecision(i: number, position: number): DecisionEvent & { data: ReviewDecidedData } {
  const runId = `run_bench${String(i).padStart(8, '0')}`;
  return {
    type: 'ReviewDecided',
    streamId: toRunStreamId(runId),
    position,
    data: {
      decisionId: randomUUID(),
      reviewId: reviewIdOf(runId, 1),
      iteration: 1,
      outcome: i % 5 === 0 ? 'rejected' : 'approved',
      reason: REASON,
      rework: i % 5 === 0 ? false : undefined,
      executor: agentIdentity('executor', runId),
      decider: i % 2 === 0 ? 'user:ann' : 'user:bob',
      deciderKind: 'human',
      acceptanceCriteria: CRITERIA,
      artifactHash: `sha256:${randomBytes(32).toString('hex')}`,
      charterVersion: `sha256:${'c'.repeat(64)}`,
      at: new Date(Date.UTC(2025, 0, 1) + i * 1000).toISOString(),
    },
  };
}

const perSec = (n: number, ms: number) => (n / Math.max(ms, 0.001)) * 1000;
const since = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;

/**
 * Where DecisionLog.verify's time goes on an intact log: one more verify, through a store whose
 * readAll and a repository whose list are timed; the in-order check (and the catch-up wait) is
 * the rest.
 */
async function verifyBreakdown(
  store: SqliteEventStore,
  repo: SqliteDecisionRecordRepository,
  projection: DecisionLogProjection,
  n: number,
): Promise<{ readDecisionEvents: number; readRecords: number; checkInOrder: number }> {
  let [eventsMs, recordsMs] = [0, 0];
  const timedStore = Object.create(store) as SqliteEventStore;
  timedStore.readAll = async (options) => {
    const t = process.hrtime.bigint();
    try {
      return await store.readAll(options);
    } finally {
      eventsMs += since(t);
    }
  };
  const timedRepo = Object.create(repo) as SqliteDecisionRecordRepository;
  timedRepo.list = async (filter, page) => {
    const t = process.hrtime.bigint();
    try {
      return await repo.list(filter, page);
    } finally {
      recordsMs += since(t);
    }
  };
  const t = process.hrtime.bigint();
  const result = await new DecisionLog(timedStore, timedRepo, projection).verify();
  const totalMs = since(t);
  if (!result.ok || result.checked !== n) throw new Error(`verification failed: ${JSON.stringify(result)}`);
  return { readDecisionEvents: Math.round(eventsMs), readRecords: Math.round(recordsMs), checkInOrder: Math.round(totalMs - eventsMs - recordsMs) };
}

async function verifyPart(n: number, runs: number, dataDir: string, log: (line: string) => void) {
  log(`(a) verification over ${n.toLocaleString('en-US')} records`);
  const events = Array.from({ length: n }, (_, i) => syntheticDecision(i + 1, i + 1));
  const build: number[] = [];
  const chainOnly: number[] = [];
  const againstStore: number[] = [];
  const expectationMs: number[] = [];
  const inOrder: number[] = [];
  let records: DecisionRecord[] = [];
  for (let r = 0; r < runs; r++) {
    let t = process.hrtime.bigint();
    records = [];
    let prev: DecisionRecord | null = null;
    for (const e of events) records.push((prev = recordFrom(e, prev)));
    build.push(perSec(n, since(t)));
    t = process.hrtime.bigint();
    const expectation = expectationFrom(events);
    expectationMs.push(since(t));
    t = process.hrtime.bigint();
    const a = verifyChain(records, { count: n });
    chainOnly.push(perSec(n, since(t)));
    t = process.hrtime.bigint();
    const b = verifyChain(records, expectation);
    againstStore.push(perSec(n, since(t)));
    t = process.hrtime.bigint();
    const c = verifyInOrder(events, records);
    inOrder.push(perSec(n, since(t)));
    if (!a.ok || !b.ok || b.checked !== n || !c?.ok || c.checked !== n) throw new Error(`in-memory verification failed: ${JSON.stringify([b, c])}`);
  }
  // Attestations, on a tenth of the records (an Ed25519 signature each; the rate is per event).
  const signer = new Signer(generateKeyPairSync('ed25519').privateKey);
  const trust = new KeyTrust(new Map([[signer.keyId, { keyId: signer.keyId, key: signer.publicKey }]]), 0);
  const attested = events.slice(0, Math.max(1, Math.floor(n / 10))).map((e) => ({ ...e, revision: 0, data: { ...e.data } as Record<string, unknown> }));
  const signRates: number[] = [];
  const checkRates: number[] = [];
  for (let r = 0; r < runs; r++) {
    let t = process.hrtime.bigint();
    for (const e of attested) e.data.attestation = signer.attest(e.type, e.data, { streamId: e.streamId });
    signRates.push(perSec(attested.length, since(t)));
    t = process.hrtime.bigint();
    // A fresh trust each round: no remembered verification.
    const report = await checkAttestations(attested, new KeyTrust(trust.keys, 0), () => Promise.resolve(false));
    checkRates.push(perSec(attested.length, since(t)));
    if (!report.ok || report.checked !== attested.length) throw new Error(`attestation check failed: ${JSON.stringify(report.issues.slice(0, 3))}`);
  }
  const memory = {
    attestSignPerSec: summarise(signRates),
    attestCheckPerSec: summarise(checkRates),
    buildRecordsPerSec: summarise(build),
    verifyChainOnlyRecordsPerSec: summarise(chainOnly),
    verifyAgainstStoreRecordsPerSec: summarise(againstStore),
    buildExpectationMs: summarise(expectationMs),
    verifyInOrderRecordsPerSec: summarise(inOrder),
  };
  log(
    `  memory: build ${memory.buildRecordsPerSec.median.toLocaleString('en-US')} records/s; verify chain-only ${memory.verifyChainOnlyRecordsPerSec.median.toLocaleString('en-US')} records/s, ` +
      `against the store: complete check ${memory.verifyAgainstStoreRecordsPerSec.median.toLocaleString('en-US')} records/s (+ ${memory.buildExpectationMs.median} ms to build the expectation), ` +
      `in-order check ${memory.verifyInOrderRecordsPerSec.median.toLocaleString('en-US')} records/s; ` +
      `attestations: sign ${memory.attestSignPerSec.median.toLocaleString('en-US')}/s, check ${memory.attestCheckPerSec.median.toLocaleString('en-US')}/s (${attested.length.toLocaleString('en-US')} events)`,
  );

  const dir = join(dataDir, 'verify');
  mkdirSync(dir, { recursive: true });
  const store = new SqliteEventStore({ file: join(dir, 'triad.db') });
  try {
    const batch = 1000;
    for (let i = 0; i < n; i += batch) {
      const slice = events.slice(i, i + batch);
      await store.append(`run-bench_load_${i / batch}`, slice.map((e) => ({ type: e.type, data: e.data, metadata: { correlationId: 'bench', actor: 'user:ann' } })));
    }
    const repo = new SqliteDecisionRecordRepository(store.db);
    const projection = new DecisionLogProjection(store, repo, { batchSize: 2000, checkpointEvery: 10_000 });
    let t = process.hrtime.bigint();
    projection.start();
    await projection.catchUp(30 * 60_000);
    const projectRecordsPerSec = Math.round(perSec(n, since(t)));
    await projection.stop();
    log(`  sqlite: projected ${n.toLocaleString('en-US')} records at ${projectRecordsPerSec.toLocaleString('en-US')} records/s`);
    const decisionLog = new DecisionLog(store, repo, projection);
    const endToEnd: number[] = [];
    const sqliteChainOnly: number[] = [];
    for (let r = 0; r < runs; r++) {
      t = process.hrtime.bigint();
      const v = await decisionLog.verify();
      endToEnd.push(perSec(n, since(t)));
      if (!v.ok || v.checked !== n) throw new Error(`SQLite verification failed: ${JSON.stringify(v)}`);
      t = process.hrtime.bigint();
      const c = await verifyChainAsync(repo.iterate({ pageSize: 2000 }), { count: n });
      sqliteChainOnly.push(perSec(n, since(t)));
      if (!c.ok) throw new Error(`SQLite chain verification failed: ${JSON.stringify(c)}`);
    }
    // Where the end-to-end time goes: reads of events and of records, and the check.
    const breakdown = await verifyBreakdown(store, repo, projection, n);
    // The worst case for the fallback: the last record altered, found at the end of the in-order
    // pass; the complete check then runs from the start to name it.
    const lastRecord = store.db.prepare('SELECT reason FROM decision_records WHERE seq = ?').get(n) as { reason: string };
    store.db.prepare('UPDATE decision_records SET reason = ? WHERE seq = ?').run(`${lastRecord.reason}!`, n);
    t = process.hrtime.bigint();
    const altered = await decisionLog.verify();
    const verifyLastRecordAlteredMs = Math.round(since(t));
    store.db.prepare('UPDATE decision_records SET reason = ? WHERE seq = ?').run(lastRecord.reason, n);
    if (altered.ok || altered.firstBadRecord?.seq !== n || altered.firstBadRecord.problem !== 'altered') throw new Error(`the altered record was not found: ${JSON.stringify(altered)}`);
    const sqlite = {
      projectRecordsPerSec,
      verifyEndToEndRecordsPerSec: summarise(endToEnd),
      verifyChainOnlyRecordsPerSec: summarise(sqliteChainOnly),
      endToEndBreakdownMs: breakdown,
      verifyLastRecordAlteredMs,
    };
    log(
      `  sqlite: verify end to end (events + records, chain + content) ${sqlite.verifyEndToEndRecordsPerSec.median.toLocaleString('en-US')} records/s; ` +
        `chain-only from SQLite ${sqlite.verifyChainOnlyRecordsPerSec.median.toLocaleString('en-US')} records/s`,
    );
    const b = sqlite.endToEndBreakdownMs;
    log(`  sqlite: end to end, step by step: read decision events ${b.readDecisionEvents} ms, read records ${b.readRecords} ms, in-order check ${b.checkInOrder} ms`);
    log(`  sqlite: verify with the last record altered (in-order pass, then the complete check): ${verifyLastRecordAlteredMs} ms`);
    return { memory, sqlite };
  } finally {
    await store.close();
  }
}

const KEYS = { operator: `bench-op-${randomBytes(8).toString('hex')}`, reviewer: `bench-rev-${randomBytes(8).toString('hex')}`, auditor: `bench-aud-${randomBytes(8).toString('hex')}` };

async function apiPart(
  kind: 'sqlite' | 'postgres',
  o: { decisions: number; clients: number; runs: number; dataDir: string; pgUrl?: string; log: (line: string) => void },
): Promise<ApiResult> {
  const schema = `triad_bench_decisions_${process.pid}_${randomBytes(4).toString('hex')}`;
  const env: Record<string, string> = {
    TRIAD_DATA_DIR: join(o.dataDir, `api-${kind}`),
    TRIAD_STORE: kind,
    TRIAD_API_KEYS: `bench-op:operator:${KEYS.operator},bench-rev:reviewer:${KEYS.reviewer},bench-aud:auditor:${KEYS.auditor}`,
    TRIAD_MODEL: 'offline',
    TRIAD_REVIEW_TIMER_MS: '0',
    TRIAD_RECOVERY_INTERVAL_MS: '0',
    ...(kind === 'postgres' ? { TRIAD_PG_URL: o.pgUrl!, TRIAD_PG_SCHEMA: schema } : {}),
  };
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  // Loaded here, not at the top: the rest of this file (the seeding helper) stays framework-free.
  const { createHttpApp } = await import('../src/http/bootstrap');
  const { EVENT_STORE } = await import('../src/events/event-store/event-store.port');
  const app = await createHttpApp({ logger: ['error', 'warn'] });
  try {
    await app.listen(0, '127.0.0.1');
    const url = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    const store = app.get<EventStore>(EVENT_STORE);
    o.log(`(b) ${kind}: ${o.runs} round(s) of ${o.decisions} approvals over HTTP, ${o.clients} concurrent clients`);
    const rounds: ApiRound[] = [];
    let total = 0;
    for (let r = 0; r < o.runs; r++) {
      const reviews: string[] = [];
      for (let i = 0; i < o.decisions; i++) reviews.push((await seedRunAwaitingReview(store, { launchedBy: 'user:bench-op' })).reviewId);
      const latencies: number[] = [];
      let next = 0;
      const started = process.hrtime.bigint();
      await Promise.all(
        Array.from({ length: o.clients }, async () => {
          while (next < reviews.length) {
            const reviewId = reviews[next++];
            const t = process.hrtime.bigint();
            const res = await fetch(`${url}/v1/reviews/${reviewId}/approve`, {
              method: 'POST',
              headers: { authorization: `Bearer ${KEYS.reviewer}`, 'content-type': 'application/json' },
              body: JSON.stringify({ reason: REASON }),
            });
            const body = await res.text();
            if (res.status !== 200) throw new Error(`approve ${reviewId}: HTTP ${res.status} ${body}`);
            latencies.push(since(t));
          }
        }),
      );
      const ms = since(started);
      total += reviews.length;
      latencies.sort((a, b) => a - b);
      const pick = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] * 10) / 10;
      rounds.push({ decisions: reviews.length, ms: Math.round(ms), decisionsPerSec: Math.round(perSec(reviews.length, ms)), latencyMs: { p50: pick(0.5), p95: pick(0.95), max: pick(1) } });
      o.log(`  round ${r + 1}: ${rounds[r].decisionsPerSec} decisions/s (p50 ${rounds[r].latencyMs.p50} ms, p95 ${rounds[r].latencyMs.p95} ms)`);
    }
    const t = process.hrtime.bigint();
    const res = await fetch(`${url}/v1/decisions/verify`, { headers: { authorization: `Bearer ${KEYS.auditor}` } });
    const verified = (await res.json()) as { ok: boolean; checked: number };
    const verify = { ok: verified.ok, checked: verified.checked, ms: Math.round(since(t)) };
    if (res.status !== 200 || !verify.ok || verify.checked !== total) throw new Error(`verify after the rounds: HTTP ${res.status} ${JSON.stringify(verified)}`);
    const decisionsPerSec = summarise(rounds.map((r) => r.decisionsPerSec));
    o.log(`  ${kind}: median ${decisionsPerSec.median} decisions/s; then GET /v1/decisions/verify: ok, ${verify.checked} records in ${verify.ms} ms`);
    return {
      store: kind,
      durability: kind === 'sqlite' ? 'WAL; every append fdatasynced before it is acknowledged' : 'PostgreSQL defaults (synchronous_commit on)',
      clients: o.clients,
      decisionsPerRound: o.decisions,
      decisionsPerSec,
      rounds,
      verify,
    };
  } finally {
    await app.close();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    if (kind === 'postgres') {
      await dropPostgresSchema(o.pgUrl!, schema);
    }
  }
}

export async function runDecisionsBench(options: DecisionsBenchOptions): Promise<DecisionsBenchResult> {
  const started = Date.now();
  const records = options.records ?? 100_000;
  const decisions = options.decisions ?? 300;
  const clients = options.clients ?? 4;
  const runs = options.runs ?? 3;
  const log = options.log;
  const machine = { ...machineInfo(), sqliteVersion: sqliteVersion() };
  log(`decision log benchmark — ${machine.cpuModel} × ${machine.cores}, ${machine.totalMemoryGiB} GiB, Node ${machine.nodeVersion}, SQLite ${machine.sqliteVersion}, ${cpuProbeText(machine)}`);
  const fdatasync = measureFdatasyncRate(options.dataDir);
  log(`fdatasync ceiling in ${options.dataDir}: ${fdatasync.syncsPerSecond} syncs/s`);
  const verify = await verifyPart(records, runs, options.dataDir, log);
  const api = [await apiPart('sqlite', { decisions, clients, runs, dataDir: options.dataDir, log })];
  if (options.pgUrl) api.push(await apiPart('postgres', { decisions, clients, runs, dataDir: options.dataDir, pgUrl: options.pgUrl, log }));
  const target = (name: string, measured: number) => ({ name, target: `>= ${TARGET_VERIFY_RECORDS_PER_SEC.toLocaleString('en-US')}`, measured, unit: 'records/s', met: measured >= TARGET_VERIFY_RECORDS_PER_SEC });
  const targets = [
    target('verify in memory, against the store', verify.memory.verifyAgainstStoreRecordsPerSec.median),
    target('verify from SQLite, end to end', verify.sqlite.verifyEndToEndRecordsPerSec.median),
  ];
  for (const t of targets) log(`target ${t.name}: ${t.target} ${t.unit} — measured ${t.measured.toLocaleString('en-US')} ${t.met ? 'MET' : 'NOT MET'}`);
  return {
    benchmark: 'decisions',
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    records,
    memory: verify.memory,
    sqlite: verify.sqlite,
    api,
    machine,
    fdatasync,
    inputs: { records, decisions, clients, runs, pgUrl: options.pgUrl ? redactUrl(options.pgUrl) : null, dataDir: options.dataDir },
    targets,
  };
}
