import { useEffect, useMemo, useState } from 'preact/hooks';
import type { RecordedEvent, RoleName, SubAgentSummary, TeamRunEvent, TextDelta } from '../../../src/http/api-types';
import { TEAM_RUN_EVENT_TYPES } from '../../../src/team/domain/run-events';
import { describeRunPin } from '../../../src/team/domain/model-pin';
import { describeRefusal } from '../../../src/attestation/gate-refusal';
import { api } from '../api';
import { subAgentTree, type TreeNode } from '../graphs';
import { useFreshRead } from '../use-fresh-read';
import { href } from '../router';
import { useMay } from '../session';
import { ErrorNote, fmtInt, fmtTime, fmtUsd, Json, Notice, StatusBadge, Table } from '../ui';

/** Every event type a run's stream carries (the server's list): EventSource delivers named events only to their own listeners. */
const EVENT_TYPES = TEAM_RUN_EVENT_TYPES;
const TERMINAL = new Set(['completed', 'failed', 'blocked', 'cancelled']);

type Typed = RecordedEvent & TeamRunEvent;

interface LiveText {
  role: RoleName;
  turn: number;
  text: string;
}

/** The run's events through EventSource (the session cookie authenticates it), plus live model text. */
function useRunStream(runId: string) {
  const [events, setEvents] = useState<Typed[]>([]);
  const [live, setLive] = useState<LiveText | null>(null);
  const [connected, setConnected] = useState(false);
  const [ended, setEnded] = useState(false);

  useEffect(() => {
    const source = new EventSource(`/v1/runs/${encodeURIComponent(runId)}/events`);
    const seen = new Set<number>();
    const onEvent = (m: MessageEvent<string>) => {
      const e = JSON.parse(m.data) as Typed;
      if (seen.has(e.revision)) return;
      seen.add(e.revision);
      setEvents((prev) => [...prev, e]);
      if (e.type === 'ModelCallCompleted' || e.type === 'ModelCallFailed') setLive((l) => (l && l.role === e.data.role && l.turn === e.data.turn ? null : l));
      if (e.type === 'RunEnded' && TERMINAL.has(e.data.status)) {
        setEnded(true);
        setLive(null);
        // The server closes the stream after the end; stop EventSource from reconnecting.
        source.close();
        setConnected(false);
      }
    };
    for (const t of EVENT_TYPES) source.addEventListener(t, onEvent as EventListener);
    source.addEventListener('delta', ((m: MessageEvent<string>) => {
      const d = JSON.parse(m.data) as TextDelta;
      setLive((l) => (l && l.role === d.role && l.turn === d.turn ? { ...l, text: l.text + d.text } : { role: d.role, turn: d.turn, text: d.text }));
    }) as EventListener);
    source.onopen = () => setConnected(true);
    source.onerror = () => setConnected(source.readyState === EventSource.OPEN);
    return () => source.close();
  }, [runId]);

  return { events, live, connected, ended };
}

