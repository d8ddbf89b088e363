import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { EventStore } from '../src/events/event-store/event-store.port';
import { InMemoryEventStore } from '../src/events/event-store/in-memory.event-store';
import { SqliteEventStore } from '../src/events/event-store/sqlite.event-store';
import { ROLES } from '../src/team/domain/roles';
import { toRunStreamId, type ModelCallCompletedData } from '../src/team/domain/run-events';
import { runStatus } from '../src/team/domain/run-state';
import { buildRunLaunched } from '../src/team/commands/launch';
import type { AssistantBlock, ModelProvider, ModelRequest, ModelResponse } from '../src/team/models/model.port';
import { executionSegments, runSegments, type DispatchMode } from '../src/team/domain/resilience/tool-dispatch';
import { RunDriver } from '../src/team/driver/run-driver';
import { ToolRegistry } from '../src/team/tools/tool-registry';
import type { ToolDefinition } from '../src/team/tools/tool.port';
import { machineInfo, type MachineInfo, machineLine } from './machine';

/**
 * Tool dispatch (`npm run bench -- dispatch`): one turn of N read-only tool calls of `toolMs` each
 * (a timer, no I/O), dispatched in three passes (read-only calls concurrently) and serially.
 *
 * (a) the dispatch alone: preflight (schema validation), execute, results in the model's order;
 * (b) the whole tool step of a real RunDriver, from the append of the model's response to the
 *     append of the ToolCallCompleted batch (preflight, execute, one commit append and its fold),
 *     on the in-memory store and on SQLite (WAL; each append waits for its fdatasync).
 *
 * Target: the three-pass tool step within 1.3× the slowest tool (26 ms for 20 ms tools).
 */

export interface DispatchBenchOptions {
  /** Read-only tool calls in the turn; default 10. */
  tools?: number;
  /** Duration of each tool; default 20 ms. */
  toolMs?: number;
  /** Repetitions; the median is reported. Default 20. */
  runs?: number;
  dataDir: string;
  log: (line: string) => void;
}

export interface Stats {
  medianMs: number;
  p90Ms: number;
  minMs: number;
  maxMs: number;
  samplesMs: number[];
}

export interface DispatchBenchResult {
  benchmark: 'dispatch';
  tools: number;
  toolMs: number;
  runs: number;
  /** Dispatch alone (a). */
  dispatch: Record<DispatchMode, Stats>;
  /** The driver's tool step (b), per store. */
  driver: Record<'memory' | 'sqlite', Record<DispatchMode, Stats>>;
  /** Three-pass driver tool step on SQLite ÷ the slowest tool. */
  ratioToSlowestTool: number;
  /** Serial ÷ three-pass, driver tool step on SQLite. */
  speedup: number;
  target: { description: string; limit: number; met: boolean };
  machine: MachineInfo;
}

const TOOL_NAME = 'bench_wait';

function benchTool(toolMs: number): ToolDefinition {
  return {
    name: TOOL_NAME,
    description: 'Waits, reads nothing (benchmark).',
    inputSchema: { type: 'object', properties: { i: { type: 'integer', minimum: 0 } }, required: ['i'], additionalProperties: false },
    readOnly: true,
    idempotent: true,
    risk: 'low',
    execute: (input, context) =>
      new Promise((resolve) => {
        const t = setTimeout(() => resolve({ output: `waited ${toolMs} ms (#${String(input.i)})`, isError: false }), toolMs);
        context.signal.addEventListener('abort', () => (clearTimeout(t), resolve({ output: 'cancelled', isError: true })), { once: true });
      }),
  };
}

function stats(samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  const r = (n: number) => Math.round(n * 10) / 10;
  return { medianMs: r(median), p90Ms: r(at(0.9)), minMs: r(sorted[0]), maxMs: r(sorted[sorted.length - 1]), samplesMs: samples.map(r) };
}

/** (a) The dispatch alone: validate and run the calls, collect results in the model's order. */
async function dispatchOnce(registry: ToolRegistry, count: number, mode: DispatchMode): Promise<number> {
  const calls = Array.from({ length: count }, (_, i) => ({ type: 'tool_use' as const, id: `toolu_${i}`, name: TOOL_NAME, input: { i } }));
  const signal = new AbortController().signal;
  const started = performance.now();
  const planned = calls.map((call) => ({ call, tool: registry.get(call.name)!, ok: registry.validate(call.name, call.input) === undefined, output: '' }));
  await runSegments(
    executionSegments(planned, (p) => p.tool.readOnly, mode),
    async (p) => {
      p.output = (await registry.invoke(p.call, 'executor', [TOOL_NAME], { runId: 'bench', role: 'executor', workspace: '.', signal })).output;
    },
  );
  const results = planned.map((p) => p.output);
  if (results.length !== count) throw new Error('lost a result');
  return performance.now() - started;
}

