import { inToolSpan } from '../../observability/tracing';
import type { ToolUseBlock } from '../models/model.port';
import type { NextAction } from '../domain/next-action';
import { rejectionMessage, toolApprovalRequested, UNKNOWN_OUTCOME_MESSAGE } from '../domain/run-steps';
import { runDecider } from '../domain/run-decider';
import { agentIdentity, type FileEffect, type TeamRunEvent } from '../domain/run-events';
import { decideSpawn, evolveSubAgents, SPAWN_SUB_AGENT_TOOL, SUB_AGENT_TERMINAL } from '../domain/sub-agents';
import { runSpawnCall, subAgentOfCall, type Spawner } from './sub-agent-runner';
import { requiresApproval } from '../domain/resilience/policies';
import { executionSegments, runSegments } from '../domain/resilience/tool-dispatch';
import { validateSubmission } from '../tools/tool-registry';
import type { ToolDefinition, ToolOutcome } from '../tools/tool.port';
import { encodeMachineText } from '../../shared/text';
import { hasNoOwnEffects } from '../workspace/workspace-effects';
import { withRecordedEffects } from '../workspace/workspace-log';
import { isoNow, runSandboxContext, underRunSignal, type StepContext } from './step-context';

/** A tool call in one turn's dispatch: what preflight decided, then what happened. */
interface PlannedCall {
  call: ToolUseBlock;
  /** Set when the call runs. */
  tool?: ToolDefinition;
  /** ToolCallRequested still to be recorded. */
  record: boolean;
  /** Set by preflight (refused, rejected, unknown outcome) or by running the tool. */
  outcome?: ToolOutcome;
  outcomeUnknown?: boolean;
  durationMs?: number;
  /** A spawn call's approval was rejected: its sub-agent is cancelled with the result. */
  cancelSubAgent?: string;
  /** What the call changed in the workspace (tools that may change it). */
  files?: FileEffect[];
}

/**
 * One turn's tool calls in three passes: preflight (serial, in the model's order: the registry's
 * checks, the approval gate), execute (read-only calls concurrently, others one by one; a call
 * that is not safe to repeat has its start recorded before it runs), commit (the results in the
 * model's order, in one append, whatever order they finished in).
 */
