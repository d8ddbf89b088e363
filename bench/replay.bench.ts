import { createHash } from 'node:crypto';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { checkpointJson, deserializeRunState, takeCheckpoint, type Checkpoint } from '../src/checkpoint/checkpoint';
import { SqliteCheckpointStore } from '../src/checkpoint/sqlite.checkpoint-store';
import type { NewEvent, RecordedEvent } from '../src/events/event-store/event-store.port';
import { decodeRawStreamRow, STREAM_ROW_COLUMNS, type RawStreamRow } from '../src/events/prepare';
import { SqliteEventStore } from '../src/events/event-store/sqlite.event-store';
import { canonicalJson, sha256Hex } from '../src/shared/canonical-json';
import { agentLoopMachine } from '../src/team/domain/agent-loop.machine';
import { pureTransition } from '../src/team/domain/pure-transition';
import { nextAction } from '../src/team/domain/next-action';
import { agentIdentity, toRunStreamId, type RunCoreEvent, type TeamRunEvent } from '../src/team/domain/run-events';
import { evolve, foldRun, initialRunState, type RunState } from '../src/team/domain/run-state';
import { contextBudget, DEFAULT_MARGIN_TOKENS, estimateMessageTokens, estimateTextTokens, estimateTokens } from '../src/team/domain/resilience/context-window';
import { teamRunMachine } from '../src/team/domain/team-run.machine';
import { buildRunLaunched } from '../src/team/commands/launch';
import { ROLE_PROMPTS } from '../src/team/domain/prompts';
import { loadRunState } from '../src/team/runs/run-stream';
import { FOLD_PAGE_EVENTS } from '../src/team/runs/run-history';
import { cpuProbeText, machineInfo, sqliteVersion, type MachineInfo } from './machine';

/**
 * Replay and checkpoints (`npm run bench -- replay`): how fast a run's context is rebuilt from its
 * events, and how fast a run resumes from a checkpoint, as the history grows.
 *
 * For each history length (default 1,000, 10,000 and 100,000 executor turns) one run is written
 * straight into a SQLite store — events built through the domain types, four per turn
 * (ModelCallStarted, ModelCallCompleted with ~400 bytes of content, ToolCallRequested,
 * ToolCallCompleted with a ~400-byte or short result), appended in batches of 1,000 — then:
 *
 * - full replay = `loadRunState` without checkpoints: read every event (SQLite rows, JSON.parse)
 *   and fold it; split into read and fold, and the fold into the two xstate machines' transitions;
 * - checkpoint resume = `loadRunState` with a checkpoint taken 10 turns before the end: load and
 *   parse the checkpoint, verify its content hash, restore it, read and fold the 40-event tail;
 *   split the same way, with the checkpoint's size;
 * - the same resume with the conversation bounded to its last 64 messages, which is what a
 *   compacted context would hold: the cost of everything in a checkpoint but the conversation.
 *
 * Medians of several repetitions. Figures and their reading: docs/BENCHMARKS.md.
 */

export interface ReplayBenchOptions {
  /** One history length (`--turns`); default: 1,000, 10,000 and 100,000. */
  turns?: number;
  lengths?: number[];
  /** Repetitions per length; the median is reported. Default 5 (3 at 100,000 turns and above). */
  runs?: number;
  /** Scratch directory: one database per length is created (and removed) under it. */
  dataDir: string;
  log: (line: string) => void;
}

export interface Stats {
  median: number;
  min: number;
  max: number;
  samples: number[];
}

