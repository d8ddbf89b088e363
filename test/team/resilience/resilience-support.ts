import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { RecordedEvent } from '../../../src/events/event-store/event-store.port';
import { InMemoryEventStore } from '../../../src/events/event-store/in-memory.event-store';
import { replayRun } from '../../../src/session-replay/replay';
import { ROLES } from '../../../src/team/domain/roles';
import { toRunStreamId, type TeamRunEvent } from '../../../src/team/domain/run-events';
import { runStatus, type RunState } from '../../../src/team/domain/run-state';
import { buildRunLaunched, type LaunchRunInput } from '../../../src/team/commands/launch';
import { ModelError, type AssistantBlock, type ChatMessage, type ModelProvider, type ModelRequest, type ModelResponse, type RoleName } from '../../../src/team/models/model.port';
import type { ScriptFunction, ScriptStep } from '../../../src/team/models/scripted.model';
import type { LaunchPolicyDefaults, RetryPolicy } from '../../../src/team/domain/resilience/policies';
import type { DispatchMode } from '../../../src/team/domain/resilience/tool-dispatch';
import type { Clock } from '../../../src/shared/ports';
import { RunDriver } from '../../../src/team/driver/run-driver';
import type { RunObserver } from '../../../src/team/driver/step-context';
import { loadRunHistory } from '../../../src/team/runs/run-history';
import { createBuiltinTools } from '../../../src/team/tools/builtin-tools';
import { ToolRegistry } from '../../../src/team/tools/tool-registry';
import type { ToolDefinition } from '../../../src/team/tools/tool.port';
import { createWorkspace } from '../../../src/team/tools/workspace';
import { tempDir } from '../../support/temp-dir';

/** Retries that never wait long. */
export const QUICK_RETRY: RetryPolicy = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 };

export interface HarnessOptions {
  model: ModelProvider;
  launch?: Partial<LaunchRunInput>;
  /** Policies recorded when the launch leaves them out (default: none, as `launchRun` callers get). */
  defaults?: LaunchPolicyDefaults;
  retry?: RetryPolicy;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  observer?: RunObserver;
  clock?: Clock;
  /** Tools besides the built-in ones (given to every role that may have them). */
  extraTools?: ToolDefinition[];
  toolDispatch?: DispatchMode;
  runId?: string;
  /** The store's limit on one event (default: the store's own). */
  maxEventBytes?: number;
}

export interface Harness {
  runId: string;
  store: InMemoryEventStore;
  driver: RunDriver;
  workspace: string;
  tools: ToolRegistry;
  /** Another driver on the same run (what a resumed process would start). */
  newDriver(): RunDriver;
  events(): Promise<RecordedEvent[]>;
  types(): Promise<string[]>;
  /** Appends events as someone else would (a decision, a cancel), at the stream's head. */
  appendAsOther(events: TeamRunEvent[], actor?: string): Promise<void>;
  remove(): void;
}

let counter = 0;

/** A launched run on an in-memory store with a temp workspace, the built-in tools and any extra ones. */
export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const dir = tempDir('triad-resilience-');
  const store = new InMemoryEventStore({ maxEventBytes: options.maxEventBytes });
  const runId = options.runId ?? `run_res_${process.pid}_${++counter}`;
  const clock = options.clock ?? { now: () => Date.now() };
  const workspace = await createWorkspace(dir.path, runId);
  const tools = new ToolRegistry([...createBuiltinTools(), ...(options.extraTools ?? [])]);
  const data = buildRunLaunched(
    { goal: 'Write hello.txt', acceptanceCriteria: ['file hello.txt contains "Hello"'], ...options.launch },
    { runId, launchedBy: 'user:ann', now: new Date(clock.now()), provider: options.model.name, defaultModel: 'scripted', defaults: options.defaults },
  );
  // Launch validation knows the built-in tools only; the harness registry has the extra ones too.
  for (const role of ROLES) {
    const given = options.launch?.team?.[role]?.tools;
    data.team[role].tools = tools.resolveRoleTools(role, given);
  }
  await store.append(toRunStreamId(runId), [{ type: 'RunLaunched', data, metadata: { runId, correlationId: runId, actor: 'user:ann' } }], {
    expectedRevision: 'no_stream',
  });
  const newDriver = () =>
    new RunDriver(runId, {
      store,
      model: options.model,
      tools,
      clock,
      ids: { newId: () => randomUUID() },
      workspaceRoot: dir.path,
      retry: options.retry ?? QUICK_RETRY,
      sleep: options.sleep ?? (async () => undefined),
      observer: options.observer,
      toolDispatch: options.toolDispatch,
    });
  const events = () => store.readStream(toRunStreamId(runId));
  return {
    runId,
    store,
    driver: newDriver(),
    workspace,
    tools,
    newDriver,
    events,
    types: async () => (await events()).map((e) => e.type),
    appendAsOther: async (list, actor = 'user:bob') => {
      const stream = toRunStreamId(runId);
      const head = await store.streamRevision(stream);
      await store.append(
        stream,
        list.map((e) => ({ type: e.type, data: e.data, metadata: { runId, correlationId: runId, actor } })),
        { expectedRevision: head ?? 'no_stream' },
      );
    },
    remove: () => dir.remove(),
  };
}

/**
 * Replay (src/session-replay/replay.ts over the stored history) must rebuild what the driver held
 * live: every role's conversation, usage, status, the machines and the resilience state.
 */
