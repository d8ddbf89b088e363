import type { AssistantBlock, ChatMessage, ContentBlock, ModelResponse, RoleName, ToolResultBlock, ToolUseBlock } from '../models/model.port';
import { costOf } from './pricing';
import { SUB_AGENT_ROLES, type ModelCallOrigin, type SubAgentEvent, type SubAgentRole, type SubAgentSpawnedData, type SubAgentToolCompletedData } from './run-events';

/**
 * Sub-agents: the pure core. An agent of a run (the executor, or a sub-agent itself) delegates a
 * part of its work with the `spawn_sub_agent` tool; the sub-agent runs its own agent loop whose
 * every step is an event of the parent run's stream (`SubAgent*`, tagged with the sub-agent's
 * path), so replay, checkpoints, resume, fork and crash recovery fold it like any other event.
 * Its final answer is the spawn call's tool result.
 *
 * Paths name the delegation chain: the executor's first sub-agent is `executor/1`, that one's
 * second `executor/1/2`. The identity is `agent:<role>:<runId>/<path>`.
 *
 * The events' data are in the run's catalogue (run-events.ts); here: the fold, the spawn decision
 * and the next step of a sub-agent, one pure core read together.
 */

export const SPAWN_SUB_AGENT_TOOL = 'spawn_sub_agent';

export type SubAgentStatus = 'pending' | 'awaiting_approval' | 'queued' | 'running' | 'completed' | 'failed' | 'cancelled' | 'timed_out';
export const SUB_AGENT_TERMINAL: ReadonlySet<SubAgentStatus> = new Set(['completed', 'failed', 'cancelled', 'timed_out']);

/** Limits and defaults (the seeds' values: what users of agent systems expect). */
export const SUB_AGENT_LIMITS = {
  maxDepth: 3,
  maxRunningPerProcess: 8,
  maxRunningPerParent: 5,
  defaults: { maxTurns: 20, maxTokens: 100_000, timeoutMs: 60 * 60_000, priority: 5 },
  ranges: {
    maxTurns: [1, 100],
    maxTokens: [1_000, 1_000_000],
    timeoutMs: [60_000, 240 * 60_000],
    priority: [1, 10],
  },
} as const;

// ---------------------------------------------------------------------------------------------
// State: one record per sub-agent, by path (plain JSON: it is checkpointed as is)

export interface SubAgentRecord {
  spawned: SubAgentSpawnedData;
  status: SubAgentStatus;
  startedAt?: string;
  endedAt?: string;
  turns: number;
  usage: { inputTokens: number; outputTokens: number; costUsd: number };
  /** The sub-agent's conversation exactly as it is sent to its model. */
  messages: ChatMessage[];
  /** Tool calls of its last response that were recorded as started (not safe to repeat). */
  startedTools: string[];
  /** Results of its last response's tool calls, by tool_use id, until the next turn takes them. */
  toolResults: Record<string, SubAgentToolCompletedData>;
  result?: string;
  error?: { reason: string; message: string };
}

export type SubAgents = Record<string, SubAgentRecord>;

export const subAgentIdentity = (role: SubAgentRole, runId: string, path: string): string => `agent:${role}:${runId}/${path}`;