export interface ReplayAtLength {
  turns: number;
  /** `unbounded`: no context limit, the conversation holds every turn; `window`: the executor's model has a context limit, and the history holds the compactions its driver made. */
  history: 'unbounded' | 'window';
  /** The context limit of the `window` history (tokens). */
  contextLimitTokens: number | null;
  compactions: number;
  /** Messages in the executor's conversation at the end (what a checkpoint holds). */
  conversationMessages: number;
  events: number;
  /** Size of the SQLite database (events + the checkpoint). */
  storeBytes: number;
  buildMs: number;
  replay: {
    /** loadRunState without a checkpoint: pages read ahead on the store's read-ahead thread. */
    ms: Stats;
    eventsPerSec: number;
    /** Pages of the timed replays the read-ahead thread served (the rest were read in-thread). */
    pagesReadAhead: number;
    /** Mean time per replay spent waiting for the read-ahead thread (it was not ahead). */
    readAheadWaitMs: number;
    pages: number;
    /** The same replay with the store's `readAhead: false`: read, decode and fold on one thread. */
    oneThreadMs: Stats;
    oneThreadEventsPerSec: number;
    /** One thread, page by page: reading the rows from SQLite (no JSON parsing). */
    readRowsMs: Stats;
    /** JSON.parse of data and metadata, envelope building (what readStream adds to the rows). */
    decodeMs: Stats;
    /** foldRun over the decoded pages. */
    foldMs: Stats;
    /** Of the fold: the team-run and agent-loop machines' transitions alone. */
    machinesMs: Stats;
    foldEventsPerSec: number;
  };
  checkpoint: {
    revision: number;
    tailEvents: number;
    /** JSON bytes of the stored checkpoint. */
    bytes: number;
    /** takeCheckpoint (serialise + hash) and the SQLite upsert. */
    saveMs: Stats;
    /** loadRunState with the checkpoint store: what a resuming driver pays. */
    resumeMs: Stats;
    /** Of the resume: SQLite select + JSON.parse of the body. */
    loadParseMs: Stats;
    /** canonical JSON + sha256 of the state (the content-hash check). */
    verifyHashMs: Stats;
    /** deserialise: machines resolved, maps rebuilt. */
    restoreMs: Stats;
    /** read and fold the events after the checkpoint. */
    tailMs: Stats;
    /** The resumed state equals the full replay. */
    equalsFullReplay: boolean;
  };
}

export interface ReplayTarget {
  name: string;
  target: string;
  measured: number;
  unit: string;
  met: boolean;
}

export interface ReplayBenchResult {
  benchmark: 'replay';
  startedAt: string;
  durationMs: number;
  /** Headline figures: the longest history measured. */
  turns: number;
  events: number;
  replayMs: number;
  eventsPerSec: number;
  checkpointResumeMs: number;
  checkpointBytes: number;
  /** Both histories at each length: unbounded first, then with the context window. */
  lengths: ReplayAtLength[];
  targets: ReplayTarget[];
  machine: MachineInfo & { sqliteVersion: string; loadAverage: number[] };
  inputs: { lengths: number[]; runs: number; runsAtLargest: number; eventsPerTurn: number; modelContentBytes: number; toolOutputBytes: number; tailTurns: number; batchSize: number; contextLimitTokens: number };
}

const TARGET_EVENTS_PER_SEC = 200_000;
const TARGET_RESUME_MS = 20;
const TAIL_TURNS = 10;
const BATCH = 1000;
/** The window history's context limit: a Claude model's. */
const CONTEXT_LIMIT_TOKENS = 200_000;

const FILLER =
  'The executor inspects the workspace, edits one file, runs the checks and notes what changed, ' +
  'which assumption held and which did not, before it moves on to the next step of the plan. ';
const text = (n: number) => FILLER.repeat(Math.ceil(n / FILLER.length)).slice(0, n);
const SAY = text(100);
const FILE_CONTENT = text(290);
const READ_OUTPUT = text(400);
const USAGE = { inputTokens: 1200, outputTokens: 110 };

