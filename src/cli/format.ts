import { describeRefusal } from '../attestation/gate-refusal';
import type { RecordedEvent } from '../events/event-store/event-store.port';
import type { TeamRunEvent } from '../team/domain/run-events';
import type { ModelProvider } from '../team/models/model.port';
import type { RunSummary, TokenUsage } from '../team/runs/run-summary';
import { describeRunPin } from '../team/domain/model-pin';

const short = (s: string, n = 100) => {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
};

/** One human-readable line per event, for `--follow` and transcripts; undefined for quiet events. */
export function describeEvent(recorded: RecordedEvent): string | undefined {
  const e = { type: recorded.type, data: recorded.data } as TeamRunEvent;
  switch (e.type) {
    case 'RunLaunched':
      return `launched  goal: ${short(e.data.goal)} (${e.data.acceptanceCriteria.length} criteria, max ${e.data.maxIterations} iterations, provider ${e.data.provider}${e.data.sandbox?.mode === 'off' ? ', UNSANDBOXED' : ''})`;
    case 'RunRepinned':
      return `repinned  by ${e.data.by}: ${describeRunPin(e.data.to)}`;
    case 'PhaseStarted':
      return `phase     ${e.data.phase} — ${e.data.role}, iteration ${e.data.iteration}`;
    case 'IterationStarted':
      return `iteration ${e.data.iteration} (${e.data.reason.replace('_', ' ')}): ${e.data.findings.map((f) => short(f, 60)).join('; ')}`;
    case 'ModelCallStarted':
      return undefined;
    case 'ModelCallCompleted': {
      const text = e.data.content.filter((b) => b.type === 'text').map((b) => (b as { text: string }).text).join(' ');
      const u = e.data.usage;
      // The prompt cache only when it was used: the offline model, and calls below the cache's minimum, use none.
      const cache = (u.cacheReadTokens ?? 0) + (u.cacheWriteTokens ?? 0) > 0 ? `, cache ${u.cacheReadTokens ?? 0} read + ${u.cacheWriteTokens ?? 0} written` : '';
      return `turn      ${e.data.role} #${e.data.turn} ${e.data.model}: ${short(text, 80)} [in ${u.inputTokens} / out ${u.outputTokens} tokens${cache}, $${e.data.costUsd.toFixed(4)}]`;
    }
    case 'ModelCallFailed':
      return `  model   ${e.data.role} #${e.data.turn} failed (${e.data.kind}, attempt ${e.data.attempt})${e.data.retryInMs !== undefined ? `, retrying in ${e.data.retryInMs} ms` : ''}: ${short(e.data.message, 80)}`;
    case 'ToolCallRequested':
      return undefined;
    case 'ToolCallCompleted':
      return `  tool    ${e.data.name} → ${e.data.isError ? 'error: ' : ''}${short(e.data.output, 70)} (${e.data.durationMs} ms)`;
    case 'PlanSubmitted':
      return `plan      ${e.data.steps.length} step(s): ${short(e.data.plan, 80)}`;
    case 'WorkSubmitted':
      return `work      iteration ${e.data.iteration}: ${short(e.data.summary, 80)}`;
    case 'VerdictSubmitted':
      return `verdict   ${e.data.verdict}${e.data.findings.length ? ` — ${e.data.findings.map((f) => short(f, 60)).join('; ')}` : ''}`;
    case 'BudgetExceeded':
      return `budget    exceeded (${e.data.scope}: ${e.data.usedTokens} of ${e.data.limitTokens} tokens)`;
    case 'ReviewOpened':
      return `review    ${e.data.reviewId} waits for a human decision (artifact ${e.data.artifactHash.slice(0, 19)}…)`;
    case 'ReviewDecided':
      return `decision  ${e.data.outcome} by ${e.data.decider}${e.data.policy ? ` (timeout policy ${e.data.policy})` : ''}: ${short(e.data.reason, 80)}`;
    case 'RunEnded':
      return `ended     ${e.data.status} (${e.data.reason})${e.data.message ? `: ${short(e.data.message, 90)}` : ''}`;
    case 'StagnationWarned':
      return `stagnant  ${e.data.role} #${e.data.turn} (${e.data.signal}${e.data.ratio !== undefined ? ` ${Math.round(e.data.ratio * 100)}%` : ''}${e.data.cycleLength ? `, cycle of ${e.data.cycleLength}` : ''}): corrective message sent`;
    case 'ContextCompacted':
      return `context   ${e.data.role}: messages ${e.data.fromIndex}-${e.data.toIndex - 1} archived (${e.data.method}, ${e.data.reason.replace(/_/g, ' ')}; ~${e.data.tokensBefore} → ~${e.data.tokensAfter} tokens)`;
    case 'ToolApprovalRequested':
      return `approval  ${e.data.approvalId} — ${e.data.name} (${e.data.risk} risk) waits for a human: triad approvals approve ${e.data.approvalId}`;
    case 'ToolApprovalDecided':
      return `approval  ${e.data.name} ${e.data.outcome} by ${e.data.decider}${e.data.policy ? ` (timeout policy ${e.data.policy})` : ''}: ${short(e.data.reason, 80)}`;
    case 'SubAgentSpawned':
      return `subagent  ${e.data.path} spawned: ${e.data.role} (${e.data.agent}), tools ${e.data.tools.join(', ') || 'none'}: ${short(e.data.task, 70)}`;
    case 'SubAgentAwaitingApproval':
      return `subagent  ${e.data.path} awaiting approval ${e.data.approvalId}`;
    case 'SubAgentQueued':
      return `subagent  ${e.data.path} queued (priority ${e.data.priority})`;
    case 'SubAgentStarted':
      return `subagent  ${e.data.path} running`;
    case 'SubAgentModelCalled': {
      const text = e.data.response.filter((b) => b.type === 'text').map((b) => (b as { text: string }).text).join(' ');
      return `  turn    ${e.data.path} #${e.data.turn} ${e.data.model}: ${short(text, 70)} [in ${e.data.usage.inputTokens} / out ${e.data.usage.outputTokens} tokens]`;
    }
    case 'SubAgentToolStarted':
      return undefined;
    case 'SubAgentToolCompleted':
      return `    tool  ${e.data.path} ${e.data.name} → ${e.data.isError ? 'error: ' : ''}${short(e.data.output, 60)} (${e.data.durationMs} ms)`;
    case 'SubAgentCompleted':
      return `subagent  ${e.data.path} completed: ${short(e.data.result, 80)}`;
    case 'SubAgentFailed':
      return `subagent  ${e.data.path} failed (${e.data.reason}): ${short(e.data.message, 80)}`;
    case 'SubAgentCancelled':
      return `subagent  ${e.data.path} cancelled: ${short(e.data.reason, 80)}`;
    case 'SubAgentTimedOut':
      return `subagent  ${e.data.path} timed out: ${short(e.data.message, 80)}`;
    case 'LoopStrategyChosen':
      return `loop      ${e.data.role}: auto chose ${e.data.strategy} (${e.data.complexity} task, ${e.data.budgetUsedPercent}% of the budget used${e.data.downgraded ? ', downgraded from hybrid' : ''})`;
    case 'LoopPlanRecorded':
      return `loop      ${e.data.role} planned ${e.data.steps.length} step(s)`;
    case 'LoopReplanned':
      return `loop      ${e.data.role} replanned (${e.data.replan}): ${e.data.steps.length} step(s)`;
    case 'LoopStepStarted':
      return `step      ${e.data.role} ${e.data.index} of ${e.data.of}: ${short(e.data.text, 80)}`;
    case 'LoopStepCompleted':
      return `step      ${e.data.role} ${e.data.index} done: ${short(e.data.summary, 80)}`;
    case 'LoopStepFailed':
      return `step      ${e.data.role} ${e.data.index} failed (${e.data.cause.replace(/_/g, ' ')}): ${short(e.data.reason, 80)}`;
    case 'DriverClaimed':
      return `driver    ${e.data.owner} drives the run`;
    case 'WorkspaceUnrecoverable':
      return `workspace cannot be rebuilt from the events (${e.data.owner}): ${short(e.data.paths.map((p) => `${p.path}: ${p.reason}`).join('; '), 90)}`;
    default:
      return `${recorded.type}`;
  }
}