export async function expectReplayMatchesLive(h: Harness, live: RunState): Promise<RunState> {
  const history = await loadRunHistory(h.store, h.runId);
  const { state, completeness } = replayRun(history, h.runId);
  expect(completeness).toMatchObject({ score: 1, missing: [] });
  expect(state.revision).toBe(live.revision);
  expect(state.conversations).toEqual(live.conversations);
  expect(state.usage).toEqual(live.usage);
  expect(runStatus(state)).toBe(runStatus(live));
  expect(state.team.value).toEqual(live.team.value);
  expect(state.team.context).toEqual(live.team.context);
  expect(state.loop?.value).toEqual(live.loop?.value);
  expect(state.resilience).toEqual(live.resilience);
  expect([...state.approvals.entries()]).toEqual([...live.approvals.entries()]);
  return state;
}

// ---------------------------------------------------------------------------------------------
// Scripts

/**
 * A script per role, answered in order; summary requests (context compaction) go to `summary`.
 * A role that runs out of steps gets a permanent error, so a wrong script ends the run at once.
 */
export function roleScript(
  steps: Partial<Record<RoleName, ScriptStep[] | ((request: ModelRequest, n: number) => ScriptStep)>> & {
    summary?: ScriptStep[] | ((request: ModelRequest, n: number) => ScriptStep);
  },
): ScriptFunction {
  const served: Record<string, number> = {};
  return (request) => {
    const key = request.purpose === 'summary' ? 'summary' : request.role;
    const n = (served[key] = (served[key] ?? 0) + 1) - 1;
    const script = steps[key as RoleName | 'summary'];
    if (typeof script === 'function') return script(request, n);
    return script?.[n] ?? new ModelError('invalid_request', `script: no step ${n + 1} for ${key}`);
  };
}

let ids = 0;
export const toolUse = (name: string, input: Record<string, unknown>, id = `toolu_t${++ids}`): AssistantBlock => ({ type: 'tool_use', id, name, input });

/** One response with these blocks (several tool uses make one turn). */
export function respond(...blocks: AssistantBlock[]): ModelResponse {
  return {
    model: 'scripted',
    content: blocks,
    stopReason: blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
    usage: { inputTokens: 10, outputTokens: 5 },
  };
}

export const call = (name: string, input: Record<string, unknown>, id?: string) => respond(toolUse(name, input, id));
export const plan = () => call('submit_plan', { plan: '1. write hello.txt' });
export const submitWork = (summary = 'wrote hello.txt') => call('submit_work', { summary, files: ['hello.txt'] });
export const verdict = (v: 'APPROVE' | 'REQUEST_CHANGES' | 'BLOCK', findings: string[] = []) =>
  call('submit_verdict', { verdict: v, findings, summary: `verdict ${v}` });
export const summaryText = (text: string): ModelResponse => ({ ...respond({ type: 'text', text }), model: 'scripted-summary' });

export function dataOf<T = Record<string, unknown>>(events: RecordedEvent[], type: string): T[] {
  return events.filter((e) => e.type === type).map((e) => e.data as T);
}

export const lastUserMessage = (request: { messages: ChatMessage[] }): ChatMessage => request.messages[request.messages.length - 1];

/** Every tool_result in a request answers a tool_use of the assistant message right before it. */
export function expectToolPairsIntact(messages: ChatMessage[]): void {
  messages.forEach((m, i) => {
    if (typeof m.content === 'string') return;
    for (const b of m.content) {
      if (b.type !== 'tool_result') continue;
      const prev = messages[i - 1];
      const ids = prev && typeof prev.content !== 'string' ? prev.content.filter((x) => x.type === 'tool_use').map((x) => (x as { id: string }).id) : [];
      expect(ids).toContain(b.tool_use_id);
    }
  });
  for (let i = 1; i < messages.length; i++) expect(messages[i].role).not.toBe(messages[i - 1].role);
  if (messages.length > 0) expect(messages[0].role).toBe('user');
}

// ---------------------------------------------------------------------------------------------
// Probe tools: observable timing, for dispatch tests

export interface ProbeEntry {
  id: string;
  at: 'start' | 'end';
  t: number;
}

export function probeTools(log: ProbeEntry[]): ToolDefinition[] {
  // Told of every entry logged, so that a probe can wait for others (starts, an end) instead of a time.
  const logged = new EventEmitter();
  const record = (entry: ProbeEntry) => {
    log.push(entry);
    logged.emit('entry');
  };
  const until = (ready: () => boolean, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!ready() && !signal.aborted) return;
        logged.off('entry', check);
        resolve();
      };
      logged.on('entry', check);
      signal.addEventListener('abort', check, { once: true });
      check();
    });
  const make = (name: string, readOnly: boolean): ToolDefinition => ({
    name,
    description: `${readOnly ? 'Reads' : 'Writes'} nothing; waits until afterStarts probes have started and probe "after" has ended, then ms milliseconds (for tests).`,
    inputSchema: {
      type: 'object',
      properties: {
        id: { type: 'string' },
        ms: { type: 'integer', minimum: 0 },
        afterStarts: { type: 'integer', minimum: 0 },
        after: { type: 'string' },
      },
      required: ['id'],
      additionalProperties: false,
    },
    readOnly,
    idempotent: true,
    risk: 'low',
    async execute(input, context) {
      const id = String(input.id);
      record({ id, at: 'start', t: performance.now() });
      const starts = Number(input.afterStarts ?? 0);
      const after = input.after === undefined ? undefined : String(input.after);
      await until(() => log.filter((e) => e.at === 'start').length >= starts && (after === undefined || log.some((e) => e.id === after && e.at === 'end')), context.signal);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Number(input.ms ?? 0));
        context.signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
      });
      record({ id, at: 'end', t: performance.now() });
      return { output: `probe ${id} done`, isError: false };
    },
  });
  return [make('probe_read', true), make('probe_write', false)];
}
