import type { ToolUseBlock } from '../models/model.port';
import type { NextAction } from '../domain/next-action';
import {
  rejectionMessage,
  submissionEvents,
  toolApprovalRequested,
  toolCallCompleted,
  toolCallRequested,
  UNKNOWN_OUTCOME_MESSAGE,
} from '../domain/run-steps';
import type { TeamRunEvent } from '../domain/run-events';
import { requiresApproval } from '../resilience/policies';
import { executionSegments, runSegments } from '../resilience/tool-dispatch';
import { validateSubmission } from '../tools/tool-registry';
import type { ToolDefinition, ToolOutcome } from '../tools/tool.port';
import { encodeMachineText } from '../../shared/text';
import { isoNow, underRunSignal, type StepContext } from './step-context';

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
  const context = (signal: AbortSignal) => ({ runId, role, workspace: ctx.workspace, signal });

  // Pass 1 — preflight.
  const planned: PlannedCall[] = [];
  const approvals: TeamRunEvent[] = [];
  for (const { call, alreadyStarted } of step.batch) {
    const tool = deps.tools.get(call.name);
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
    if (requiresApproval(tool.risk, policy)) {
      const approval = s.approvals.get(call.id);
      if (!approval) {
        approvals.push(toolApprovalRequested(runId, role, turn, call, tool.risk, policy!, { nowMs: deps.clock.now(), at: isoNow(deps.clock) }));
        continue;
      }
      if (!approval.decided) return; // still waiting (the fold says so too)
      if (approval.decided.outcome === 'rejected') {
        planned.push({ call, record: false, outcome: { output: rejectionMessage(approval.decided), isError: true } });
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
        try {
          p.outcome = await deps.tools.invoke(p.call, role, allowed, context(signal));
        } catch (err) {
          p.outcome = { isError: true, output: `tool ${p.call.name} failed: ${encodeMachineText(String((err as Error).message))}` };
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
          await ctx.append(durable.map((p) => toolCallRequested(role, turn, p.call, isoNow(deps.clock))));
          for (const p of durable) p.record = false;
        },
      },
    );
    return signal.aborted;
  });
  // Cancelled, shut down or timed out: nothing is committed; the next decision ends the run.
  if (stopped || ctx.runSignal.aborted) return;

  // Pass 3 — commit, in the model's order.
  const events: TeamRunEvent[] = [];
  for (const p of planned) {
    if (p.record) events.push(toolCallRequested(role, turn, p.call, isoNow(deps.clock)));
    events.push(toolCallCompleted(role, turn, p.call, p.outcome!, p.durationMs ?? 0, p.outcomeUnknown));
  }
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
  await ctx.append(submissionEvents(ctx.state, step.role, step.call, checked, at));
}