const ROLES = ['architect', 'executor', 'reviewer'] as const;

/** Tokens as billed: uncached input, output, and the prompt cache's reads and writes. */
export function describeTokens(u: TokenUsage): string {
  return `${u.inputTokens} input + ${u.outputTokens} output tokens, cache ${u.cacheReadTokens} read + ${u.cacheWriteTokens} written`;
}

export function describeRun(r: RunSummary): string {
  const lines = [
    `run       ${r.runId}`,
    `status    ${r.status}${r.terminationReason ? ` (${r.terminationReason})` : ''}${r.phase ? `, phase ${r.phase}` : ''}`,
    `goal      ${short(r.goal, 200)}`,
    `iteration ${r.iteration} of ${r.maxIterations}`,
    `usage     ${r.usage.turns} turns, ${describeTokens(r.usage)}, $${r.usage.costUsd.toFixed(4)}`,
    ...ROLES.filter((role) => r.usage.byRole[role].turns > 0).map((role) => `  ${role.padEnd(9)} ${r.usage.byRole[role].turns} turn(s), ${describeTokens(r.usage.byRole[role])}`),
    `provider  ${r.provider}${r.provider === 'offline' ? ' (the built-in offline model)' : ''}`,
    ...(r.pin ? [`pin       ${describeRunPin(r.pin)}`] : []),
    ...(r.waitingFor ? [`waiting   for ${r.waitingFor}; this process does not drive it (re-pin: triad resume ${r.runId} --model <role>=<model> --endpoint <url>)`] : []),
    ...(r.sandbox ? [`sandbox   ${describeSandbox(r.sandbox)}`] : []),
    `launched  ${r.startedAt} by ${r.launchedBy}`,
    ...(r.forkedFrom ? [`forked    ${describeFork(r.forkedFrom)}`] : []),
    ...Object.entries(r.loops ?? {}).map(([role, l]) => `loop      ${role} ${l.strategy}${l.running && l.running !== l.strategy ? ` → ${l.running}` : ''}${l.currentStep ? `, step ${l.currentStep.index} of ${l.currentStep.of} ${l.currentStep.status}: ${short(l.currentStep.text, 80)}` : ''}${l.replans > 0 ? `, ${l.replans} replan(s)` : ''}`),
    ...(r.subAgents ?? []).map((a) => `subagent  ${a.path} ${a.role} ${a.status}, ${a.turns} turn(s)${a.error ? `: ${short(a.error.message, 60)}` : ''}`),
  ];
  for (const refusal of r.refused ?? []) lines.push(`refused   ${describeRefusal(refusal)}`);
  if (r.endedAt) lines.push(`ended     ${r.endedAt}${r.message ? ` — ${r.message}` : ''}`);
  if (r.lastVerdict) lines.push(`verdict   ${r.lastVerdict.verdict} (iteration ${r.lastVerdict.iteration}): ${short(r.lastVerdict.summary, 120)}`);
  for (const a of r.pendingApprovals ?? []) lines.push(`approval  ${a.tool} waits for a human: triad approvals approve ${a.approvalId} (or reject --reason "…")`);
  if (r.pendingReview) lines.push(`review    ${r.pendingReview.reviewId} is waiting for a human (not the launcher): TRIAD_API_KEY=<reviewer key> triad review approve ${r.pendingReview.reviewId} --reason "…" (a reviewer's key: triad keys add <name> --roles reviewer)`);
  return lines.join('\n');
}