export async function dispatchTools(ctx: StepContext, step: Extract<NextAction, { kind: 'runTool' }>): Promise<void> {
  const { deps, runId } = ctx;
  const role = step.role;
  const s = ctx.state;
  const turn = s.loop!.context.turn;
  const allowed = s.phase!.tools;
  const policy = s.launched!.toolApproval;
  const realWorkspace = await ctx.realWorkspace();
  const sandbox = runSandboxContext(s.launched, role);
  const context = (signal: AbortSignal) => ({ runId, role, workspace: ctx.workspace, realWorkspace, signal, ...sandbox });
  const spawner: Spawner = { agent: agentIdentity(role, runId), depth: 0, tools: allowed, phaseRole: role };
  // Sub-agents spawned in this preflight (awaiting approval), so that two spawns get two paths.
  const agents = { ...s.subAgents };

  // Pass 1 — preflight.
  const planned: PlannedCall[] = [];
  const approvals: TeamRunEvent[] = [];
  for (const { call, alreadyStarted } of step.batch) {
    const tool = deps.tools.get(call.name);
    if (alreadyStarted && call.name === SPAWN_SUB_AGENT_TOOL && tool) {
      // Its sub-agent is in the fold: it resumes where it stopped, or returns its recorded result.
      planned.push({ call, tool, record: false });
      continue;
    }
    if (alreadyStarted) {
      // Started before a crash: repeat it only if that is safe; otherwise its outcome is unknown.
      if (tool?.idempotent) planned.push({ call, tool, record: false });
      else planned.push({ call, record: false, outcome: { output: UNKNOWN_OUTCOME_MESSAGE, isError: true }, outcomeUnknown: true });
      continue;
    }
    if (!tool || !allowed.includes(call.name) || deps.tools.validate(call.name, call.input) !== undefined) {
      // Not available to the role or invalid input: the registry says why, without running anything.
      planned.push({ call, record: true, outcome: await deps.tools.invoke(call, role, allowed, context(new AbortController().signal)) });
      continue;
    }
    // A spawn is as risky as the tools its sub-agent gets: approved once, they run without asking again.
    let risk = tool.risk;
    let spawn: Extract<ReturnType<typeof decideSpawn>, { ok: true }>['event'] | undefined;
    if (call.name === SPAWN_SUB_AGENT_TOOL) {
      const existing = subAgentOfCall(ctx, call.id);
      if (!existing) {
        const decision = decideSpawn(agents, call.input, { runId, parent: spawner, toolUseId: call.id, at: isoNow(deps.clock) });
        if (!decision.ok) {
          planned.push({ call, record: true, outcome: { isError: true, output: `spawn_sub_agent refused: ${decision.error}` } });
          continue;
        }
        spawn = decision.event;
      }
      risk = (existing?.spawned ?? spawn!.data).tools.some((t) => deps.tools.get(t)?.risk === 'high') ? 'high' : 'low';
    }
    if (requiresApproval(risk, policy)) {
      const approval = s.approvals.get(call.id);
      if (!approval) {
        const requested = toolApprovalRequested(runId, role, turn, call, risk, policy!, { nowMs: deps.clock.now(), at: isoNow(deps.clock) });
        if (spawn) {
          // The sub-agent exists from the request on, awaiting the human's approval.
          evolveSubAgents(agents, spawn);
          const approvalId = (requested.data as { approvalId: string }).approvalId;
          approvals.push(spawn, { type: 'SubAgentAwaitingApproval', data: { path: spawn.data.path, approvalId, at: isoNow(deps.clock) } });
        }
        approvals.push(requested);
        continue;
      }
      if (!approval.decided) return; // still waiting (the fold says so too)
      if (approval.decided.outcome === 'rejected') {
        const sub = call.name === SPAWN_SUB_AGENT_TOOL ? subAgentOfCall(ctx, call.id) : undefined;
        const cancelSubAgent = sub && !SUB_AGENT_TERMINAL.has(sub.status) ? sub.spawned.path : undefined;
        planned.push({ call, record: false, outcome: { output: rejectionMessage(approval.decided), isError: true }, ...(cancelSubAgent ? { cancelSubAgent } : {}) });
        continue;
      }
    }
    planned.push({ call, tool, record: true });
  }
  // The whole batch waits until every approval it needs is decided.
  if (approvals.length > 0) {
    await ctx.append(approvals);
    return;
  }

  // Pass 2 — execute.
  const toRun = planned.filter((p) => p.tool && !p.outcome);
  const segments = executionSegments(toRun, (p) => p.tool!.readOnly, deps.toolDispatch);
  const stopped = await underRunSignal(ctx, async (signal) => {
    await runSegments(
      segments,
      async (p) => {
        const started = deps.clock.now();
        if (p.call.name === SPAWN_SUB_AGENT_TOOL) {
          // Store faults and fencing propagate: the driver catches up and the spawn resumes from the fold.
          // The sub-agent's own tool calls record their file effects (SubAgentToolCompleted.files).
          p.outcome = await runSpawnCall(ctx, spawner, p.call, signal);
          p.durationMs = deps.clock.now() - started;
          return;
        }
        const invoke = async (): Promise<ToolOutcome> => {
          try {
            return await inToolSpan({ runId: ctx.runId, role, turn, name: p.call.name, callId: p.call.id, input: p.call.input }, () =>
              deps.tools.invoke(p.call, role, allowed, context(signal)),
            );
          } catch (err) {
            return { isError: true, output: `tool ${p.call.name} failed: ${encodeMachineText(String((err as Error).message))}` };
          }
        };
        if (p.tool!.readOnly || deps.workspaceLog?.enabled === false) {
          p.outcome = await invoke();
          // A read-only tool the workspace fold cannot know by name (an MCP tool) says so: no gap.
          if (p.tool!.readOnly && deps.workspaceLog?.enabled !== false && !hasNoOwnEffects(p.call.name)) p.files = [];
        } else {
          // The workspace is part of the log: what the call changed is recorded with its result.
          const recorded = await withRecordedEffects(deps.store, ctx.workspace, p.call, invoke, { ...deps.workspaceLog, realWorkspace, secrets: deps.tools.secrets });
          p.outcome = recorded.result;
          p.files = recorded.files;
        }
        p.durationMs = deps.clock.now() - started;
      },
      {
        stopped: () => signal.aborted,
        beforeSegment: async (segment) => {
          // A tool that is not safe to repeat has its start recorded before it runs, so a crash
          // during it is known; a repeatable one is recorded with its result.
          const durable = segment.filter((p) => p.record && !p.tool!.idempotent);
          if (durable.length === 0) return;
          await ctx.append(runDecider.decide({ type: 'StartToolCalls', role, turn, calls: durable.map((p) => p.call), at: isoNow(deps.clock) }, ctx.state));
          for (const p of durable) p.record = false;
        },
      },
    );
    return signal.aborted;
  });
  // Cancelled, shut down or timed out: nothing is committed; the next decision ends the run.
  if (stopped || ctx.runSignal.aborted) return;

  // Pass 3 — commit, in the model's order.
  const events = runDecider.decide({ type: 'CommitToolCalls', role, turn, calls: planned.map((p) => ({ ...p, outcome: p.outcome! })), at: isoNow(deps.clock) }, ctx.state);
  // Results of tools that are safe to repeat are committed together with the next model call's
  // events: one fsync per turn instead of two. If the process dies before that commit, the same
  // calls run again on resume — which is exactly what "safe to repeat" allows.
  const repeatable = planned.every((p) => p.tool?.idempotent === true && !p.outcomeUnknown);
  if (repeatable && deps.deferRepeatableToolResults !== false) ctx.defer(events);
  else await ctx.append(events);
}

/** The role's submit tool call: checked, then recorded as its result and, when valid, the submission. */
export async function submitToolCall(ctx: StepContext, step: Extract<NextAction, { kind: 'submit' }>, at: string): Promise<void> {
  const checked = validateSubmission(step.role, step.call.input);
  await ctx.append(runDecider.decide({ type: 'SubmitToolCall', role: step.role, call: step.call, checked, at }, ctx.state));
}