export async function runReplayBench(opts: ReplayBenchOptions): Promise<ReplayBenchResult> {
  const started = Date.now();
  const lengths = opts.turns !== undefined ? [positiveInt(opts.turns)] : (opts.lengths ?? [1_000, 10_000, 100_000]);
  const machine = { ...machineInfo(), sqliteVersion: sqliteVersion(), loadAverage: loadavg().map((l) => Math.round(l * 100) / 100) };
  // Short replays take a few milliseconds, where one collection moves a sample by a quarter: more of them.
  const runsFor = (turns: number) => opts.runs ?? (turns >= 100_000 ? 3 : turns >= 10_000 ? 5 : 15);
  opts.log(
    `machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.totalMemoryGiB} GiB, node ${machine.nodeVersion}, SQLite ${machine.sqliteVersion}, ${cpuProbeText(machine)}, load ${machine.loadAverage.join(' ')}`,
  );
  opts.log(
    `inputs: histories of ${lengths.join(', ')} executor turns (4 events each), each twice: unbounded (no context limit) and with a ` +
      `${CONTEXT_LIMIT_TOKENS.toLocaleString('en')}-token context window (compactions as the driver makes them); checkpoint ${TAIL_TURNS} turns before the end, ` +
      `medians of ${lengths.map(runsFor).join('/')} runs (resumes with a context window: of 15 or more)`,
  );

  // Warm-up: JIT the reader, the fold, the serialiser and the hash before anything is timed.
  await measureLength(Math.min(500, lengths[0]), 2, join(opts.dataDir, 'warmup'), () => undefined);

  const results: ReplayAtLength[] = [];
  for (const turns of lengths) {
    results.push(await measureLength(turns, runsFor(turns), join(opts.dataDir, `replay-${turns}`), opts.log));
    results.push(await measureLength(turns, runsFor(turns), join(opts.dataDir, `replay-window-${turns}`), opts.log, CONTEXT_LIMIT_TOKENS));
  }

  const unbounded = results.filter((r) => r.history === 'unbounded');
  const windowed = results.filter((r) => r.history === 'window');
  const largest = unbounded[unbounded.length - 1];
  const slowest = results.reduce((a, b) => (b.replay.eventsPerSec < a.replay.eventsPerSec ? b : a));
  const worstResume = windowed.reduce((a, b) => (b.checkpoint.resumeMs.median > a.checkpoint.resumeMs.median ? b : a));
  const worstUnbounded = unbounded.reduce((a, b) => (b.checkpoint.resumeMs.median > a.checkpoint.resumeMs.median ? b : a));
  const targets: ReplayTarget[] = [
    {
      name: 'full replay (read + fold)',
      target: `≥ ${TARGET_EVENTS_PER_SEC.toLocaleString('en')} events/s`,
      measured: slowest.replay.eventsPerSec,
      unit: `events/s (slowest history: ${slowest.turns} turns, ${slowest.history})`,
      met: slowest.replay.eventsPerSec >= TARGET_EVENTS_PER_SEC,
    },
    {
      // Informative: the same replay with the store's read-ahead thread turned off.
      name: 'full replay (read + fold) on one thread',
      target: `≥ ${TARGET_EVENTS_PER_SEC.toLocaleString('en')} events/s`,
      measured: Math.min(...results.map((r) => r.replay.oneThreadEventsPerSec)),
      unit: 'events/s (slowest history)',
      met: results.every((r) => r.replay.oneThreadEventsPerSec >= TARGET_EVENTS_PER_SEC),
    },
    {
      name: 'fold alone',
      target: `≥ ${TARGET_EVENTS_PER_SEC.toLocaleString('en')} events/s`,
      measured: Math.min(...results.map((r) => r.replay.foldEventsPerSec)),
      unit: 'events/s (slowest length)',
      met: results.every((r) => r.replay.foldEventsPerSec >= TARGET_EVENTS_PER_SEC),
    },
    {
      name: `resume from a checkpoint ${TAIL_TURNS} turns before the end, context window of ${CONTEXT_LIMIT_TOKENS.toLocaleString('en')} tokens`,
      target: `≤ ${TARGET_RESUME_MS} ms at every length`,
      measured: worstResume.checkpoint.resumeMs.median,
      unit: `ms (worst length, ${worstResume.turns} turns)`,
      met: windowed.every((r) => r.checkpoint.resumeMs.median <= TARGET_RESUME_MS),
    },
    {
      // Informative: a conversation no model could be sent; the checkpoint holds all of it.
      name: `resume from a checkpoint ${TAIL_TURNS} turns before the end, unbounded conversation`,
      target: `≤ ${TARGET_RESUME_MS} ms at every length`,
      measured: worstUnbounded.checkpoint.resumeMs.median,
      unit: `ms (worst length, ${worstUnbounded.turns} turns)`,
      met: unbounded.every((r) => r.checkpoint.resumeMs.median <= TARGET_RESUME_MS),
    },
  ];
  for (const t of targets) opts.log(`target ${t.met ? 'MET' : 'MISSED'}: ${t.name} ${t.target}; measured ${t.measured} ${t.unit}`);

  return {
    benchmark: 'replay',
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    turns: largest.turns,
    events: largest.events,
    replayMs: largest.replay.ms.median,
    eventsPerSec: largest.replay.eventsPerSec,
    checkpointResumeMs: largest.checkpoint.resumeMs.median,
    checkpointBytes: largest.checkpoint.bytes,
    lengths: results,
    targets,
    machine,
    inputs: {
      lengths,
      runs: runsFor(lengths[0]),
      runsAtLargest: runsFor(largest.turns),
      eventsPerTurn: 4,
      modelContentBytes: SAY.length + FILE_CONTENT.length + 60,
      toolOutputBytes: READ_OUTPUT.length,
      tailTurns: TAIL_TURNS,
      batchSize: BATCH,
      contextLimitTokens: CONTEXT_LIMIT_TOKENS,
    },
  };
}