/** A model whose executor calls every tool at once in its first turn, then submits. */
class FanOutModel implements ModelProvider {
  readonly name = 'scripted';
  constructor(private readonly count: number) {}

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const usage = { inputTokens: 10, outputTokens: 10 };
    const tool = (name: string, input: Record<string, unknown>, id = `toolu_${randomUUID()}`): AssistantBlock => ({ type: 'tool_use', id, name, input });
    const respond = (...content: AssistantBlock[]): ModelResponse => ({ model: 'scripted', content, stopReason: 'tool_use', usage });
    switch (request.role) {
      case 'architect':
        return respond(tool('submit_plan', { plan: 'Call every tool at once, then submit.' }));
      case 'reviewer':
        return respond(tool('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'Done.' }));
      case 'executor':
        return request.messages.length === 1
          ? respond(...Array.from({ length: this.count }, (_, i) => tool(TOOL_NAME, { i })))
          : respond(tool('submit_work', { summary: 'Called every tool.', files: [] }));
    }
  }
}

/** (b) One run; returns the wall time of the executor's tool step. */
async function driverOnce(store: EventStore, registry: ToolRegistry, count: number, mode: DispatchMode, workspaceRoot: string): Promise<number> {
  const runId = `run_dispatch_${randomUUID().slice(0, 8)}`;
  const data = buildRunLaunched(
    { goal: `Benchmark: ${count} read-only calls in one turn.`, acceptanceCriteria: ['every call returned'], reviewPolicy: { humanGate: false } },
    { runId, launchedBy: 'user:bench', now: new Date(), provider: 'scripted', defaultModel: 'scripted' },
  );
  for (const role of ROLES) data.team[role].tools = registry.resolveRoleTools(role);
  await store.append(toRunStreamId(runId), [{ type: 'RunLaunched', data, metadata: { runId, correlationId: runId, actor: 'user:bench' } }], {
    expectedRevision: 'no_stream',
  });
  mkdirSync(join(workspaceRoot, runId), { recursive: true });
  let responded: number | undefined;
  let committed: number | undefined;
  const driver = new RunDriver(runId, {
    store,
    model: new FanOutModel(count),
    tools: registry,
    clock: { now: () => Date.now() },
    ids: { newId: () => randomUUID() },
    workspaceRoot,
    toolDispatch: mode,
    observer: {
      onEvents: (_id, events) => {
        const now = performance.now();
        for (const e of events) {
          const d = e.data as ModelCallCompletedData;
          if (e.type === 'ModelCallCompleted' && d.role === 'executor' && d.turn === 1) responded = now;
          if (e.type === 'ToolCallCompleted' && responded !== undefined && committed === undefined) committed = now;
        }
      },
    },
  });
  const state = await driver.drive();
  if (runStatus(state) !== 'completed' || responded === undefined || committed === undefined) {
    throw new Error(`dispatch bench run ${runId} ended '${runStatus(state)}'`);
  }
  return committed - responded;
}

export async function runDispatchBench(options: DispatchBenchOptions): Promise<DispatchBenchResult> {
  const count = options.tools ?? 10;
  const toolMs = options.toolMs ?? 20;
  const runs = options.runs ?? 20;
  const log = options.log;
  const registry = new ToolRegistry([benchTool(toolMs)]);
  const machine = machineInfo();
  log(`dispatch benchmark: ${count} read-only tool calls of ${toolMs} ms in one turn, ${runs} runs each (median reported)`);
  log(machineLine(machine));

  const modes: DispatchMode[] = ['three-pass', 'serial'];
  const dispatch = {} as DispatchBenchResult['dispatch'];
  for (const mode of modes) {
    await dispatchOnce(registry, count, mode); // warm-up
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) samples.push(await dispatchOnce(registry, count, mode));
    dispatch[mode] = stats(samples);
    log(`  (a) dispatch alone, ${mode.padEnd(10)}: median ${dispatch[mode].medianMs} ms (p90 ${dispatch[mode].p90Ms}, min ${dispatch[mode].minMs}, max ${dispatch[mode].maxMs})`);
  }

  const driver = { memory: {}, sqlite: {} } as DispatchBenchResult['driver'];
  const workspaceRoot = join(options.dataDir, 'workspaces');
  for (const kind of ['memory', 'sqlite'] as const) {
    const dbDir = join(options.dataDir, `dispatch-${kind}`);
    const store: EventStore = kind === 'memory' ? new InMemoryEventStore() : new SqliteEventStore({ file: join(dbDir, 'triad.db') });
    try {
      for (const mode of modes) {
        await driverOnce(store, registry, count, mode, workspaceRoot); // warm-up
        const samples: number[] = [];
        for (let i = 0; i < runs; i++) samples.push(await driverOnce(store, registry, count, mode, workspaceRoot));
        driver[kind][mode] = stats(samples);
        const s = driver[kind][mode];
        log(`  (b) driver tool step, ${kind.padEnd(6)} ${mode.padEnd(10)}: median ${s.medianMs} ms (p90 ${s.p90Ms}, min ${s.minMs}, max ${s.maxMs})`);
      }
    } finally {
      await store.close();
      rmSync(dbDir, { recursive: true, force: true });
    }
  }

  const limit = Math.round(toolMs * 1.3 * 10) / 10;
  const measured = driver.sqlite['three-pass'].medianMs;
  const ratioToSlowestTool = Math.round((measured / toolMs) * 100) / 100;
  const speedup = Math.round((driver.sqlite.serial.medianMs / measured) * 10) / 10;
  const met = measured <= limit;
  log(`  target: three-pass tool step (driver, SQLite) within 1.3× the slowest tool (≤ ${limit} ms): ${measured} ms = ${ratioToSlowestTool}× — ${met ? 'met' : 'NOT met'}; serial is ${speedup}× slower`);
  return {
    benchmark: 'dispatch',
    tools: count,
    toolMs,
    runs,
    dispatch,
    driver,
    ratioToSlowestTool,
    speedup,
    target: { description: 'three-pass tool step of 10 read-only 20 ms tools within 1.3× the slowest tool', limit, met },
    machine,
  };
}