/** Folds one sub-agent event (mutating `agents`, like the run's fold). */
export function evolveSubAgents(agents: SubAgents, event: SubAgentEvent): SubAgents {
  if (event.type === 'SubAgentSpawned') {
    agents[event.data.path] = {
      spawned: event.data,
      status: 'pending',
      turns: 0,
      usage: { inputTokens: 0, outputTokens: 0, costUsd: 0 },
      messages: [],
      startedTools: [],
      toolResults: {},
    };
    return agents;
  }
  const record = agents[event.data.path];
  if (!record) throw new Error(`${event.type} for an unknown sub-agent ${event.data.path}`);
  switch (event.type) {
    case 'SubAgentAwaitingApproval':
    case 'SubAgentQueued':
    case 'SubAgentStarted':
      Object.assign(record, subAgentLifecycle(event));
      break;
    case 'SubAgentModelCalled': {
      const d = event.data;
      const results: ToolResultBlock[] = pendingToolUses(record).map((use) => {
        const done = record.toolResults[use.id];
        if (!done) throw new Error(`sub-agent ${d.path} turn ${d.turn} has no result for tool call ${use.id}`);
        return done.isError
          ? { type: 'tool_result', tool_use_id: use.id, content: done.output, is_error: true }
          : { type: 'tool_result', tool_use_id: use.id, content: done.output };
      });
      record.messages.push({ role: 'user', content: [...results, ...d.content] });
      record.messages.push({ role: 'assistant', content: d.response });
      record.toolResults = {};
      record.startedTools = [];
      record.turns = d.turn;
      record.usage.inputTokens += d.usage.inputTokens + (d.usage.cacheReadTokens ?? 0) + (d.usage.cacheWriteTokens ?? 0);
      record.usage.outputTokens += d.usage.outputTokens;
      record.usage.costUsd = Math.round((record.usage.costUsd + d.costUsd) * 1e6) / 1e6;
      break;
    }
    case 'SubAgentToolStarted':
      if (!record.startedTools.includes(event.data.toolUseId)) record.startedTools.push(event.data.toolUseId);
      break;
    case 'SubAgentToolCompleted':
      record.toolResults[event.data.toolUseId] = event.data;
      break;
    case 'SubAgentCompleted':
    case 'SubAgentFailed':
    case 'SubAgentCancelled':
    case 'SubAgentTimedOut':
      Object.assign(record, subAgentLifecycle(event));
      break;
    default: {
      const never: never = event;
      throw new Error(`unhandled sub-agent event ${JSON.stringify(never)}`);
    }
  }
  return agents;
}

/** The events that move a sub-agent from one status to the next. */
export type SubAgentLifecycleEvent = Extract<
  SubAgentEvent,
  { type: 'SubAgentAwaitingApproval' | 'SubAgentQueued' | 'SubAgentStarted' | 'SubAgentCompleted' | 'SubAgentFailed' | 'SubAgentCancelled' | 'SubAgentTimedOut' }
>;

/** Where a lifecycle event leaves a sub-agent, as every fold of its events (run state, run summary) records it. */
export function subAgentLifecycle(event: SubAgentLifecycleEvent): Partial<Pick<SubAgentRecord, 'status' | 'startedAt' | 'result' | 'error' | 'endedAt'>> {
  switch (event.type) {
    case 'SubAgentAwaitingApproval':
      return { status: 'awaiting_approval' };
    case 'SubAgentQueued':
      return { status: 'queued' };
    case 'SubAgentStarted':
      return { status: 'running', startedAt: event.data.at };
    case 'SubAgentCompleted':
      return { status: 'completed', result: event.data.result, endedAt: event.data.at };
    case 'SubAgentFailed':
      return { status: 'failed', error: { reason: event.data.reason, message: event.data.message }, endedAt: event.data.at };
    case 'SubAgentCancelled':
      return { status: 'cancelled', error: { reason: 'CANCELLED', message: event.data.reason }, endedAt: event.data.at };
    case 'SubAgentTimedOut':
      return { status: 'timed_out', error: { reason: 'TIMEOUT', message: event.data.message }, endedAt: event.data.at };
  }
}

/** The run ended (or was cancelled) while sub-agents were unfinished: they will never finish. */
export function abandonSubAgents(agents: SubAgents, at: string): void {
  for (const record of Object.values(agents)) {
    if (SUB_AGENT_TERMINAL.has(record.status)) continue;
    record.status = 'cancelled';
    record.error = { reason: 'CANCELLED', message: 'the run ended first' };
    record.endedAt = at;
  }
}

/** Tokens the sub-agents' calls made the model process: they count against the run's budget. */
export function subAgentTokens(agents: SubAgents): number {
  let total = 0;
  for (const r of Object.values(agents)) total += r.usage.inputTokens + r.usage.outputTokens;
  return total;
}

/** Tool uses of the sub-agent's last response. */
export function pendingToolUses(record: SubAgentRecord): ToolUseBlock[] {
  const last = record.messages[record.messages.length - 1];
  if (!last || last.role !== 'assistant' || typeof last.content === 'string') return [];
  return (last.content as AssistantBlock[]).filter((b): b is ToolUseBlock => b.type === 'tool_use');
}

// ---------------------------------------------------------------------------------------------
// Deciding a spawn

export interface SpawnRequest {
  role: SubAgentRole;
  task: string;
  tools?: string[];
  maxTurns?: number;
  maxTokens?: number;
  timeoutMs?: number;
  priority?: number;
}

