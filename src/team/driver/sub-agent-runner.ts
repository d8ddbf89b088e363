import { pause } from '../../events/store-retry';
import { ModelError, type ChatMessage, type ContentBlock, type ModelResponse, type RoleName, type ToolUseBlock } from '../models/model.port';
import type { ToolOutcome } from '../tools/tool.port';
import { redactAnswer } from '../tools/tool-registry';
import { totalTokens } from '../domain/run-state';
import type { FileEffect, SubAgentEvent, TeamRunEvent } from '../domain/run-events';
import { callOrigin, pinOf } from '../domain/model-pin';
import { roleRoute } from '../models/model-roster';
import { runDecider } from '../domain/run-decider';
import { decideSpawn, nextSubAgentStep, pendingToolUses, SPAWN_SUB_AGENT_TOOL, spawnOutcome, SUB_AGENT_TERMINAL, type SubAgentRecord } from '../domain/sub-agents';
import { SubAgentPool, type ReleaseSlot } from './sub-agent-pool';
import { deadlineOf, isoNow, runSandboxContext, type StepContext } from './step-context';
import { encodeMachineText } from '../../shared/text';
import { hasNoOwnEffects } from '../workspace/workspace-effects';
import { withRecordedEffects } from '../workspace/workspace-log';
import { answerTooLarge, unusableAnswer } from './model-turn';

/**
 * Runs a `spawn_sub_agent` call to its end, in the parent run's stream: spawn (or find the
 * sub-agent this call spawned before a crash), take a slot of the process's pool (queued by
 * priority when none is free), then the sub-agent's turns — each decided by `nextSubAgentStep`
 * from the fold and recorded before the next — until it answers, fails or times out. A sub-agent
 * that has ended is never run again: its recorded result is the call's result.
 */

/** The agent that calls spawn_sub_agent: the phase agent, or a sub-agent. */
export interface Spawner {
  agent: string;
  path?: string;
  depth: number;
  tools: readonly string[];
  phaseRole: RoleName;
}

/** Used when the driver is given no pool: one per driver (the supervisor shares one per process). */
const poolOfDriver = new WeakMap<object, SubAgentPool>();

function poolOf(ctx: StepContext): SubAgentPool {
  if (ctx.deps.subAgentPool) return ctx.deps.subAgentPool;
  let pool = poolOfDriver.get(ctx.deps);
  if (!pool) poolOfDriver.set(ctx.deps, (pool = new SubAgentPool()));
  return pool;
}

const MODEL_ATTEMPTS = 3;

export const SUB_AGENT_SYSTEM_PROMPT = (role: string) =>
  `You are a ${role} sub-agent of a team of AI agents. Another agent delegated one task to you. Do exactly that task with the tools you have, ` +
  'then answer with your result as plain text (no tool call): that answer goes back to the agent that delegated the task.';

/** The spawn call's sub-agent, when one was spawned for it already. */
export function subAgentOfCall(ctx: StepContext, toolUseId: string, parentPath?: string): SubAgentRecord | undefined {
  return Object.values(ctx.state.subAgents).find((r) => r.spawned.toolUseId === toolUseId && r.spawned.parentPath === parentPath);
}