/** Where a fork comes from, in the words the console uses too: its parent and the turn it was forked at. */
export function describeFork(from: NonNullable<RunSummary['forkedFrom']>): string {
  return `from run ${from.runId} at turn ${from.turn}`;
}

/** One run as a line of `triad runs list`: id, status, reason, start, goal, and what it was forked from. */
export function describeRunLine(r: RunSummary): string {
  return `${r.runId}  ${r.status.padEnd(15)} ${(r.terminationReason ?? '').padEnd(16)} ${r.startedAt}  ${r.goal.slice(0, 50)}${r.forkedFrom ? `  (forked ${describeFork(r.forkedFrom)})` : ''}`;
}

/** A run's sandbox in one phrase: `off` said loudly, the network allow-lists when there are any. */
export function describeSandbox(s: NonNullable<RunSummary['sandbox']>): string {
  if (s.mode === 'off') return 'OFF — its commands ran unsandboxed, as the server (TRIAD_SANDBOX=off)';
  const lists = Object.entries(s.network).filter(([, hosts]) => hosts && hosts.length > 0);
  return `bubblewrap, network ${lists.length === 0 ? 'none' : lists.map(([role, hosts]) => `${role}: ${hosts!.join(', ')}`).join('; ')}`;
}

/** Which model answers, said once before a run is driven and when the server starts. */
export function providerLine(model: ModelProvider): string {
  const main = model.name === 'offline' ? 'model: offline — the built-in deterministic offline model (no network, no API key)' : `model: ${model.name}`;
  // The other providers a role may name (team.<role>.provider), with where their calls go.
  const others = [...(model.providers?.values() ?? [])].filter((p) => p.name !== model.name);
  return others.length === 0 ? main : `${main}; also ${others.map((p) => `${p.name} at ${p.endpoint ?? `${p.name}:`}`).join(', ')} for the roles that name it`;
}