async function measureLength(turns: number, runs: number, dir: string, log: (line: string) => void, contextLimitTokens?: number): Promise<ReplayAtLength> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'triad.db');
  const store = new SqliteEventStore({ file });
  const checkpoints = new SqliteCheckpointStore(store.db);
  const runId = `run_replay_bench_${turns}`;
  const stream = toRunStreamId(runId);
  try {
    const buildStarted = performance.now();
    const { events, compactions } = await writeHistory(store, runId, turns, contextLimitTokens);
    const buildMs = performance.now() - buildStarted;

    // The checkpoint: the fold up to 10 turns before the end. Nothing measured below holds on to a
    // run state it does not need: a live copy of a long run's state slows every collection.
    const { saveMs, bytes, checkpointRevision } = await saveCheckpoint(store, checkpoints, stream, runId, events - TAIL_TURNS * 4, runs);

    const replayMs: number[] = [];
    const readRowsMs: number[] = [];
    const decodeMs: number[] = [];
    const foldMs: number[] = [];
    const machinesMs: number[] = [];
    const resumeMs: number[] = [];
    const loadParseMs: number[] = [];
    const verifyHashMs: number[] = [];
    const restoreMs: number[] = [];
    const tailMs: number[] = [];
    let resumed: RunState | undefined;
    const selectCheckpoint = store.db.prepare('SELECT body FROM checkpoints WHERE run_id = ?');
    // Resumes first, as a resuming process would meet them: before this process has replayed the
    // whole history (whose heap and garbage would slow everything measured after them). A resume
    // with a context window takes milliseconds, where a neighbour on the machine moves one sample
    // by half: 15 of them, whatever the length.
    const resumeRuns = contextLimitTokens !== undefined ? Math.max(runs, 15) : runs;
    for (let i = 0; i < resumeRuns; i++) {
      gc();
      // Resume from the checkpoint, as a driver does it.
      let t0 = performance.now();
      const state = await loadRunState(store, runId, checkpoints);
      resumeMs.push(performance.now() - t0);
      resumed = i === resumeRuns - 1 ? state : undefined;
      // The same, split.
      t0 = performance.now();
      const cp = JSON.parse((selectCheckpoint.get(runId) as { body: string }).body) as Checkpoint;
      loadParseMs.push(performance.now() - t0);
      t0 = performance.now();
      const hash = `sha256:${sha256Hex(JSON.stringify(cp.state))}`;
      verifyHashMs.push(performance.now() - t0);
      if (hash !== cp.contentHash) throw new Error('the benchmark checkpoint does not verify');
      t0 = performance.now();
      const restored = deserializeRunState(cp.state);
      restoreMs.push(performance.now() - t0);
      t0 = performance.now();
      foldRun(await store.readStream(stream, { fromRevision: restored.revision + 1 }), restored);
      tailMs.push(performance.now() - t0);
    }
    const resumedDigest = stateDigest(resumed!);
    resumed = undefined;
    // The read-ahead thread starts at a store's first long read; started here, so that every timed
    // replay meets it running, as every replay after a process's first does.
    if (!(await store.startReadAhead())) throw new Error('the read-ahead thread did not start');
    const aheadBefore = store.readAheadStats();
    const oneThread = new SqliteEventStore({ file, readAhead: false });
    const oneThreadMs: number[] = [];
    let last!: ReturnType<typeof factsOf>;
    for (let i = 0; i < runs; i++) {
      gc();
      // Full replay, as a driver without a checkpoint does it.
      let t0 = performance.now();
      let full: RunState | undefined = await loadRunState(store, runId);
      replayMs.push(performance.now() - t0);
      if (i === runs - 1) last = factsOf(full, contextLimitTokens);
      const revision = full.revision;
      full = undefined;
      gc();
      t0 = performance.now();
      let same: RunState | undefined = await loadRunState(oneThread, runId);
      oneThreadMs.push(performance.now() - t0);
      if (same.revision !== revision) throw new Error('the one-thread replay did not reach the same revision');
      same = undefined;
      gc();
      // The same, split (in a function, so that its rows and events are garbage afterwards).
      const split = splitReplay(store, stream, runId);
      readRowsMs.push(split.rowsMs);
      decodeMs.push(split.decodeMs);
      foldMs.push(split.foldMs);
      machinesMs.push(split.machinesMs);
    }
    await oneThread.close();
    const pagesReadAhead = store.readAheadStats().pages - aheadBefore.pages;
    const readAheadWaitMs = round((store.readAheadStats().waitMs - aheadBefore.waitMs) / runs);
    const equalsFullReplay = resumedDigest === last.digest;
    if (!equalsFullReplay) throw new Error(`resuming from the checkpoint did not give the full replay's state (${turns} turns)`);

    const result: ReplayAtLength = {
      turns,
      history: contextLimitTokens === undefined ? 'unbounded' : 'window',
      contextLimitTokens: contextLimitTokens ?? null,
      compactions,
      conversationMessages: last.conversationMessages,
      events,
      storeBytes: fileBytes(file),
      buildMs: round(buildMs),
      replay: {
        ms: stats(replayMs),
        eventsPerSec: Math.round(events / (median(replayMs) / 1000)),
        pagesReadAhead,
        readAheadWaitMs,
        pages: runs * Math.ceil(events / FOLD_PAGE_EVENTS),
        oneThreadMs: stats(oneThreadMs),
        oneThreadEventsPerSec: Math.round(events / (median(oneThreadMs) / 1000)),
        readRowsMs: stats(readRowsMs),
        decodeMs: stats(decodeMs),
        foldMs: stats(foldMs),
        machinesMs: stats(machinesMs),
        foldEventsPerSec: Math.round(events / (median(foldMs) / 1000)),
      },
      checkpoint: {
        revision: checkpointRevision,
        tailEvents: events - 1 - checkpointRevision,
        bytes,
        saveMs: stats(saveMs),
        resumeMs: stats(resumeMs),
        loadParseMs: stats(loadParseMs),
        verifyHashMs: stats(verifyHashMs),
        restoreMs: stats(restoreMs),
        tailMs: stats(tailMs),
        equalsFullReplay,
      },
    };
    const r = result.replay;
    const c = result.checkpoint;
    log(
      `${turns} turns, ${result.history === 'window' ? `context window (${compactions} compactions)` : 'unbounded'} (${events} events, ${mib(result.storeBytes)} MiB store, built in ${Math.round(buildMs)} ms): full replay ${r.ms.median} ms = ` +
        `${r.eventsPerSec.toLocaleString('en')} events/s (${r.pagesReadAhead} of ${r.pages} pages read ahead, ${r.readAheadWaitMs} ms waiting for them); on one thread ${r.oneThreadMs.median} ms = ` +
        `${r.oneThreadEventsPerSec.toLocaleString('en')} events/s (rows ${r.readRowsMs.median} + decode ${r.decodeMs.median} + fold ${r.foldMs.median} ms, ` +
        `of which machines ${r.machinesMs.median} ms; ` +
        `fold alone ${r.foldEventsPerSec.toLocaleString('en')} events/s)`,
    );
    log(
      `${turns} turns, ${result.history}: ${result.conversationMessages} messages, checkpoint ${mib(c.bytes)} MiB (save ${c.saveMs.median} ms); resume ${c.resumeMs.median} ms = load+parse ${c.loadParseMs.median} + ` +
        `hash ${c.verifyHashMs.median} + restore ${c.restoreMs.median} + tail(${c.tailEvents} events) ${c.tailMs.median} ms`,
    );
    return result;
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Folds the history up to `upTo` (exclusive) and saves its checkpoint `runs` times (timed). */
async function saveCheckpoint(store: SqliteEventStore, checkpoints: SqliteCheckpointStore, stream: string, runId: string, upTo: number, runs: number) {
  const atCheckpoint = foldRun(await store.readStream(stream, { maxCount: upTo }), initialRunState(runId));
  const saveMs: number[] = [];
  let checkpoint!: Checkpoint;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    checkpoint = takeCheckpoint(atCheckpoint, 'bench', new Date());
    await checkpoints.save(checkpoint);
    saveMs.push(performance.now() - t0);
  }
  return { saveMs, bytes: Buffer.byteLength(checkpointJson(checkpoint)) /* what the store wrote */, checkpointRevision: checkpoint.revision };
}

