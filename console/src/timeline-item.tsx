// One card of a run's timeline: an event as the run page shows it (the groups hold these).
// The document holds an event's `data` as an open object; the server's event union types it by `type`.
import type { TeamRunEvent } from '../../src/http/api-types';
import type { RecordedEvent } from './api';
import { describeRunPin } from '../../src/team/domain/model-pin';
import { href } from './router';
import { fmtInt, fmtUsd, Json } from './ui';

export type Typed = RecordedEvent & TeamRunEvent;

/** The review page of a review: where a waiting gate's line leads. */
export const reviewHref = (reviewId: string): string => `${href.reviews()}/${encodeURIComponent(reviewId)}`;

/** A reviewer's findings, as a list (nothing when there are none). */
function Findings({ findings }: { findings: string[] }) {
  if (findings.length === 0) return null;
  return (
    <ul>
      {findings.map((f, i) => (
        <li key={i}>{f}</li>
      ))}
    </ul>
  );
}

/** `turn`: the run's number of a completed model turn (its card is where turn navigation lands). */
export function TimelineItem({ e, turn }: { e: Typed; turn?: number }) {
  const head = (kind: string, rest: string) => (
    <div class="head">
      <span class="kind">{kind}</span> {rest} <span class="small">#{e.revision}</span>
    </div>
  );
  switch (e.type) {
    case 'RunLaunched':
      return <li class="item">{head('Launched', `by ${e.data.launchedBy} · max ${e.data.maxIterations} iterations · budget ${fmtInt(e.data.budget.totalTokens)} tokens · ${e.data.provider}${e.data.sandbox?.mode === 'off' ? ' · UNSANDBOXED' : ''}`)}</li>;
    case 'RunForked':
      return <li class="item">{head('Forked', `from ${e.data.parent.runId} at turn ${e.data.parent.turn} by ${e.data.forkedBy}`)}</li>;
    case 'PhaseStarted':
      return <li class="item phase">{head('Phase', `${e.data.phase} · ${e.data.role} · iteration ${e.data.iteration}`)}</li>;
    case 'IterationStarted':
      return (
        <li class="item phase">
          {head('Iteration', `${e.data.iteration} (${e.data.reason.replace(/_/g, ' ')})`)}
          {e.data.feedback ? <p>Feedback: {e.data.feedback}</p> : null}
          <Findings findings={e.data.findings} />
        </li>
      );
    case 'ModelCallStarted':
      return <li class="item turn">{head(`${e.data.role} turn ${e.data.turn}`, `· ${e.data.model}`)}</li>;
    case 'ModelCallCompleted':
      return (
        <li class="item" id={turn === undefined ? undefined : `turn-${turn}`} tabIndex={-1}>
          {head(turn === undefined ? `${e.data.role} said` : `Turn ${turn} · ${e.data.role} said`, `· turn ${e.data.turn} · ${e.data.model}${e.data.endpoint ? ` at ${e.data.endpoint}` : ''}${e.data.requestId ? ` (${e.data.requestId})` : ''} · ${fmtInt(e.data.usage.inputTokens)} in / ${fmtInt(e.data.usage.outputTokens)} out · ${fmtUsd(e.data.costUsd)} · ${e.data.durationMs} ms`)}
          {e.data.content.map((b, i) =>
            b.type === 'text' ? (
              <div key={i} class="text">
                {b.text}
              </div>
            ) : b.type === 'tool_use' ? (
              <div key={i} class="small">
                calls <strong>{b.name}</strong>
              </div>
            ) : (
              <div key={i} class="small">
                {b.type === 'thinking' ? 'thought before answering' : 'thought (redacted by the provider)'}
              </div>
            ),
          )}
        </li>
      );
    case 'ModelCallFailed':
      return (
        <li class="item warn">
          {head('Model call failed', `· ${e.data.role} turn ${e.data.turn} · attempt ${e.data.attempt} · ${e.data.kind}${e.data.status ? ` ${e.data.status}` : ''}`)}
          <p>{e.data.message}</p>
          {e.data.retryInMs !== undefined ? <p>Retry in {Math.round(e.data.retryInMs / 100) / 10} s{e.data.compactBeforeRetry ? ', after compacting the context' : ''}.</p> : null}
        </li>
      );
    case 'ToolCallRequested':
      return (
        <li class="item tool">
          {head('Tool call', `${e.data.name} · ${e.data.role} turn ${e.data.turn}`)}
          <details>
            <summary>Input</summary>
            <Json value={e.data.input} label={`Input of ${e.data.name}`} />
          </details>
        </li>
      );
    case 'ToolCallCompleted':
      return (
        <li class={`item tool${e.data.isError ? ' warn' : ''}`}>
          {head(e.data.isError ? 'Tool error' : 'Tool result', `${e.data.name} · ${e.data.durationMs} ms${e.data.outcomeUnknown ? ' · outcome unknown' : ''}`)}
          <details>
            <summary>Output</summary>
            <pre class="json" tabIndex={0}>
              {e.data.output}
            </pre>
          </details>
        </li>
      );
    case 'PlanSubmitted':
      return (
        <li class="item">
          {head('Plan', '')}
          <div class="text">{e.data.plan}</div>
          <ol>
            {e.data.steps.map((s, i) => (
              <li key={i}>{s}</li>
            ))}
          </ol>
        </li>
      );
    case 'WorkSubmitted':
      return (
        <li class="item">
          {head('Work submitted', `iteration ${e.data.iteration} · ${e.data.files.join(', ')}`)}
          <div class="text">{e.data.summary}</div>
        </li>
      );
    case 'VerdictSubmitted':
      return (
        <li class="item">
          {head('Verdict', `${e.data.verdict} · iteration ${e.data.iteration}`)}
          <div class="text">{e.data.summary}</div>
          <Findings findings={e.data.findings} />
        </li>
      );
    case 'BudgetExceeded':
      return <li class="item warn">{head('Budget exceeded', `${e.data.scope}: ${fmtInt(e.data.usedTokens)} of ${fmtInt(e.data.limitTokens)} tokens`)}</li>;
    case 'ReviewOpened':
      return (
        <li class="item phase">
          {head('Review opened', '')}
          <a href={reviewHref(e.data.reviewId)}>{e.data.reviewId}</a> · waits for a human
        </li>
      );
    case 'ReviewDecided':
      return (
        <li class="item phase">
          {head('Review decided', `${e.data.outcome} by ${e.data.decider}${e.data.rework === false ? ' · no rework' : ''}`)}
          <p>{e.data.reason}</p>
        </li>
      );
    case 'StagnationWarned':
      return <li class="item warn">{head('Stagnation warning', `${e.data.role} · ${e.data.signal}`)}</li>;
    case 'ContextCompacted':
      return <li class="item">{head('Context compacted', `${e.data.role} · ${fmtInt(e.data.tokensBefore)} → ${fmtInt(e.data.tokensAfter)} tokens · ${e.data.method} · ${e.data.reason.replace(/_/g, ' ')}`)}</li>;
    case 'ToolApprovalRequested':
      return <li class="item warn">{head('Tool call waits for approval', `${e.data.name} · risk ${e.data.risk}`)}</li>;
    case 'ToolApprovalDecided':
      return <li class="item">{head('Tool call decided', `${e.data.name} ${e.data.outcome} by ${e.data.decider}: ${e.data.reason}`)}</li>;
    case 'RunEnded':
      return (
        <li class="item end">
          {head('Run ended', `${e.data.status} · ${e.data.reason}`)}
          {e.data.message ? <p>{e.data.message}</p> : null}
        </li>
      );
    case 'RunSuspended':
      return <li class="item warn">{head('Suspended', `${e.data.reason} · ${e.data.owner}`)}</li>;
    case 'RunResumed':
      return <li class="item">{head('Resumed', `by ${e.data.by}`)}</li>;
    case 'RunRepinned':
      return (
        <li class="item warn">
          {head('Re-pinned', `by ${e.data.by}`)}
          <p>
            {describeRunPin(e.data.from)} → {describeRunPin(e.data.to)}
          </p>
        </li>
      );
    case 'DriverClaimed':
      return <li class="item small">{head('Driver', e.data.owner)}</li>;
    case 'WorkspaceUnrecoverable':
      return (
        <li class="item warn">
          {head('Workspace cannot be rebuilt', e.data.owner)}
          <p>{e.data.paths.map((p) => `${p.path}: ${p.reason}`).join('; ')}</p>
        </li>
      );
    case 'SubAgentSpawned':
      return (
        <li class="item phase">
          {head('Sub-agent spawned', `${e.data.path} · ${e.data.role}`)}
          <p>{e.data.task}</p>
        </li>
      );
    case 'SubAgentCompleted':
      return (
        <li class="item">
          {head('Sub-agent completed', e.data.path)}
          <div class="text">{e.data.result}</div>
        </li>
      );
    case 'SubAgentFailed':
      return <li class="item warn">{head('Sub-agent failed', `${e.data.path} · ${e.data.reason}: ${e.data.message}`)}</li>;
    case 'SubAgentTimedOut':
      return <li class="item warn">{head('Sub-agent timed out', `${e.data.path} · ${e.data.message}`)}</li>;
    case 'SubAgentCancelled':
      return <li class="item warn">{head('Sub-agent cancelled', `${e.data.path} · ${e.data.reason}`)}</li>;
    case 'SubAgentModelCalled':
      return <li class="item turn">{head(`Sub-agent ${e.data.path} turn ${e.data.turn}`, `· ${e.data.model} · ${fmtUsd(e.data.costUsd)}`)}</li>;
    case 'SubAgentToolCompleted':
      return <li class={`item tool${e.data.isError ? ' warn' : ''}`}>{head(e.data.isError ? 'Sub-agent tool error' : 'Sub-agent tool result', `${e.data.path} · ${e.data.name}`)}</li>;
    case 'SubAgentQueued':
    case 'SubAgentStarted':
    case 'SubAgentAwaitingApproval':
    case 'SubAgentToolStarted':
      return <li class="item small">{head(`Sub-agent ${e.type.slice('SubAgent'.length).replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()}`, e.data.path)}</li>;
    default:
      return <li class="item">{head((e as RecordedEvent).type, '')}</li>;
  }
}