export async function runSpawnCall(ctx: StepContext, spawner: Spawner, call: ToolUseBlock, signal: AbortSignal): Promise<ToolOutcome> {
  const { deps } = ctx;
  const record = subAgentOfCall(ctx, call.id, spawner.path);
  const pending: TeamRunEvent[] = [];
  if (!record) {
    const decision = decideSpawn(ctx.state.subAgents, call.input, { runId: ctx.runId, parent: spawner, toolUseId: call.id, at: isoNow(deps.clock) });
    if (!decision.ok) return { isError: true, output: `spawn_sub_agent refused: ${decision.error}` };
    pending.push(decision.event);
  } else if (SUB_AGENT_TERMINAL.has(record.status)) {
    return spawnOutcome(record);
  }
  const spawned = record?.spawned ?? (pending[0] as Extract<SubAgentEvent, { type: 'SubAgentSpawned' }>).data;
  const path = spawned.path;
  const pool = poolOf(ctx);
  const slot = { id: `${ctx.runId}/${path}`, parent: spawned.parent, priority: spawned.priority };
  const status = record?.status ?? 'pending';
  // The slot it holds (given up while a child of its own runs); freed however this ends.
  const held: { release: ReleaseSlot | undefined } = { release: undefined };
  let request: ReturnType<SubAgentPool['request']> | undefined;
  try {
    request = pool.request(slot, signal);
    if (status !== 'running' && status !== 'queued') {
      pending.push(...runDecider.decide({ type: 'StartSubAgent', path, ...(request.immediate ? {} : { queue: { priority: spawned.priority } }), at: isoNow(deps.clock) }, ctx.state));
    }
    await ctx.append(pending.splice(0));
    // Rejects only when the run stops while it waits for a slot: no slot is held, nothing to release.
    held.release = await request.ready.catch(() => undefined);
    if (!held.release) return stoppedOutcome();
    if (ctx.state.subAgents[path].status === 'queued') await ctx.append(runDecider.decide({ type: 'StartSubAgent', path, at: isoNow(deps.clock) }, ctx.state));
    await driveSubAgent(ctx, path, spawner.phaseRole, signal, held, pool);
  } finally {
    if (held.release) held.release();
    // An append failed before the slot was taken: free it once granted (releasing twice is harmless);
    // rejected, the slot was never granted (the run stopped), so there is nothing to free.
    else if (request) void request.ready.then((release) => release()).catch(() => undefined);
  }
  const after = ctx.state.subAgents[path];
  return after && SUB_AGENT_TERMINAL.has(after.status) ? spawnOutcome(after) : stoppedOutcome();
}

function stoppedOutcome(): ToolOutcome {
  return { isError: true, output: 'spawn_sub_agent was stopped before the sub-agent finished' };
}

/** The sub-agent's turns until it ends or the run stops. `held.release` is its slot (given up while a child runs). */
async function driveSubAgent(ctx: StepContext, path: string, phaseRole: RoleName, signal: AbortSignal, held: { release: ReleaseSlot | undefined }, pool: SubAgentPool): Promise<void> {
  const { deps } = ctx;
  while (!signal.aborted) {
    const record = ctx.state.subAgents[path];
    const launched = ctx.state.launched!;
    const left = launched.budget.totalTokens - totalTokens(ctx.state);
    const step = nextSubAgentStep(record, deps.clock.now(), left, isoNow(deps.clock));
    switch (step.kind) {
      case 'done':
        return;
      case 'end':
        await ctx.append([step.event]);
        continue;
      case 'callModel': {
        if ((await callSubAgentModel(ctx, record, phaseRole, step, signal)) === 'stopped') return;
        continue;
      }
      case 'runTools':
        for (const { call, alreadyStarted } of step.calls) {
          if (signal.aborted) return;
          const current = ctx.state.subAgents[path];
          if (call.name === SPAWN_SUB_AGENT_TOOL && current.spawned.tools.includes(SPAWN_SUB_AGENT_TOOL)) {
            if (!alreadyStarted) await ctx.append(runDecider.decide({ type: 'StartSubAgentTool', path, turn: step.turn, call, at: isoNow(deps.clock) }, ctx.state));
            // Waiting for its own sub-agent, it gives its slot up; it takes one again after.
            held.release?.();
            held.release = undefined;
            const spawner: Spawner = { agent: current.spawned.agent, path, depth: current.spawned.depth, tools: current.spawned.tools, phaseRole };
            const started = deps.clock.now();
            const outcome = await runSpawnCall(ctx, spawner, call, signal);
            if (signal.aborted) return;
            const again = pool.request({ id: `${ctx.runId}/${path}`, parent: current.spawned.parent, priority: current.spawned.priority }, signal);
            // Rejects only when the run stops while it waits for a slot: no slot is held, nothing to release.
            held.release = await again.ready.catch(() => undefined);
            if (!held.release) return;
            await ctx.append(toolCompleted(ctx, path, step.turn, call, outcome, deps.clock.now() - started));
            continue;
          }
          const outcome = await runSubAgentTool(ctx, current, phaseRole, step.turn, call, alreadyStarted, signal);
          if (!outcome) return;
          await ctx.append(outcome);
        }
        continue;
      default: {
        const never: never = step;
        throw new Error(`no sub-agent step ${(never as { kind: string }).kind}`);
      }
    }
  }
}