/** A state's checkpoint content, hashed: equal digests, equal states. */
function stateDigest(state: RunState): string {
  return sha256Hex(canonicalJson(takeCheckpoint(state, 'x', new Date(0)).state));
}

/** What the suite checks of a full replay (a run in progress; a window history within its budget) and reports. */
function factsOf(full: RunState, contextLimitTokens: number | undefined): { digest: string; conversationMessages: number } {
  if (contextLimitTokens !== undefined) {
    const budget = contextBudget(contextLimitTokens, estimateTextTokens(ROLE_PROMPTS.executor), DEFAULT_MARGIN_TOKENS);
    const tokens = estimateTokens(full.conversations.executor.messages);
    if (tokens > budget) throw new Error(`the window history's conversation (${tokens} tokens) does not fit its budget (${budget})`);
  }
  const action = nextAction(full, Date.parse(full.launched!.launchedAt) + 1000);
  if (action.kind !== 'callModel') throw new Error(`the generated history is not a run in progress (next action ${action.kind})`);
  return { digest: stateDigest(full), conversationMessages: full.conversations.executor.messages.length };
}

/**
 * One run's history through the domain types: launched, planned, then `turns` executor turns
 * alternating a file write (the content in the tool input) and a file read (the content in the
 * result), left in progress. Appended in batches of 1,000 events.
 */