export interface SpawnContext {
  runId: string;
  /** The spawning agent: the phase agent (no path) or a sub-agent. */
  parent: { agent: string; path?: string; depth: number; tools: readonly string[]; phaseRole: RoleName };
  toolUseId: string;
  at: string;
}

export type SpawnDecision = { ok: true; event: { type: 'SubAgentSpawned'; data: SubAgentSpawnedData } } | { ok: false; error: string };

/**
 * Checks a `spawn_sub_agent` call and names the new sub-agent. Refusals are the call's error
 * result (the model can act on them); nothing is recorded for them.
 */
export function decideSpawn(agents: SubAgents, input: Record<string, unknown>, ctx: SpawnContext): SpawnDecision {
  const request = parseSpawnRequest(input);
  if (typeof request === 'string') return { ok: false, error: request };
  const depth = ctx.parent.depth + 1;
  if (depth > SUB_AGENT_LIMITS.maxDepth) {
    return { ok: false, error: `sub-agents nest at most ${SUB_AGENT_LIMITS.maxDepth} deep; this agent is at depth ${ctx.parent.depth}` };
  }
  // Never wider than the parent: the requested tools it has (none requested: all of them but the
  // parent's own submit tool). spawn_sub_agent itself stays only while depth allows another level.
  const parentTools = ctx.parent.tools.filter((t) => !t.startsWith('submit_'));
  const wanted = request.tools ?? parentTools;
  const refused = wanted.filter((t) => !parentTools.includes(t));
  if (refused.length > 0) return { ok: false, error: `the sub-agent may not have tools its parent does not have: ${refused.join(', ')}` };
  const tools = wanted.filter((t, i) => wanted.indexOf(t) === i && (t !== SPAWN_SUB_AGENT_TOOL || depth < SUB_AGENT_LIMITS.maxDepth));
  const base = ctx.parent.path ?? ctx.parent.phaseRole;
  const siblings = Object.values(agents).filter((r) => (r.spawned.parentPath ?? r.spawned.path.split('/')[0]) === base);
  const path = `${base}/${siblings.length + 1}`;
  const d = SUB_AGENT_LIMITS.defaults;
  return {
    ok: true,
    event: {
      type: 'SubAgentSpawned',
      data: {
        path,
        ...(ctx.parent.path ? { parentPath: ctx.parent.path } : {}),
        agent: subAgentIdentity(request.role, ctx.runId, path),
        parent: ctx.parent.agent,
        depth,
        toolUseId: ctx.toolUseId,
        role: request.role,
        task: request.task,
        tools,
        limits: { maxTurns: request.maxTurns ?? d.maxTurns, maxTokens: request.maxTokens ?? d.maxTokens, timeoutMs: request.timeoutMs ?? d.timeoutMs },
        priority: request.priority ?? d.priority,
        at: ctx.at,
      },
    },
  };
}

function parseSpawnRequest(input: Record<string, unknown>): SpawnRequest | string {
  const { role, task, tools, maxTurns, maxTokens, timeoutMs, priority } = input;
  if (typeof role !== 'string' || !(SUB_AGENT_ROLES as readonly string[]).includes(role)) {
    return `role must be one of ${SUB_AGENT_ROLES.join(', ')}`;
  }
  if (typeof task !== 'string' || task.trim() === '') return 'task must be a non-empty string';
  if (tools !== undefined && (!Array.isArray(tools) || tools.some((t) => typeof t !== 'string'))) return 'tools must be a list of tool names';
  const request: SpawnRequest = { role: role as SubAgentRole, task, ...(tools ? { tools: tools as string[] } : {}) };
  const numbers = { maxTurns, maxTokens, timeoutMs, priority };
  for (const [key, value] of Object.entries(numbers) as [keyof typeof SUB_AGENT_LIMITS.ranges, unknown][]) {
    if (value === undefined) continue;
    const [min, max] = SUB_AGENT_LIMITS.ranges[key];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) return `${key} must be an integer from ${min} to ${max}`;
    request[key] = value;
  }
  return request;
}

// ---------------------------------------------------------------------------------------------
// What a sub-agent's work records (the shell runs its model calls and tools; runDecider decides these)

/** A sub-agent given its slot starts; one waiting for a slot is queued at its priority. */
export function subAgentStarted(path: string, queue: { priority: number } | undefined, at: string): SubAgentEvent {
  return queue ? { type: 'SubAgentQueued', data: { path, priority: queue.priority, at } } : { type: 'SubAgentStarted', data: { path, at } };
}

