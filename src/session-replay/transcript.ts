import type { RecordedEvent } from '../events/event-store/event-store.port';
import type { TeamRunEvent } from '../team/domain/run-events';
import type { RunContext } from './replay';
import { describeRunPin } from '../team/domain/model-pin';

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** A turn-by-turn transcript of a run's history, for people. */
export function transcript(history: RecordedEvent[], context: RunContext, untilRevision?: number): string {
  const out: string[] = [];
  const own = `run-${context.runId}`;
  for (const r of history) {
    if (untilRevision !== undefined && r.streamId === own && r.revision > untilRevision) break;
    const e = { type: r.type, data: r.data } as TeamRunEvent;
    const where = r.streamId === own ? `#${r.revision}` : `${r.streamId}#${r.revision}`;
    switch (e.type) {
      case 'RunLaunched':
        out.push(`${where} RUN ${e.data.runId} by ${e.data.launchedBy} — ${e.data.goal}`);
        for (const c of e.data.acceptanceCriteria) out.push(`      criterion: ${c}`);
        break;
      case 'RunForked':
        out.push(`${where} FORK of ${e.data.parent.runId} at turn ${e.data.parent.turn} (revision ${e.data.parent.revision}) by ${e.data.forkedBy}`);
        break;
      case 'PhaseStarted':
        out.push('', `${where} ── ${e.data.phase.toUpperCase()} (${e.data.role}, iteration ${e.data.iteration}) ──`);
        break;
      case 'ModelCallStarted':
        for (const b of e.data.content) if (b.type === 'text') out.push(`${where} user → ${e.data.role}: ${clip(b.text.replace(/\n/g, ' ⏎ '), 300)}`);
        break;
      case 'ModelCallCompleted': {
        const u = e.data.usage;
        out.push(`${where} ${e.data.role} #${e.data.turn} (${e.data.model}, ${u.inputTokens}/${u.outputTokens} tokens, ${e.data.stopReason}):`);
        for (const b of e.data.content) {
          if (b.type === 'text') out.push(`      ${clip(b.text.replace(/\n/g, ' ⏎ '), 400)}`);
          else if (b.type === 'thinking') out.push(`      ✎ ${clip(b.thinking.replace(/\n/g, ' ⏎ '), 200)}`);
          else if (b.type === 'redacted_thinking') out.push('      ✎ (redacted thinking)');
          else out.push(`      ⚙ ${b.name}(${clip(JSON.stringify(b.input), 200)})`);
        }
        break;
      }
      case 'ModelCallFailed':
        out.push(`${where} ${e.data.role} #${e.data.turn} model call failed (${e.data.kind}, attempt ${e.data.attempt}): ${clip(e.data.message, 200)}`);
        break;
      case 'ToolCallCompleted':
        out.push(`${where}   ← ${e.data.name}${e.data.isError ? ' ERROR' : ''}${e.data.outcomeUnknown ? ' (outcome unknown)' : ''}: ${clip(e.data.output.replace(/\n/g, ' ⏎ '), 300)}`);
        break;
      case 'VerdictSubmitted':
        out.push(`${where} VERDICT ${e.data.verdict}: ${e.data.summary}`);
        for (const f of e.data.findings) out.push(`      finding: ${f}`);
        break;
      case 'ReviewDecided':
        out.push(`${where} DECISION ${e.data.outcome} by ${e.data.decider}: ${e.data.reason}`);
        break;
      case 'RunEnded':
        out.push(`${where} ENDED ${e.data.status} (${e.data.reason})${e.data.message ? `: ${e.data.message}` : ''}`);
        break;
      case 'StagnationWarned':
        out.push(`${where} STAGNATION WARNING to ${e.data.role} (${e.data.signal}): ${clip(e.data.message, 300)}`);
        break;
      case 'ContextCompacted':
        out.push(`${where} CONTEXT ${e.data.role}: messages ${e.data.fromIndex}..${e.data.toIndex - 1} archived (${e.data.method}, ${e.data.reason}): ${clip(e.data.summary.replace(/\n/g, ' ⏎ '), 300)}`);
        break;
      case 'ToolApprovalRequested':
        out.push(`${where} APPROVAL requested ${e.data.approvalId}: ${e.data.name}(${clip(JSON.stringify(e.data.input), 200)})`);
        break;
      case 'ToolApprovalDecided':
        out.push(`${where} APPROVAL ${e.data.outcome} by ${e.data.decider}: ${e.data.reason}`);
        break;
      case 'RunRepinned':
        out.push(`${where} REPINNED by ${e.data.by}: ${describeRunPin(e.data.from)} → ${describeRunPin(e.data.to)}`);
        break;
      case 'RunSuspended':
      case 'RunResumed':
      case 'DriverClaimed':
      case 'IterationStarted':
      case 'PlanSubmitted':
      case 'WorkSubmitted':
      case 'BudgetExceeded':
      case 'ReviewOpened':
      case 'ToolCallRequested':
        out.push(`${where} ${r.type}`);
        break;
      default:
        out.push(`${where} ${r.type} (not understood by this build)`);
    }
  }
  const c = context.completeness;
  out.push(
    '',
    `status ${context.status}${context.terminationReason ? ` (${context.terminationReason})` : ''} at revision ${context.revision}; ${context.usage.turns} turns, ${context.usage.inputTokens}+${context.usage.outputTokens} tokens, $${context.usage.costUsd.toFixed(4)}`,
    `completeness ${c.score} (${c.understood} of ${c.events} events understood)${c.missing.length ? `; missing: ${c.missing.join('; ')}` : ''}`,
  );
  return out.join('\n');
}