async function writeHistory(store: SqliteEventStore, runId: string, turns: number, contextLimitTokens?: number): Promise<{ events: number; compactions: number }> {
  const stream = toRunStreamId(runId);
  const t0 = Date.parse('2026-01-01T00:00:00.000Z');
  const at = (i: number) => new Date(t0 + i * 10).toISOString();
  const launched = buildRunLaunched(
    {
      goal: 'Refactor the workspace one file at a time',
      acceptanceCriteria: ['file src/index.ts exists'],
      team: { executor: { maxTurns: turns + 100 } },
      budget: { totalTokens: 1e15 },
      timeoutMs: 365 * 24 * 3600 * 1000,
      ...(contextLimitTokens !== undefined ? { contextWindow: { limitTokens: contextLimitTokens } } : {}),
    },
    { runId, launchedBy: 'user:bench', now: new Date(t0), provider: 'scripted', defaultModel: 'scripted' },
  );
  const id = (kind: string, n: number) => `${kind}_${createHash('sha256').update(`${runId}:${kind}:${n}`).digest('hex').slice(0, 24)}`;
  const phase = (p: 'planning' | 'executing', role: 'architect' | 'executor', i: number): TeamRunEvent => ({
    type: 'PhaseStarted',
    data: { phase: p, role, iteration: 1, agent: agentIdentity(role, runId), system: ROLE_PROMPTS[role], tools: launched.team[role].tools, maxTurns: launched.team[role].maxTurns, at: at(i) },
  });
  const planUse = id('toolu', 0);
  const head: TeamRunEvent[] = [
    { type: 'RunLaunched', data: launched },
    phase('planning', 'architect', 1),
    { type: 'ModelCallStarted', data: { role: 'architect', turn: 1, callId: id('call', 0), model: 'scripted', toolResultIds: [], content: [{ type: 'text', text: 'Plan the work.' }], at: at(2) } },
    {
      type: 'ModelCallCompleted',
      data: {
        role: 'architect',
        turn: 1,
        callId: id('call', 0),
        model: 'scripted',
        content: [{ type: 'tool_use', id: planUse, name: 'submit_plan', input: { plan: 'One file per turn.', steps: ['edit'] } }],
        stopReason: 'tool_use',
        usage: USAGE,
        costUsd: 0.001,
        durationMs: 900,
      },
    },
    { type: 'ToolCallCompleted', data: { role: 'architect', turn: 1, toolUseId: planUse, name: 'submit_plan', output: 'Submitted.', isError: false, durationMs: 0 } },
    { type: 'PlanSubmitted', data: { toolUseId: planUse, plan: 'One file per turn.', steps: ['edit'], at: at(3) } },
    phase('executing', 'executor', 4),
  ];
  // With a context limit, the history is folded as it is written, and before each call the run's
  // own next-action rules decide whether the executor's conversation must be compacted first — the
  // ContextCompacted event a driver records (its summary written by the summarising model).
  const folded = initialRunState(runId);
  let revisionFolded = -1;
  let compactions = 0;
  let estimate = 0;
  const budget = contextLimitTokens === undefined ? undefined : contextBudget(contextLimitTokens, estimateTextTokens(ROLE_PROMPTS.executor), DEFAULT_MARGIN_TOKENS);
  const fold = (e: TeamRunEvent) => {
    if (budget === undefined) return;
    const conv = folded.conversations.executor;
    const before = conv.messages.length;
    evolve(folded, e, { revision: ++revisionFolded, position: 0 });
    if (e.type === 'ContextCompacted') estimate = estimateTokens(conv.messages);
    else for (let i = before; i < conv.messages.length; i++) estimate += estimateMessageTokens(conv.messages[i]);
  };
  const compactionBefore = (turn: number): TeamRunEvent | undefined => {
    // The upcoming user message is small: the rules are asked only when the conversation is close.
    if (budget === undefined || estimate < budget - 2_000) return undefined;
    const action = nextAction(folded, Date.parse(at(10 + turn)));
    if (action.kind !== 'compactContext') return undefined;
    compactions++;
    const summary = `${text(1200)} (${compactions})`;
    return {
      type: 'ContextCompacted',
      data: {
        role: 'executor',
        turn,
        fromIndex: action.plan.fromIndex,
        toIndex: action.plan.toIndex,
        summary,
        method: 'model',
        reason: action.reason,
        model: action.summaryModel,
        usage: { inputTokens: action.plan.tokensBefore, outputTokens: 300 },
        costUsd: 0.01,
        tokensBefore: action.plan.tokensBefore,
        tokensAfter: action.plan.tokensAfter,
        budgetTokens: action.budgetTokens,
        at: at(10 + turn),
      },
    };
  };
  const turnEvents = function* (): Generator<TeamRunEvent> {
    let previous: string | undefined;
    for (let turn = 1; turn <= turns; turn++) {
      const callId = id('call', turn);
      const useId = id('toolu', turn);
      const compaction = compactionBefore(turn);
      if (compaction) yield compaction;
      const path = `src/module-${turn % 97}.ts`;
      const write = turn % 2 === 0;
      const input = write ? { path, content: FILE_CONTENT } : { path };
      yield {
        type: 'ModelCallStarted',
        data: {
          role: 'executor',
          turn,
          callId,
          model: 'scripted',
          toolResultIds: previous ? [previous] : [],
          content: turn === 1 ? [{ type: 'text', text: 'Goal:\nRefactor the workspace one file at a time' }] : [],
          at: at(10 + turn),
        },
      };
      yield {
        type: 'ModelCallCompleted',
        data: {
          role: 'executor',
          turn,
          callId,
          model: 'scripted',
          content: [
            { type: 'text', text: SAY },
            { type: 'tool_use', id: useId, name: write ? 'write_file' : 'read_file', input },
          ],
          stopReason: 'tool_use',
          usage: USAGE,
          costUsd: 0.0053,
          durationMs: 1400,
        },
      };
      yield { type: 'ToolCallRequested', data: { role: 'executor', turn, toolUseId: useId, name: write ? 'write_file' : 'read_file', input, at: at(10 + turn) } };
      yield {
        type: 'ToolCallCompleted',
        data: { role: 'executor', turn, toolUseId: useId, name: write ? 'write_file' : 'read_file', output: write ? `wrote ${FILE_CONTENT.length} bytes to "${path}"` : READ_OUTPUT, isError: false, durationMs: 2 },
      };
      previous = useId;
    }
  };
  let revision = -1;
  let batch: NewEvent[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const result = await store.append(stream, batch, { expectedRevision: revision < 0 ? 'no_stream' : revision });
    revision = result.nextExpectedRevision;
    batch = [];
  };
  let n = 0;
  const push = async (e: TeamRunEvent) => {
    fold(e);
    const role = e.type === 'RunLaunched' ? undefined : (e.data as { role?: 'architect' | 'executor' }).role;
    batch.push({ id: id('evt', n++), type: e.type, data: e.data, metadata: { runId, correlationId: runId, causationId: null, actor: role ? agentIdentity(role, runId) : 'system' } });
    if (batch.length === BATCH) await flush();
  };
  for (const e of head) await push(e);
  for (const e of turnEvents()) await push(e);
  await flush();
  return { events: revision + 1, compactions };
}