/** One model turn of a sub-agent: the step's new content and the answer, with its cost. */
export function subAgentModelCalled(
  path: string,
  turn: { turn: number; content: ContentBlock[]; callId: string },
  response: ModelResponse,
  durationMs: number,
  origin: ModelCallOrigin,
  at: string,
): SubAgentEvent {
  return {
    type: 'SubAgentModelCalled',
    data: {
      path,
      turn: turn.turn,
      callId: turn.callId,
      model: response.model,
      ...origin,
      content: turn.content,
      response: response.content,
      stopReason: response.stopReason,
      usage: response.usage,
      costUsd: costOf(response.model, response.usage),
      durationMs,
      at,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// What a running sub-agent does next

export type SubAgentStep =
  | { kind: 'callModel'; turn: number; content: ContentBlock[] }
  | { kind: 'runTools'; turn: number; calls: Array<{ call: ToolUseBlock; alreadyStarted: boolean }> }
  | { kind: 'end'; event: SubAgentEvent }
  | { kind: 'done' };

export function subAgentTaskMessage(record: SubAgentRecord): string {
  const s = record.spawned;
  return `Sub-agent task (${s.role}, ${s.agent}):\n${s.task}\n\nWork with your tools, then answer with your result as plain text: that answer is returned to the agent that delegated this task.`;
}

/**
 * Pure: the next step of a running sub-agent, from its record, the clock and the run's tokens left.
 * The same events give the same step, so a sub-agent resumes exactly where a crash stopped it.
 */
export function nextSubAgentStep(record: SubAgentRecord, nowMs: number, runTokensLeft: number, at: string): SubAgentStep {
  if (SUB_AGENT_TERMINAL.has(record.status)) return { kind: 'done' };
  const path = record.spawned.path;
  const limits = record.spawned.limits;
  if (record.startedAt && nowMs >= Date.parse(record.startedAt) + limits.timeoutMs) {
    return { kind: 'end', event: { type: 'SubAgentTimedOut', data: { path, message: `the sub-agent exceeded its timeout of ${limits.timeoutMs} ms`, at } } };
  }
  const uses = pendingToolUses(record);
  const unanswered = uses.filter((u) => !record.toolResults[u.id]);
  if (unanswered.length > 0) {
    return { kind: 'runTools', turn: record.turns, calls: unanswered.map((call) => ({ call, alreadyStarted: record.startedTools.includes(call.id) })) };
  }
  if (record.turns > 0 && uses.length === 0) {
    const last = record.messages[record.messages.length - 1];
    const text = typeof last.content === 'string' ? last.content : (last.content as AssistantBlock[]).filter((b) => b.type === 'text').map((b) => (b as { text: string }).text).join('\n');
    return { kind: 'end', event: { type: 'SubAgentCompleted', data: { path, result: text.trim() === '' ? '(the sub-agent gave no answer)' : text, at } } };
  }
  const used = record.usage.inputTokens + record.usage.outputTokens;
  if (used >= limits.maxTokens) {
    return { kind: 'end', event: { type: 'SubAgentFailed', data: { path, reason: 'BUDGET_EXHAUSTED', message: `the sub-agent used ${used} of its ${limits.maxTokens} tokens`, at } } };
  }
  if (runTokensLeft <= 0) {
    return { kind: 'end', event: { type: 'SubAgentFailed', data: { path, reason: 'BUDGET_EXHAUSTED', message: `the run's token budget is exhausted`, at } } };
  }
  if (record.turns >= limits.maxTurns) {
    return { kind: 'end', event: { type: 'SubAgentFailed', data: { path, reason: 'MAX_TURNS', message: `the sub-agent reached its limit of ${limits.maxTurns} turns`, at } } };
  }
  const content: ContentBlock[] = record.turns === 0 ? [{ type: 'text', text: subAgentTaskMessage(record) }] : [];
  return { kind: 'callModel', turn: record.turns + 1, content };
}

/** What the spawn call returns to its parent, once the sub-agent has ended. */
export function spawnOutcome(record: SubAgentRecord): { output: string; isError: boolean } {
  const s = record.spawned;
  if (record.status === 'completed') return { isError: false, output: `Sub-agent ${s.agent} completed in ${record.turns} turn(s):\n${record.result ?? ''}` };
  return { isError: true, output: `Sub-agent ${s.agent} ${record.status.replace('_', ' ')}: ${record.error?.message ?? 'no result'}` };
}
