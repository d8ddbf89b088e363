import { randomBytes } from 'node:crypto';
import { uuidIds } from '../src/shared/system';
import { existsSync, rmSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { CheckpointStore } from '../src/checkpoint/checkpoint-store.port';
import { decisionTrust, installDecisionTrust } from '../src/attestation/decision-trust';
import { redactUrl } from '../src/config/config';
import type { AppendOptions, EventStore, NewEvent } from '../src/events/event-store/event-store.port';
import { InMemoryEventStore } from '../src/events/event-store/in-memory.event-store';
import { SqliteEventStore } from '../src/events/event-store/sqlite.event-store';
import { canonicalJson } from '../src/shared/canonical-json';
import { ROLES } from '../src/team/domain/roles';
import { toRunStreamId } from '../src/team/domain/run-events';
import { runStatus, type RunState } from '../src/team/domain/run-state';
import { buildRunLaunched } from '../src/team/commands/launch';
import { ModelError, type ModelProvider, type ModelRequest, type ModelResponse } from '../src/team/models/model.port';
import { toolUseResponse } from '../src/team/models/scripted.model';
import { DEFAULT_CHECKPOINT_EVERY_TURNS, RunDriver } from '../src/team/driver/run-driver';
import { InMemoryCheckpointStore } from '../src/checkpoint/in-memory.checkpoint-store';
import { SqliteCheckpointStore } from '../src/checkpoint/sqlite.checkpoint-store';
import { openStorage } from '../src/storage/storage';
import { ToolRegistry } from '../src/team/tools/tool-registry';
import { processFairShare } from '../src/team/dispatch/fair-share';
import type { ToolDefinition } from '../src/team/tools/tool.port';
import { cpuProbeText, dropPostgresSchema, machineInfo, measureFdatasyncRate, sqliteVersion, summarise, type FdatasyncRate, type MachineInfo, type Summary } from './machine';

/**
 * Team-run turns (`npm run bench -- turns`): how fast the run driver turns a team run over, and
 * what it stores per turn. A turn is one executor model step (a tool_use of ~400 bytes) plus one
 * tool step (a ~400-byte result), on a zero-latency scripted model and a tool that does no I/O,
 * so what is measured is the orchestration: fold, next action, serialisation, checkpoints and the
 * store. Runs are driven as the supervisor drives them: an owner claim, and a checkpoint every
 * `checkpointEveryTurns` turns (TRIAD_CHECKPOINT_EVERY_TURNS) and at phase boundaries.
 *
 * (a) one run of N turns on the configured store, durably (SQLite: every append fdatasynced), and
 *     the same run on the in-memory store (orchestration overhead without any I/O); to split the
 *     cost, both again without checkpoints, and on SQLite without the fdatasync;
 * (b) many concurrent runs with a simulated model latency, on the configured store, watching the
 *     event loop's lag and memory per run;
 * (c) the bytes stored per turn at several conversation lengths (they must stay flat).
 */

export type TurnsStoreKind = 'sqlite' | 'postgres' | 'memory';

export interface ConcurrencyInputs {
  /** Runs driven at the same time in this process. */
  runs: number;
  /** Executor tool turns per run (each run also has a plan, a submit and a verdict call). */
  turnsPerRun: number;
  /** Simulated latency of every model call. */
  latencyMs: number;
  /** Resolution of perf_hooks.monitorEventLoopDelay. */
  lagResolutionMs: number;
}

export interface TurnsBenchOptions {
  /** Turns of the single run (a); default 2000. */
  turns?: number;
  /** Repetitions of (a); the median is reported (the cost splits without checkpoints use the first three). Default 5. */
  runs?: number;
  /** Store for (a) durable, (b) and (c); default sqlite. */
  store?: TurnsStoreKind | string;
  pgUrl?: string;
  /** Scratch directory: databases are created (and removed) under it. */
  dataDir: string;
  log: (line: string) => void;
  concurrency?: Partial<ConcurrencyInputs>;
  /** Conversation lengths of (c); default 10, 100, 1000. */
  lengths?: number[];
  /** Duration of the fdatasync probe (ms); default 1000. */
  fdatasyncMs?: number;
  /** Checkpoint every N turns as the supervisor does (TRIAD_CHECKPOINT_EVERY_TURNS); 0: no checkpoints. Default: the driver's (DEFAULT_CHECKPOINT_EVERY_TURNS). */
  checkpointEveryTurns?: number;
  /** Repetitions of (a) stop early (after at least three) once (a) has taken this long; default 45 s. */
  timeBudgetMs?: number;
}

export interface TargetResult {
  name: string;
  description: string;
  target: string;
  measured: number;
  unit: string;
  met: boolean;
}

export interface BytesAtLength {
  turns: number;
  /** Mean over the run's turns of the data + metadata JSON bytes of the turn's events. */
  avgBytesPerTurn: number;
  medianTurnBytes: number;
  minTurnBytes: number;
  maxTurnBytes: number;
  eventsPerTurn: number;
  /** Store appends (transactions, and on SQLite fsyncs) per turn. */
  appendsPerTurn: number;
  /** Wall time per turn of this one run on the configured store (one sample, checkpoints included). */
  usPerTurn: number;
}

export interface TurnsBenchResult {
  benchmark: 'turns';
  startedAt: string;
  durationMs: number;
  /** Headline figures: the median durable run of (a). */
  turns: number;
  seconds: number;
  turnsPerSec: number;
  storeBytes: number;
  storeBytesBasis: string;
  bytesPerTurn: number;
  /** Sum over the run's events of data + metadata JSON bytes, and that per turn. */
  rowBytes: number;
  rowBytesPerTurn: number;
  store: TurnsStoreKind;
  durable: {
    store: TurnsStoreKind;
    durability: string;
    turnsPerSec: Summary;
    ms: Summary;
    /** Repetitions done: fewer than `inputs.runs` when the time budget ran out. */
    runsCompleted: number;
    /** The same durable run without checkpoints (null: checkpoints off). */
    withoutCheckpointsTurnsPerSec: Summary | null;
    /** Store appends per turn and the rate the disk's fdatasync allows at that many (SQLite only). */
    appendsPerTurn: number;
    fsyncCeilingTurnsPerSec: number | null;
    /** Mean duration of the WAL's fdatasync (on the thread pool, request to callback) per durable run, in µs (SQLite only). */
    walSyncUs: Summary | null;
    walBytesBeforeCheckpoint: number | null;
    /** SQLite pages by table after the run (dbstat). */
    storeBreakdown: { eventsBytes: number; eventsBytesPerTurn: number; checkpointsBytes: number; otherBytes: number; freeBytes: number } | null;
  };
  overhead: {
    /** The same run on the in-memory store: driver, fold, serialisation and hashing, no I/O. */
    store: 'memory';
    usPerTurn: Summary;
    /** The same in-memory run without checkpoints: what checkpointing costs per turn is the difference (null: checkpoints off). */
    withoutCheckpointsUsPerTurn: Summary | null;
    /** Without checkpoints, on SQLite without the fdatasync: SQLite's own work apart from the disk's sync (SQLite only). */
    sqliteNoSyncWithoutCheckpointsUsPerTurn: Summary | null;
  };
  concurrency: {
    store: TurnsStoreKind;
    runs: number;
    turnsPerRun: number;
    latencyMs: number;
    totalTurns: number;
    modelCalls: number;
    wallMs: number;
    /** Wall time if nothing but the model latency counted: model calls per run × latency. */
    latencyFloorMs: number;
    turnsPerSec: number;
    /** Event-loop lag (recorded interval minus the resolution). */
    eventLoopLagMs: { resolutionMs: number; samples: number; p50: number; p90: number; p99: number; max: number; mean: number };
    memory: {
      gcForced: boolean;
      /** Peak (sampled every 20 ms, garbage included) minus the baseline, per run. */
      peakHeapUsedPerRunKiB: number;
      peakRssPerRunKiB: number;
      /** After all runs ended, drivers and folded states still held, after a forced gc (null without gc). */
      liveHeapUsedPerRunKiB: number | null;
      baselineHeapUsedMiB: number;
      baselineRssMiB: number;
    };
  };
  bytesByLength: BytesAtLength[];
  /** loadAverage: 1, 5 and 15-minute load when the benchmark started (other work on the machine skews timings). */
  machine: MachineInfo & { sqliteVersion: string; loadAverage: number[] };
  fdatasync: FdatasyncRate;
  /** The same probe again after (a): the disk's sync rate can drift when the machine is shared. */
  fdatasyncAfter: FdatasyncRate;
  inputs: {
    turns: number;
    runs: number;
    store: TurnsStoreKind;
    pgUrl: string | null;
    dataDir: string;
    messageBytes: number;
    toolInputJsonBytes: number;
    toolOutputBytes: number;
    concurrency: ConcurrencyInputs;
    lengths: number[];
    warmupTurns: number;
    gcAvailable: boolean;
    /** Runs are driven as the supervisor drives them: an owner claim, and a checkpoint every N turns (0: none). */
    checkpointEveryTurns: number;
    driverOwner: string;
  };
  targets: TargetResult[];
}

const MESSAGE_BYTES = 400;
const TOOL_NAME = 'bench_note';
const TOOL_PREFIX = '{"note":""}'.length;
const FILLER =
  'The executor inspects the workspace, edits one file, runs the checks and notes what changed, ' +
  'which assumption held and which did not, before it moves on to the next step of the plan. ';
const text = (n: number) => FILLER.repeat(Math.ceil(n / FILLER.length)).slice(0, n);
/** The tool_use input is {"note": ...}: 400 bytes of JSON. */
const NOTE = text(MESSAGE_BYTES - TOOL_PREFIX);
const TOOL_OUTPUT = text(MESSAGE_BYTES);
const TOKEN_BUDGET = 1e12;
const USAGE = { inputTokens: 100, outputTokens: 100 };
const TURN_EVENT_TYPES = new Set(['ModelCallStarted', 'ModelCallCompleted', 'ToolCallRequested', 'ToolCallCompleted']);

const DEFAULT_CONCURRENCY: ConcurrencyInputs = { runs: 200, turnsPerRun: 20, latencyMs: 50, lagResolutionMs: 1 };

const TARGETS = {
  durableTurnsPerSec: 3_000,
  overheadUsPerTurn: 300,
  lagP99Ms: 20,
  flatBytesRatio: 1.15,
};

/** A cheap, idempotent tool: no I/O, a fixed ~400-byte result. */
const benchTool: ToolDefinition = {
  name: TOOL_NAME,
  description: 'Records a note about the work (benchmark tool: no I/O, answers with a fixed acknowledgement).',
  inputSchema: { type: 'object', properties: { note: { type: 'string' } }, required: ['note'], additionalProperties: false },
  readOnly: true,
  idempotent: true,
  risk: 'low',
  async execute() {
    return { output: TOOL_OUTPUT, isError: false };
  },
};

/**
 * A scripted model for long conversations. ScriptedModelProvider keeps a structuredClone of every
 * request (the whole conversation), which is quadratic over a 2,000-turn run; this one keeps
 * nothing. The script: the architect submits a plan at once, the executor calls the bench tool
 * until its turn `turnsOf(runId)` and then submits, the reviewer approves at once.
 */
const MODEL_ID_PREFIX = randomBytes(6).toString('hex');
let modelIdSeq = 0;

class BenchModel implements ModelProvider {
  readonly name = 'scripted';
  calls = 0;

  constructor(
    private readonly turnsOf: (runId: string) => number,
    private readonly latencyMs = 0,
  ) {}

  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.calls++;
    if (this.latencyMs > 0) await delay(this.latencyMs, request.signal);
    if (request.signal?.aborted) throw new ModelError('aborted', 'model request aborted');
    // A counter, not randomBytes: a zero-cost model should cost nothing (unique per process and run).
    const id = `toolu_${MODEL_ID_PREFIX}${(++modelIdSeq).toString(16).padStart(12, '0')}`;
    const extra = { id, model: 'scripted', usage: { ...USAGE } };
    switch (request.role) {
      case 'architect':
        return toolUseResponse('submit_plan', { plan: 'Call bench_note once per step, then submit.', steps: ['note', 'submit'] }, extra);
      case 'reviewer':
        return toolUseResponse('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'Every criterion is met.' }, extra);
      case 'executor': {
        // user, assistant, user, ...: the last message is this turn's user message.
        const turn = (request.messages.length + 1) / 2;
        return turn <= this.turnsOf(request.runId)
          ? toolUseResponse(TOOL_NAME, { note: NOTE }, extra)
          : toolUseResponse('submit_work', { summary: 'Noted every step.', files: [] }, extra);
      }
    }
  }
}

function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ModelError('aborted', 'model request aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const gc = (): boolean => {
  const g = (globalThis as { gc?: () => void }).gc;
  if (typeof g !== 'function') return false;
  g();
  return true;
};

// ---------------------------------------------------------------------------------------------
// Stores

interface Footprint {
  /** Database file + WAL after PRAGMA wal_checkpoint(TRUNCATE). */
  bytes: number;
  walBytesBeforeCheckpoint: number;
  /** Pages by table (dbstat): events with its indexes, checkpoints, everything else, and free pages. */
  eventsBytes: number;
  checkpointsBytes: number;
  otherBytes: number;
  freeBytes: number;
}

export interface StoreHandle {
  store: EventStore;
  /** The run checkpoint store the supervisor would use next to this event store. */
  checkpoints: CheckpointStore;
  /** On-disk bytes for SQLite, null elsewhere. */
  footprint(): Promise<Footprint | null>;
  dispose(): Promise<void>;
}

export async function openStore(kind: TurnsStoreKind | 'sqlite-nosync', opts: TurnsBenchOptions, tag: string): Promise<StoreHandle> {
  if (kind === 'memory') {
    const store = new InMemoryEventStore();
    return { store, checkpoints: new InMemoryCheckpointStore(), footprint: async () => null, dispose: async () => undefined };
  }
  if (kind === 'sqlite' || kind === 'sqlite-nosync') {
    const dir = join(opts.dataDir, `turns-bench-${process.pid}-${tag}`);
    rmSync(dir, { recursive: true, force: true });
    const file = join(dir, 'triad.db');
    const store = new SqliteEventStore({ file, durable: kind !== 'sqlite-nosync' });
    const size = (f: string) => (existsSync(f) ? statSync(f).size : 0);
    return {
      store,
      checkpoints: new SqliteCheckpointStore(store.db),
      footprint: async () => {
        const walBytesBeforeCheckpoint = size(`${file}-wal`);
        store.db.pragma('wal_checkpoint(TRUNCATE)');
        const pages = store.db.prepare('SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name').all() as Array<{ name: string; bytes: number }>;
        const pageSize = store.db.pragma('page_size', { simple: true }) as number;
        const free = (store.db.pragma('freelist_count', { simple: true }) as number) * pageSize;
        const sum = (match: (name: string) => boolean) => pages.filter((p) => match(p.name)).reduce((a, p) => a + p.bytes, 0);
        const isEvents = (n: string) => n === 'events' || n.startsWith('sqlite_autoindex_events_') || n.startsWith('events_');
        const isCheckpoints = (n: string) => n === 'checkpoints' || n.startsWith('sqlite_autoindex_checkpoints_');
        return {
          bytes: size(file) + size(`${file}-wal`),
          walBytesBeforeCheckpoint,
          eventsBytes: sum(isEvents),
          checkpointsBytes: sum(isCheckpoints),
          otherBytes: sum((n) => !isEvents(n) && !isCheckpoints(n)),
          freeBytes: free,
        };
      },
      dispose: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if (!opts.pgUrl) throw new Error('the postgres turns benchmark needs TRIAD_PG_URL');
  const schema = `triad_turns_${process.pid}_${randomBytes(4).toString('hex')}`;
  const storage = await openStorage({ store: 'postgres', pgUrl: opts.pgUrl, dataDir: opts.dataDir }, { pgSchema: schema });
  return {
    store: storage.events,
    checkpoints: storage.checkpoints,
    footprint: async () => null,
    dispose: async () => {
      await storage.close();
      await dropPostgresSchema(opts.pgUrl!, schema);
    },
  };
}

/** Counts appends (transactions) and which executor turns they carry; used outside timed sections. */
function countingStore(inner: EventStore): { store: EventStore; appends: Array<{ turn?: number }> } {
  const appends: Array<{ turn?: number }> = [];
  const store = Object.create(inner) as EventStore;
  store.append = (streamId: string, events: NewEvent[], options?: AppendOptions) => {
    const turnEvent = events.find((e) => TURN_EVENT_TYPES.has(e.type) && (e.data as { role?: string }).role === 'executor');
    appends.push({ turn: turnEvent ? (turnEvent.data as { turn: number }).turn : undefined });
    return inner.append(streamId, events, options);
  };
  return { store, appends };
}

// ---------------------------------------------------------------------------------------------
// Runs

const tools = new ToolRegistry([benchTool]);

/** Appends RunLaunched as `launchRun` does, with the bench registry's tools in the team config. */
async function launchBenchRun(store: EventStore, runId: string, turns: number): Promise<void> {
  const data = buildRunLaunched(
    {
      goal: `Benchmark: call ${TOOL_NAME} ${turns} times, then submit the work.`,
      acceptanceCriteria: [`${TOOL_NAME} was called ${turns} times`],
      team: { executor: { maxTurns: turns + 5 } },
      budget: { totalTokens: TOKEN_BUDGET },
      reviewPolicy: { humanGate: false },
    },
    { runId, launchedBy: 'user:bench', now: new Date(), provider: 'scripted', defaultModel: 'scripted' },
  );
  // Launch validation checks allow-lists against the built-in tools; the bench registry has only its own.
  for (const role of ROLES) data.team[role].tools = tools.resolveRoleTools(role);
  await store.append(toRunStreamId(runId), [{ type: 'RunLaunched', data, metadata: { runId, correlationId: runId, actor: 'user:bench' } }], {
    expectedRevision: 'no_stream',
  });
}

/** How runs are driven: as the supervisor drives them (an owner claim, checkpoints every N turns). */
export interface Harness {
  workspaceRoot: string;
  owner: string;
  checkpointEveryTurns: number;
}

function newDriver(runId: string, store: EventStore, model: ModelProvider, h: Harness, checkpoints: CheckpointStore | undefined): RunDriver {
  return new RunDriver(runId, {
    store,
    model,
    tools,
    clock: { now: () => Date.now() },
    ids: uuidIds,
    workspaceRoot: h.workspaceRoot,
    owner: h.owner,
    checkpoints,
    checkpointEveryTurns: h.checkpointEveryTurns,
    fairShare: processFairShare,
  });
}

function checkCompleted(state: RunState, turns: number): void {
  const status = runStatus(state);
  const executorCalls = state.usage.executor.turns;
  if (status !== 'completed' || executorCalls !== turns + 1) {
    throw new Error(`bench run ${state.runId} ended '${status}' after ${executorCalls} executor calls; expected 'completed' after ${turns + 1}`);
  }
}

/** Launches and drives one run of `turns` executor turns; times the drive. */
export async function timedRun(handle: StoreHandle, turns: number, h: Harness, withCheckpoints = h.checkpointEveryTurns > 0): Promise<{ runId: string; ms: number }> {
  const runId = `run_bench_${randomBytes(8).toString('hex')}`;
  const model = new BenchModel(() => turns);
  const store = handle.store;
  await launchBenchRun(store, runId, turns);
  const driver = newDriver(runId, store, model, h, withCheckpoints ? handle.checkpoints : undefined);
  const started = process.hrtime.bigint();
  const state = await driver.drive();
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  checkCompleted(state, turns);
  return { runId, ms };
}

async function rowBytesOf(store: EventStore, runId: string): Promise<number> {
  let bytes = 0;
  for (const e of await store.readStream(toRunStreamId(runId))) {
    bytes += Buffer.byteLength(canonicalJson(e.data)) + Buffer.byteLength(canonicalJson(e.metadata));
  }
  return bytes;
}

// ---------------------------------------------------------------------------------------------

/**
 * The runs are driven by a bare RunDriver, without the server's signing of its appends, so the
 * system's waiver of the human gate is unsigned; a process trusts no unsigned decision, and the
 * driver would record the waiver again and again. Like the test process, the benchmark trusts them
 * while it runs (the cost of signing is the decisions benchmark's), and then puts back the trust it found.
 */
export async function runTurnsBench(opts: TurnsBenchOptions): Promise<TurnsBenchResult> {
  const trust = decisionTrust();
  installDecisionTrust({ refusal: () => undefined });
  try {
    return await turnsBench(opts);
  } finally {
    installDecisionTrust(trust);
  }
}

async function turnsBench(opts: TurnsBenchOptions): Promise<TurnsBenchResult> {
  const started = Date.now();
  const turns = positiveInt(opts.turns, 2000);
  const runs = positiveInt(opts.runs, 5);
  const kind = (opts.store ?? 'sqlite') as TurnsStoreKind;
  if (!['sqlite', 'postgres', 'memory'].includes(kind)) throw new Error(`the turns benchmark runs on sqlite, postgres or memory, not '${kind}'`);
  const concurrencyInputs: ConcurrencyInputs = { ...DEFAULT_CONCURRENCY, ...(opts.concurrency ?? {}) };
  const lengths = opts.lengths ?? [10, 100, 1000];
  const warmupTurns = Math.min(turns, 300);
  const checkpointEveryTurns = Math.max(0, Math.floor(opts.checkpointEveryTurns ?? DEFAULT_CHECKPOINT_EVERY_TURNS));
  const harness: Harness = { workspaceRoot: join(opts.dataDir, 'workspaces'), owner: `bench:${process.pid}`, checkpointEveryTurns };
  const gcAvailable = typeof (globalThis as { gc?: unknown }).gc === 'function';

  const machine = { ...machineInfo(), sqliteVersion: sqliteVersion(), loadAverage: loadavg().map((l) => Math.round(l * 100) / 100) };
  const fdatasync = measureFdatasyncRate(opts.dataDir, opts.fdatasyncMs ?? 1000);
  opts.log(
    `machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.totalMemoryGiB} GiB, node ${machine.nodeVersion}, SQLite ${machine.sqliteVersion}, ` +
      `${cpuProbeText(machine)}, load ${machine.loadAverage.join(' ')}`,
  );
  opts.log(`fdatasync in ${fdatasync.dir}: ${fdatasync.syncsPerSecond}/s`);
  opts.log(
    `inputs: ${turns} turns x ${runs} runs on ${kind}; ${MESSAGE_BYTES}-byte messages; concurrency ${concurrencyInputs.runs} runs x ` +
      `${concurrencyInputs.turnsPerRun} turns at ${concurrencyInputs.latencyMs} ms; lengths ${lengths.join('/')}; ` +
      `checkpoint every ${checkpointEveryTurns || 'no'} turns; gc ${gcAvailable ? 'forced' : 'not exposed (node --expose-gc)'}`,
  );

  // Warm-up: JIT the driver, the machines and the serialiser before anything is timed.
  {
    const warm = await openStore('memory', opts, 'warmup');
    for (let i = 0; i < 3; i++) await timedRun(warm, warmupTurns, harness);
    await warm.dispose();
  }

  // (a) one run of N turns, driven as the supervisor drives it (checkpoints included): durably, and
  // on the in-memory store. To split the cost (in the first `splitRuns` repetitions): both again
  // without checkpoints, and (SQLite) without checkpoints and without the fdatasync. Interleaved per
  // repetition, so noise hits them all alike.
  const withCp = checkpointEveryTurns > 0;
  const splitRuns = Math.min(runs, 3);
  const durableMs: number[] = [];
  const durableNoCpMs: number[] = [];
  const memoryUs: number[] = [];
  const memoryNoCpUs: number[] = [];
  const noSyncNoCpUs: number[] = [];
  /** Mean duration of the WAL's group fdatasync in each durable SQLite run (checkpoints included). */
  const walSyncUs: number[] = [];
  let footprint = null as Footprint | null;
  let rowBytes = 0;
  const usPerTurn = (ms: number) => (ms * 1000) / turns;
  /** Drives one run on a fresh store; the first durable one is also measured for bytes. */
  const once = async (storeKind: TurnsStoreKind | 'sqlite-nosync', tag: string, checkpoints: boolean, measure = false): Promise<number> => {
    gc();
    const handle = await openStore(storeKind, opts, tag);
    try {
      const { runId, ms } = await timedRun(handle, turns, harness, checkpoints);
      if (storeKind === 'sqlite' && checkpoints === withCp && handle.store instanceof SqliteEventStore) walSyncUs.push(handle.store.syncStats().meanSyncUs);
      if (measure) {
        rowBytes = await rowBytesOf(handle.store, runId);
        footprint = await handle.footprint();
      }
      return ms;
    } finally {
      await handle.dispose();
    }
  };
  const budgetMs = opts.timeBudgetMs ?? 45_000;
  const startedA = Date.now();
  for (let r = 0; r < runs; r++) {
    if (r >= 3 && Date.now() - startedA > budgetMs) {
      opts.log(`(a) took over ${Math.round(budgetMs / 1000)} s: stopping after ${r} of ${runs} runs (a slow or busy disk?)`);
      break;
    }
    durableMs.push(await once(kind, `durable-${r}`, withCp, r === 0));
    memoryUs.push(usPerTurn(await once('memory', `memory-${r}`, withCp)));
    const split = r < splitRuns;
    if (split && withCp) durableNoCpMs.push(await once(kind, `durable-nocp-${r}`, false));
    if (split && withCp) memoryNoCpUs.push(usPerTurn(await once('memory', `memory-nocp-${r}`, false)));
    if (split && kind === 'sqlite') noSyncNoCpUs.push(usPerTurn(await once('sqlite-nosync', `nosync-${r}`, false)));
    const perSec = (ms: number) => Math.round((turns * 1000) / ms);
    opts.log(
      `run ${r + 1}/${runs}: ${kind} ${perSec(durableMs[r])} turns/s` +
        (split && withCp ? ` (${perSec(durableNoCpMs[r])} without checkpoints)` : '') +
        `; in-memory ${Math.round(memoryUs[r])} us/turn` +
        (split && withCp ? ` (${Math.round(memoryNoCpUs[r])} without checkpoints)` : '') +
        (split && kind === 'sqlite' ? `; SQLite without fdatasync, no checkpoints ${Math.round(noSyncNoCpUs[r])} us/turn` : ''),
    );
  }
  const fdatasyncAfter = measureFdatasyncRate(opts.dataDir, opts.fdatasyncMs ?? 1000);
  opts.log(`fdatasync after (a): ${fdatasyncAfter.syncsPerSecond}/s`);

  // (c) bytes per turn by conversation length (before (b), which leaves the most garbage behind).
  const bytesByLength: BytesAtLength[] = [];
  for (const length of lengths) {
    bytesByLength.push(await bytesAtLength(kind, opts, length, harness));
    const b = bytesByLength[bytesByLength.length - 1];
    opts.log(`${length} turns: ${b.avgBytesPerTurn} bytes per turn, ${b.usPerTurn} us per turn`);
  }

  // (b) concurrent runs with model latency.
  gc();
  const concurrency = await runConcurrency(kind, opts, concurrencyInputs, harness);
  opts.log(`concurrency: ${concurrency.runs} runs in ${concurrency.wallMs} ms, event-loop lag p99 ${concurrency.eventLoopLagMs.p99} ms`);

  const turnsPerSecSamples = durableMs.map((m) => (turns * 1000) / m);
  const durableSummary = summarise(durableMs);
  const appendsPerTurn = bytesByLength.length > 0 ? bytesByLength[bytesByLength.length - 1].appendsPerTurn : 2;
  const storeBytes = footprint?.bytes ?? rowBytes;
  const avgs = bytesByLength.map((b) => b.avgBytesPerTurn);
  const result: TurnsBenchResult = {
    benchmark: 'turns',
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    turns,
    seconds: Math.round(medianOf(durableMs)) / 1000,
    turnsPerSec: summarise(turnsPerSecSamples).median,
    storeBytes,
    storeBytesBasis: footprint
      ? 'SQLite database file + WAL after the run and PRAGMA wal_checkpoint(TRUNCATE): events with their indexes, the run checkpoint, ' +
        'schema, free pages and the run\'s non-turn events included (see durable.storeBreakdown)'
      : 'sum of the data + metadata JSON bytes of the run\'s events',
    bytesPerTurn: Math.round(storeBytes / turns),
    rowBytes,
    rowBytesPerTurn: Math.round(rowBytes / turns),
    store: kind,
    durable: {
      store: kind,
      durability: kind === 'sqlite' ? 'WAL; every append fdatasynced before it is acknowledged (group sync off the event loop)' : kind === 'postgres' ? 'PostgreSQL commit' : 'none (in-memory)',
      turnsPerSec: summarise(turnsPerSecSamples),
      ms: durableSummary,
      runsCompleted: durableMs.length,
      withoutCheckpointsTurnsPerSec: durableNoCpMs.length > 0 ? summarise(durableNoCpMs.map((m) => (turns * 1000) / m)) : null,
      appendsPerTurn,
      fsyncCeilingTurnsPerSec: kind === 'sqlite' ? Math.round(Math.min(fdatasync.syncsPerSecond, fdatasyncAfter.syncsPerSecond) / appendsPerTurn) : null,
      walSyncUs: walSyncUs.length > 0 ? summarise(walSyncUs) : null,
      walBytesBeforeCheckpoint: footprint?.walBytesBeforeCheckpoint ?? null,
      storeBreakdown: footprint
        ? {
            eventsBytes: footprint.eventsBytes,
            eventsBytesPerTurn: Math.round(footprint.eventsBytes / turns),
            checkpointsBytes: footprint.checkpointsBytes,
            otherBytes: footprint.otherBytes,
            freeBytes: footprint.freeBytes,
          }
        : null,
    },
    overhead: {
      store: 'memory',
      usPerTurn: summarise(memoryUs),
      withoutCheckpointsUsPerTurn: memoryNoCpUs.length > 0 ? summarise(memoryNoCpUs) : null,
      sqliteNoSyncWithoutCheckpointsUsPerTurn: noSyncNoCpUs.length > 0 ? summarise(noSyncNoCpUs) : null,
    },
    concurrency,
    bytesByLength,
    machine,
    fdatasync,
    fdatasyncAfter,
    inputs: {
      turns,
      runs,
      store: kind,
      pgUrl: opts.pgUrl ? redactUrl(opts.pgUrl) : null,
      dataDir: opts.dataDir,
      messageBytes: MESSAGE_BYTES,
      toolInputJsonBytes: JSON.stringify({ note: NOTE }).length,
      toolOutputBytes: TOOL_OUTPUT.length,
      concurrency: concurrencyInputs,
      lengths,
      warmupTurns,
      gcAvailable,
      checkpointEveryTurns,
      driverOwner: harness.owner,
    },
    targets: [],
  };
  result.targets = [
    {
      name: 'durableTurnsPerSec',
      description: `one run, ${kind}${kind === 'sqlite' ? ' durable' : ''}`,
      target: `>= ${TARGETS.durableTurnsPerSec}`,
      measured: result.turnsPerSec,
      unit: 'turns/s',
      met: result.turnsPerSec >= TARGETS.durableTurnsPerSec,
    },
    {
      name: 'overheadUsPerTurn',
      description: 'orchestration per turn, in-memory store (no fsync)',
      target: `<= ${TARGETS.overheadUsPerTurn}`,
      measured: result.overhead.usPerTurn.median,
      unit: 'us/turn',
      met: result.overhead.usPerTurn.median <= TARGETS.overheadUsPerTurn,
    },
    {
      name: 'eventLoopLagP99',
      description: `${concurrency.runs} concurrent runs, ${concurrency.latencyMs} ms model latency`,
      target: `< ${TARGETS.lagP99Ms}`,
      measured: concurrency.eventLoopLagMs.p99,
      unit: 'ms',
      met: concurrency.eventLoopLagMs.p99 < TARGETS.lagP99Ms,
    },
    {
      name: 'flatBytesPerTurn',
      description: `largest / smallest mean bytes per turn over lengths ${lengths.join('/')}`,
      target: `<= ${TARGETS.flatBytesRatio}`,
      measured: avgs.length > 0 ? Math.round((Math.max(...avgs) / Math.min(...avgs)) * 1000) / 1000 : 1,
      unit: 'ratio',
      met: avgs.length === 0 || Math.max(...avgs) / Math.min(...avgs) <= TARGETS.flatBytesRatio,
    },
  ];
  for (const line of formatTable(result)) opts.log(line);
  return result;
}

function positiveInt(value: number | undefined, fallback: number): number {
  return Number.isFinite(value) && value! >= 1 ? Math.floor(value!) : fallback;
}

function medianOf(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function bytesAtLength(kind: TurnsStoreKind, opts: TurnsBenchOptions, length: number, h: Harness): Promise<BytesAtLength> {
  const handle = await openStore(kind, opts, `length-${length}`);
  try {
    const counting = countingStore(handle.store);
    const runId = `run_len_${randomBytes(8).toString('hex')}`;
    await launchBenchRun(counting.store, runId, length);
    const checkpoints = h.checkpointEveryTurns > 0 ? handle.checkpoints : undefined;
    const started = process.hrtime.bigint();
    const state = await newDriver(runId, counting.store, new BenchModel(() => length), h, checkpoints).drive();
    const usPerTurn = Math.round(Number(process.hrtime.bigint() - started) / 1e3 / length);
    checkCompleted(state, length);
    const perTurn = new Array<number>(length).fill(0);
    let events = 0;
    for (const e of await handle.store.readStream(toRunStreamId(runId))) {
      const d = e.data as { role?: string; turn?: number };
      if (!TURN_EVENT_TYPES.has(e.type) || d.role !== 'executor' || typeof d.turn !== 'number' || d.turn > length) continue;
      perTurn[d.turn - 1] += Buffer.byteLength(canonicalJson(e.data)) + Buffer.byteLength(canonicalJson(e.metadata));
      events++;
    }
    const appends = counting.appends.filter((a) => a.turn !== undefined && a.turn <= length).length;
    const sorted = [...perTurn].sort((a, b) => a - b);
    return {
      turns: length,
      avgBytesPerTurn: Math.round(perTurn.reduce((a, b) => a + b, 0) / length),
      medianTurnBytes: Math.round(medianOf(perTurn)),
      minTurnBytes: sorted[0],
      maxTurnBytes: sorted[sorted.length - 1],
      eventsPerTurn: Math.round((events / length) * 100) / 100,
      appendsPerTurn: Math.round((appends / length) * 100) / 100,
      usPerTurn,
    };
  } finally {
    await handle.dispose();
  }
}

async function runConcurrency(
  kind: TurnsStoreKind,
  opts: TurnsBenchOptions,
  inputs: ConcurrencyInputs,
  h: Harness,
): Promise<TurnsBenchResult['concurrency']> {
  const handle = await openStore(kind, opts, 'concurrency');
  try {
    const model = new BenchModel(() => inputs.turnsPerRun, inputs.latencyMs);
    const tag = randomBytes(4).toString('hex');
    const runIds = Array.from({ length: inputs.runs }, (_, i) => `run_conc_${tag}_${i}`);
    for (const runId of runIds) await launchBenchRun(handle.store, runId, inputs.turnsPerRun);
    const checkpoints = h.checkpointEveryTurns > 0 ? handle.checkpoints : undefined;
    const drivers = runIds.map((runId) => newDriver(runId, handle.store, model, h, checkpoints));
    const gcForced = gc();
    const base = process.memoryUsage();
    let peakHeap = base.heapUsed;
    let peakRss = base.rss;
    const sampler = setInterval(() => {
      const m = process.memoryUsage();
      if (m.heapUsed > peakHeap) peakHeap = m.heapUsed;
      if (m.rss > peakRss) peakRss = m.rss;
    }, 20);
    const histogram = monitorEventLoopDelay({ resolution: inputs.lagResolutionMs });
    histogram.enable();
    const started = process.hrtime.bigint();
    let states: RunState[];
    try {
      states = await Promise.all(drivers.map((d) => d.drive()));
    } finally {
      histogram.disable();
      clearInterval(sampler);
    }
    const wallMs = Math.round(Number(process.hrtime.bigint() - started) / 1e6);
    const end = process.memoryUsage();
    peakHeap = Math.max(peakHeap, end.heapUsed);
    peakRss = Math.max(peakRss, end.rss);
    for (const s of states) checkCompleted(s, inputs.turnsPerRun);
    // Drivers and states are still referenced here: what survives a gc is what the runs hold.
    const live = gcForced && gc() ? process.memoryUsage().heapUsed - base.heapUsed : null;
    const kib = (bytes: number) => Math.round(bytes / 1024 / inputs.runs);
    const lag = (ns: number) => Math.max(0, Math.round((ns / 1e6 - inputs.lagResolutionMs) * 100) / 100);
    const totalTurns = inputs.runs * inputs.turnsPerRun;
    const callsPerRun = inputs.turnsPerRun + 3;
    const result: TurnsBenchResult['concurrency'] = {
      store: kind,
      runs: inputs.runs,
      turnsPerRun: inputs.turnsPerRun,
      latencyMs: inputs.latencyMs,
      totalTurns,
      modelCalls: model.calls,
      wallMs,
      latencyFloorMs: callsPerRun * inputs.latencyMs,
      turnsPerSec: Math.round((totalTurns * 1000) / wallMs),
      eventLoopLagMs: {
        resolutionMs: inputs.lagResolutionMs,
        samples: histogram.count,
        p50: lag(histogram.percentile(50)),
        p90: lag(histogram.percentile(90)),
        p99: lag(histogram.percentile(99)),
        max: lag(histogram.max),
        mean: lag(histogram.mean),
      },
      memory: {
        gcForced,
        peakHeapUsedPerRunKiB: kib(peakHeap - base.heapUsed),
        peakRssPerRunKiB: kib(peakRss - base.rss),
        liveHeapUsedPerRunKiB: live === null ? null : kib(live),
        baselineHeapUsedMiB: Math.round(base.heapUsed / 1024 / 1024),
        baselineRssMiB: Math.round(base.rss / 1024 / 1024),
      },
    };
    drivers.length = 0;
    return result;
  } finally {
    await handle.dispose();
  }
}

function formatTable(r: TurnsBenchResult): string[] {
  const lines: string[] = [];
  const c = r.concurrency;
  const range = (s: Summary, unit = '') => `${fmt(s.median)}${unit} (${fmt(s.min)}-${fmt(s.max)})`;
  const rows: string[][] = [
    ['measure', `median of ${r.durable.runsCompleted} runs (min-max); the splits: of ${Math.min(r.durable.runsCompleted, 3)}`],
    [`one run, ${r.turns} turns, ${r.store}${r.store === 'sqlite' ? ' durable' : ''}: turns/s`, range(r.durable.turnsPerSec)],
    ...(r.durable.withoutCheckpointsTurnsPerSec ? [[`  without checkpoints: turns/s`, range(r.durable.withoutCheckpointsTurnsPerSec)]] : []),
    [`  seconds`, `${r.seconds.toFixed(3)} (${(r.durable.ms.min / 1000).toFixed(3)}-${(r.durable.ms.max / 1000).toFixed(3)})`],
    [`  store appends per turn / fdatasync ceiling`, `${r.durable.appendsPerTurn} / ${r.durable.fsyncCeilingTurnsPerSec === null ? 'n/a' : `${fmt(r.durable.fsyncCeilingTurnsPerSec)} turns/s`}`],
    ...(r.durable.walSyncUs ? [[`  WAL fdatasync in the run, mean us (thread pool)`, range(r.durable.walSyncUs)] as [string, string]] : []),
    [`  store bytes${r.store === 'sqlite' ? ' (db file after WAL checkpoint)' : ' (event JSON)'} / per turn`, `${fmt(r.storeBytes)} / ${fmt(r.bytesPerTurn)}`],
    [`  event JSON bytes / per turn`, `${fmt(r.rowBytes)} / ${fmt(r.rowBytesPerTurn)}`],
    ...(r.durable.storeBreakdown
      ? [
          [
            `  db pages: events+indexes / checkpoints / free`,
            `${fmt(r.durable.storeBreakdown.eventsBytes)} (${fmt(r.durable.storeBreakdown.eventsBytesPerTurn)}/turn) / ` +
              `${fmt(r.durable.storeBreakdown.checkpointsBytes)} / ${fmt(r.durable.storeBreakdown.freeBytes)}`,
          ],
        ]
      : []),
    [`same run, in-memory store: us/turn`, range(r.overhead.usPerTurn)],
    ...(r.overhead.withoutCheckpointsUsPerTurn ? [[`  without checkpoints`, range(r.overhead.withoutCheckpointsUsPerTurn)]] : []),
  ];
  if (r.overhead.sqliteNoSyncWithoutCheckpointsUsPerTurn) {
    rows.push([`same run, SQLite without fdatasync, no checkpoints: us/turn`, range(r.overhead.sqliteNoSyncWithoutCheckpointsUsPerTurn)]);
  }
  rows.push(
    [`${c.runs} concurrent runs x ${c.turnsPerRun} turns, ${c.latencyMs} ms model: wall ms`, `${fmt(c.wallMs)} (latency floor ${fmt(c.latencyFloorMs)})`],
    [`  event-loop lag ms p50 / p99 / max`, `${c.eventLoopLagMs.p50} / ${c.eventLoopLagMs.p99} / ${c.eventLoopLagMs.max}`],
    [
      `  memory per run KiB: live heap / peak heap / peak rss`,
      `${c.memory.liveHeapUsedPerRunKiB ?? 'n/a (no --expose-gc)'} / ${fmt(c.memory.peakHeapUsedPerRunKiB)} / ${fmt(c.memory.peakRssPerRunKiB)}`,
    ],
  );
  for (const b of r.bytesByLength) {
    rows.push([
      `bytes per turn at ${b.turns} turns (min-max per turn); us/turn`,
      `${fmt(b.avgBytesPerTurn)} (${fmt(b.minTurnBytes)}-${fmt(b.maxTurnBytes)}); ${fmt(b.usPerTurn)}`,
    ]);
  }
  const w0 = Math.max(...rows.map((x) => x[0].length));
  lines.push(
    `team-run turns on ${r.store}; ${r.machine.cores} cores, load ${r.machine.loadAverage.join(' ')}; ` +
      `fdatasync ${fmt(r.fdatasync.syncsPerSecond)}/s before, ${fmt(r.fdatasyncAfter.syncsPerSecond)}/s after (a)`,
  );
  rows.forEach((x, i) => {
    lines.push(`${x[0].padEnd(w0)}  ${x[1]}`);
    if (i === 0) lines.push(`${'-'.repeat(w0)}  ${'-'.repeat(x[1].length)}`);
  });
  for (const t of r.targets) lines.push(`target ${t.name} (${t.description}) ${t.target} ${t.unit}: ${t.measured} ${t.met ? 'met' : 'MISSED'}`);
  return lines;
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