/**
 * Full replay on one thread in parts, page by page as `loadRunState` reads without the read-ahead
 * thread: the rows, decoding them, the fold, and of the fold the two machines alone.
 */
function splitReplay(store: SqliteEventStore, stream: string, runId: string) {
  const select = store.db.prepare(`SELECT ${STREAM_ROW_COLUMNS} FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision ASC LIMIT ?`).raw(true);
  const state = initialRunState(runId);
  const machines: Machines = { team: state.team };
  let rowsMs = 0;
  let decodeMs = 0;
  let foldMs = 0;
  let machinesMs = 0;
  for (let from = 0; ; ) {
    let t0 = performance.now();
    const rows = select.all(stream, from, FOLD_PAGE_EVENTS) as RawStreamRow[];
    rowsMs += performance.now() - t0;
    t0 = performance.now();
    const page = rows.map((r) => decodeRawStreamRow(stream, r, undefined));
    decodeMs += performance.now() - t0;
    t0 = performance.now();
    foldRun(page, state);
    foldMs += performance.now() - t0;
    machinesMs += machinesOnly(page, machines);
    if (rows.length < FOLD_PAGE_EVENTS) break;
    from += rows.length;
  }
  return { rowsMs, decodeMs, foldMs, machinesMs };
}

// The transition functions the fold uses.
const teamStep = pureTransition(teamRunMachine);
const loopStep = pureTransition(agentLoopMachine);

interface Machines {
  team: RunState['team'];
  loop?: RunState['loop'];
}

/** The fold's two machine transitions alone, per event, as evolve makes them (carried across pages). */
function machinesOnly(events: RecordedEvent[], m: Machines): number {
  const t0 = performance.now();
  for (const e of events) {
    const event = { type: e.type, data: e.data } as RunCoreEvent;
    m.team = teamStep(m.team, event);
    if (e.type === 'PhaseStarted') m.loop = foldRun([e]).loop;
    else if (m.loop) m.loop = loopStep(m.loop, event);
  }
  return performance.now() - t0;
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function fileBytes(file: string): number {
  let total = 0;
  for (const f of [file, `${file}-wal`]) {
    try {
      total += statSync(f).size;
    } catch {
      // no WAL file
    }
  }
  return total;
}

function stats(samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  return { median: round(median(samples)), min: round(sorted[0]), max: round(sorted[sorted.length - 1]), samples: samples.map(round) };
}

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const round = (n: number) => Math.round(n * 100) / 100;
const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

function positiveInt(value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`--turns must be a whole number ≥ 1, got ${value}`);
  return value;
}
