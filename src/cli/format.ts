import type { RecordedEvent } from '../events/event-store.port';
import type { TeamRunEvent } from '../team/domain/run-events';
import type { ModelProvider } from '../team/models/model.port';
import type { RunSummary } from '../team/run-summary';

const short = (s: string, n = 100) => {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
};

/** One human-readable line per event, for `--follow` and transcripts; undefined for quiet events. */
export function describeEvent(recorded: RecordedEvent): string | undefined {
  const e = { type: recorded.type, data: recorded.data } as TeamRunEvent;
  switch (e.type) {
    case 'RunLaunched':
      return `launched  goal: ${short(e.data.goal)} (${e.data.acceptanceCriteria.length} criteria, max ${e.data.maxIterations} iterations, provider ${e.data.provider})`;
    case 'PhaseStarted':
      return `phase     ${e.data.phase} — ${e.data.role}, iteration ${e.data.iteration}`;
    case 'IterationStarted':
      return `iteration ${e.data.iteration} (${e.data.reason.replace('_', ' ')}): ${e.data.findings.map((f) => short(f, 60)).join('; ')}`;
    case 'ModelCallStarted':
      return undefined;
    case 'ModelCallCompleted': {
      const text = e.data.content.filter((b) => b.type === 'text').map((b) => (b as { text: string }).text).join(' ');
      const u = e.data.usage;
      return `turn      ${e.data.role} #${e.data.turn} ${e.data.model}: ${short(text, 80)} [in ${u.inputTokens} / out ${u.outputTokens} tokens, $${e.data.costUsd.toFixed(4)}]`;
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
    default:
      return `${recorded.type}`;
  }
}

export function describeRun(r: RunSummary): string {
  const lines = [
    `run       ${r.runId}`,
    `status    ${r.status}${r.terminationReason ? ` (${r.terminationReason})` : ''}${r.phase ? `, phase ${r.phase}` : ''}`,
    `goal      ${short(r.goal, 200)}`,
    `iteration ${r.iteration} of ${r.maxIterations}`,
    `usage     ${r.usage.turns} turns, ${r.usage.inputTokens} input + ${r.usage.outputTokens} output tokens, $${r.usage.costUsd.toFixed(4)}`,
    `provider  ${r.provider}${r.provider === 'offline' ? ' (the built-in offline model)' : ''}`,
    `launched  ${r.startedAt} by ${r.launchedBy}`,
  ];
  if (r.endedAt) lines.push(`ended     ${r.endedAt}${r.message ? ` — ${r.message}` : ''}`);
  if (r.lastVerdict) lines.push(`verdict   ${r.lastVerdict.verdict} (iteration ${r.lastVerdict.iteration}): ${short(r.lastVerdict.summary, 120)}`);
  for (const a of r.pendingApprovals ?? []) lines.push(`approval  ${a.tool} waits for a human: triad approvals approve ${a.approvalId} (or reject --reason "…")`);
  if (r.pendingReview) lines.push(`review    ${r.pendingReview.reviewId} is waiting for a human (not the launcher): triad review approve ${r.pendingReview.reviewId} --reason "…" --as <reviewer>`);
  return lines.join('\n');
}

/** Which model answers, said once before a run is driven and when the server starts. */
export function providerLine(model: ModelProvider): string {
  return model.name === 'offline'
    ? 'model: offline — the built-in deterministic offline model (no network, no API key)'
    : `model: ${model.name}`;
}