export function RunPage({ runId }: { runId: string }) {
  const canOperate = useMay('operateRuns');
  const canReview = useMay('review');
  const canDecideTools = useMay('decideToolCalls');
  const { events, live, connected, ended } = useRunStream(runId);
  const [actionError, setActionError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);

  // The summary (status, usage) is read again as events arrive, without starving on a busy run.
  const lastRevision = events.length > 0 ? events[events.length - 1].revision : -1;
  const { value: run, error, refresh: readSummary } = useFreshRead(() => api.run(runId), [runId], { changedBy: lastRevision });

  const costByRole = useMemo(() => {
    const cost: Record<string, number> = {};
    for (const e of events) if (e.type === 'ModelCallCompleted') cost[e.data.role] = (cost[e.data.role] ?? 0) + e.data.costUsd;
    return cost;
  }, [events]);

  const act = async (what: string, f: () => Promise<unknown>) => {
    setActionError(null);
    setNotice(null);
    try {
      await f();
      setNotice(what);
      readSummary();
    } catch (err) {
      setActionError(err);
    }
  };

  return (
    <>
      <p>
        <a href={href.runs()}>← Runs</a>
      </p>
      <h1>Run</h1>
      <ErrorNote error={error} />
      {run ? (
        <section aria-label="Run summary" class="card">
          <p class="goal">{run.goal}</p>
          <dl class="facts">
            <dt>Run</dt>
            <dd class="mono">{run.runId}</dd>
            <dt>Status</dt>
            <dd>
              <StatusBadge status={run.status} />
              {run.phase ? ` · ${run.phase}` : ''}
            </dd>
            <dt>Iteration</dt>
            <dd>
              {run.iteration} of {run.maxIterations}
            </dd>
            {run.terminationReason ? (
              <>
                <dt>Termination reason</dt>
                <dd>
                  <strong>{run.terminationReason}</strong>
                  {run.message ? ` — ${run.message}` : ''}
                </dd>
              </>
            ) : null}
            <dt>Model</dt>
            <dd>
              {run.provider === 'offline' ? 'offline model (built in, deterministic)' : run.provider}
              {run.pin ? <div class="mono small" data-testid="run-pin">{describeRunPin(run.pin)}</div> : null}
            </dd>
            {run.refused && run.refused.length > 0 ? (
              <>
                <dt>Refused</dt>
                <dd class="warn" data-testid="run-refused">
                  {run.refused.map((r) => (
                    <div class="mono small">{describeRefusal(r)}</div>
                  ))}
                  <div class="small">The store holds these events, but no trusted server signed them: the run waits as if they were not there, and `triad decisions verify` reports them.</div>
                </dd>
              </>
            ) : null}
            {run.waitingFor ? (
              <>
                <dt>Waiting for</dt>
                <dd class="warn" data-testid="run-waiting-for">
                  {run.waitingFor} — this server's model is not the run's pin, so it does not drive it; an operator may re-pin it (resume with models and an endpoint)
                </dd>
              </>
            ) : null}
            {run.sandbox ? (
              <>
                <dt>Sandbox</dt>
                <dd class={run.sandbox.mode === 'off' ? 'warn' : undefined} data-testid="run-sandbox">
                  {run.sandbox.mode === 'off'
                    ? 'OFF — its commands ran unsandboxed, with the server\'s files and network'
                    : `bubblewrap · network ${Object.entries(run.sandbox.network).filter(([, h]) => h && h.length > 0).map(([role, h]) => `${role}: ${h!.join(', ')}`).join('; ') || 'none'}`}
                </dd>
              </>
            ) : null}
            <dt>Launched</dt>
            <dd>
              {fmtTime(run.startedAt)} by {run.launchedBy}
            </dd>
            {run.project ? (
              <>
                <dt>Project</dt>
                <dd>
                  <a href={href.project(run.project.projectId)}>{run.project.projectId}</a> · task {run.project.taskKey} · attempt {run.project.attempt}
                </dd>
              </>
            ) : null}
            {run.forkedFrom ? (
              <>
                <dt>Forked from</dt>
                <dd>
                  <a href={href.run(run.forkedFrom.runId)}>{run.forkedFrom.runId}</a> at turn {run.forkedFrom.turn}
                </dd>
              </>
            ) : null}
          </dl>
          <h2>Criteria</h2>
          <ul>
            {run.acceptanceCriteria.map((c, i) => (
              <li key={i}>{c}</li>
            ))}
          </ul>
          <Table label="Usage per role" columns={['Role', 'Turns', 'Input tokens', 'Output tokens', 'Cost']}>
            {(['architect', 'executor', 'reviewer'] as const).map((role) => (
              <tr key={role}>
                <th scope="row">{role}</th>
                <td>{run.usage.byRole[role].turns}</td>
                <td>{fmtInt(run.usage.byRole[role].inputTokens)}</td>
                <td>{fmtInt(run.usage.byRole[role].outputTokens)}</td>
                <td>{fmtUsd(costByRole[role] ?? 0)}</td>
              </tr>
            ))}
            <tr>
              <th scope="row">total</th>
              <td>{run.usage.turns}</td>
              <td>{fmtInt(run.usage.inputTokens)}</td>
              <td>{fmtInt(run.usage.outputTokens)}</td>
              <td>{fmtUsd(run.usage.costUsd)}</td>
            </tr>
          </Table>
          <div class="actions">
            {canOperate && !TERMINAL.has(run.status) ? (
              <button type="button" onClick={() => act('Cancel requested.', () => api.cancel(runId, 'cancelled from the console'))}>
                Cancel run
              </button>
            ) : null}
            {canOperate && run.status === 'suspended' ? (
              <button type="button" onClick={() => act('Resumed.', () => api.resume(runId))}>
                Resume run
              </button>
            ) : null}
            <a class="button" href={href.replay(runId)}>
              Replay
            </a>
            {canReview && run.pendingReview ? (
              <a class="button" href={href.review(run.pendingReview.reviewId)}>
                Review this run
              </a>
            ) : null}
            {canDecideTools && run.pendingApprovals ? (
              <a class="button" href={href.approvals()}>
                Decide tool calls
              </a>
            ) : null}
          </div>
          {notice ? <Notice>{notice}</Notice> : null}
          <ErrorNote error={actionError} />
        </section>
      ) : null}
      {run?.subAgents && run.subAgents.length > 0 ? <SubAgentTree agents={run.subAgents} /> : null}
      <section aria-labelledby="timeline-heading">
        <h2 id="timeline-heading">Timeline</h2>
        <p class="hint" role="status">
          {ended ? `Run ended · ${events.length} events` : connected ? `Live · ${events.length} events` : `Connecting… · ${events.length} events`}
        </p>
        <ol class="timeline" aria-label="Timeline">
          {events.map((e) => (
            <TimelineItem key={e.revision} e={e} />
          ))}
          {live ? (
            <li key="live" class="item live" aria-label={`${live.role} is writing (turn ${live.turn})`}>
              <div class="head">
                <span class="kind">{live.role}</span> turn {live.turn} · streaming
              </div>
              <div class="text streamed">{live.text}</div>
            </li>
          ) : null}
        </ol>
      </section>
    </>
  );
}