function toolCompleted(ctx: StepContext, path: string, turn: number, call: ToolUseBlock, outcome: ToolOutcome, durationMs: number, outcomeUnknown?: boolean, files?: FileEffect[]): TeamRunEvent[] {
  return runDecider.decide({ type: 'CompleteSubAgentTool', path, turn, call, outcome, durationMs, ...(outcomeUnknown ? { outcomeUnknown } : {}), ...(files ? { files } : {}) }, ctx.state);
}

/** One tool call of a sub-agent, confined to its tools; undefined when the run stopped meanwhile. */
async function runSubAgentTool(
  ctx: StepContext,
  record: SubAgentRecord,
  phaseRole: RoleName,
  turn: number,
  call: ToolUseBlock,
  alreadyStarted: boolean,
  signal: AbortSignal,
): Promise<TeamRunEvent[] | undefined> {
  const { deps } = ctx;
  const path = record.spawned.path;
  const allowed = record.spawned.tools;
  const tool = deps.tools.get(call.name);
  if (alreadyStarted && !tool?.idempotent) {
    return toolCompleted(ctx, path, turn, call, { isError: true, output: 'the outcome of this call is unknown: the process stopped while it ran' }, 0, true);
  }
  // No approval is asked here: a spawn whose sub-agent gets a high-risk tool was approved as a
  // whole, under the run's policy, before the sub-agent started.
  if (tool && !tool.idempotent && allowed.includes(call.name)) {
    await ctx.append(runDecider.decide({ type: 'StartSubAgentTool', path, turn, call, at: isoNow(deps.clock) }, ctx.state));
  }
  const started = deps.clock.now();
  const realWorkspace = await ctx.realWorkspace();
  const invoke = async (): Promise<ToolOutcome> => {
    try {
      return await deps.tools.invoke(call, phaseRole, allowed, { runId: ctx.runId, role: phaseRole, workspace: ctx.workspace, realWorkspace, signal, ...runSandboxContext(ctx.state.launched, phaseRole) });
    } catch (err) {
      return { isError: true, output: `tool ${call.name} failed: ${encodeMachineText(String((err as Error).message))}` };
    }
  };
  // The workspace is part of the log: a sub-agent's changes are recorded like its parent's.
  let outcome: ToolOutcome;
  let files: FileEffect[] | undefined;
  if (!tool || tool.readOnly || !allowed.includes(call.name) || deps.workspaceLog?.enabled === false) {
    outcome = await invoke();
    if (tool?.readOnly && deps.workspaceLog?.enabled !== false && !hasNoOwnEffects(call.name)) files = [];
  } else ({ result: outcome, files } = await withRecordedEffects(deps.store, ctx.workspace, call, invoke, { ...deps.workspaceLog, realWorkspace, secrets: deps.tools.secrets }));
  if (signal.aborted) return undefined;
  return toolCompleted(ctx, path, turn, call, outcome, deps.clock.now() - started, undefined, files);
}

/**
 * One model turn of the sub-agent, recorded: its SubAgentModelCalled, or its SubAgentFailed or
 * SubAgentTimedOut. 'stopped' when the run stopped first (nothing recorded for the call).
 */