/** The delegation tree: each sub-agent under the one that spawned it (its path's parent), in spawn order. */
function SubAgentTree({ agents }: { agents: SubAgentSummary[] }) {
  const branch = (nodes: TreeNode<SubAgentSummary>[], label?: string) =>
    nodes.length === 0 ? null : (
      <ul class="tree" aria-label={label}>
        {nodes.map(({ agent: a, children }) => (
          <li key={a.path} aria-label={`Sub-agent ${a.path}`}>
            <div class="head">
              <span class="mono">{a.path}</span> · {a.role} · <StatusBadge status={a.status} /> · {a.turns} {a.turns === 1 ? 'turn' : 'turns'} · {fmtUsd(a.usage.costUsd)}
            </div>
            <div class="small">Task: {a.task}</div>
            {a.result !== undefined ? <div class="text">{a.result}</div> : null}
            {a.error ? (
              <div class="small">
                <strong>{a.error.reason}</strong> — {a.error.message}
              </div>
            ) : null}
            {branch(children)}
          </li>
        ))}
      </ul>
    );
  return (
    <section aria-labelledby="subagents-heading" class="card">
      <h2 id="subagents-heading">Sub-agents</h2>
      <p class="hint">The delegation tree: each sub-agent under the agent that spawned it.</p>
      {branch(subAgentTree(agents), 'Delegation tree')}
    </section>
  );
}

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

function TimelineItem({ e }: { e: Typed }) {
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
        <li class="item">
          {head(`${e.data.role} said`, `· turn ${e.data.turn} · ${e.data.model}${e.data.endpoint ? ` at ${e.data.endpoint}` : ''}${e.data.requestId ? ` (${e.data.requestId})` : ''} · ${fmtInt(e.data.usage.inputTokens)} in / ${fmtInt(e.data.usage.outputTokens)} out · ${fmtUsd(e.data.costUsd)} · ${e.data.durationMs} ms`)}
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
      return <li class="item phase">{head('Review opened', `${e.data.reviewId} · waits for a human`)}</li>;
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