async function callSubAgentModel(
  ctx: StepContext,
  record: SubAgentRecord,
  phaseRole: RoleName,
  step: { turn: number; content: ContentBlock[] },
  signal: AbortSignal,
): Promise<'recorded' | 'stopped'> {
  const { deps, runId } = ctx;
  const s = record.spawned;
  const launched = ctx.state.launched!;
  const model = launched.team[phaseRole].model;
  // A sub-agent calls the provider its parent role is pinned to.
  const route = roleRoute(deps.model, pinOf(launched)[phaseRole].provider);
  // The new user message: the results of its last response's tool calls, then the step's content.
  const results: ContentBlock[] = pendingToolUses(record).map((u) => {
    const r = record.toolResults[u.id];
    return r.isError ? { type: 'tool_result', tool_use_id: u.id, content: r.output, is_error: true } : { type: 'tool_result', tool_use_id: u.id, content: r.output };
  });
  const messages: ChatMessage[] = [...record.messages, { role: 'user', content: [...results, ...step.content] }];
  const tools = deps.tools.specsFor(phaseRole, s.tools).filter((t) => s.tools.includes(t.name));
  const deadline = Math.min(deadlineOf(ctx.state), Date.parse(record.startedAt ?? new Date(deps.clock.now()).toISOString()) + s.limits.timeoutMs);
  for (let attempt = 1; ; attempt++) {
    const call = new AbortController();
    const onStop = () => call.abort();
    signal.addEventListener('abort', onStop, { once: true });
    const timer = setTimeout(() => call.abort(new Error('timeout')), Math.max(0, deadline - deps.clock.now()));
    const started = deps.clock.now();
    let response: ModelResponse | undefined;
    let failure: ModelError | undefined;
    try {
      response = await deps.model.complete({
        ...route.request,
        runId,
        role: phaseRole,
        model,
        system: SUB_AGENT_SYSTEM_PROMPT(s.role),
        messages,
        tools,
        maxTokens: deps.maxOutputTokens ?? 8192,
        signal: call.signal,
        subAgent: { role: s.role, path: s.path },
      });
      // An answer that cannot be recorded as it is (usage that is not a count, two tool calls of
      // one id) is asked for again, as a transient failure is; then the sub-agent fails.
      const unusable = unusableAnswer(response);
      if (unusable) throw new ModelError('malformed_response', `malformed model response: ${unusable}`);
      response = redactAnswer(response, deps.tools.secrets);
    } catch (err) {
      if (signal.aborted) return 'stopped';
      // Its timeout passed: the sub-agent timed out.
      if (deps.clock.now() >= deadline) {
        await ctx.append(runDecider.decide({ type: 'TimeOutSubAgent', path: s.path, at: isoNow(deps.clock) }, ctx.state));
        return 'recorded';
      }
      failure = err instanceof ModelError ? err : new ModelError('server', String((err as Error)?.message ?? err));
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onStop);
    }
    if (!failure) {
      try {
        const turn = { turn: step.turn, content: step.content, callId: deps.ids.newId() };
        const origin = callOrigin(route.provider, model, response!);
        await ctx.append(runDecider.decide({ type: 'RecordSubAgentTurn', path: s.path, turn, response: response!, durationMs: deps.clock.now() - started, origin, at: isoNow(deps.clock) }, ctx.state));
        return 'recorded';
      } catch (err) {
        // Nothing was written: an answer too large for one event is a failed call, asked for again.
        failure = answerTooLarge(err, 'SubAgentModelCalled');
        if (!failure) throw err;
      }
    }
    if (failure.transient && attempt < MODEL_ATTEMPTS) {
      // 1 s, then 2 s, or longer when the provider says when to come back (a 429's retry-after),
      // never past the sub-agent's deadline.
      const waitMs = Math.max(1000 * attempt, failure.details.retryAfterMs ?? 0);
      await (deps.sleep ?? pause)(Math.min(waitMs, Math.max(0, deadline - deps.clock.now())), signal);
      if (signal.aborted) return 'stopped';
      continue;
    }
    await ctx.append(runDecider.decide({ type: 'FailSubAgent', path: s.path, message: `the model failed: ${encodeMachineText(failure.message)}`, at: isoNow(deps.clock) }, ctx.state));
    return 'recorded';
  }
}
