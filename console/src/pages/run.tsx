import { useEffect, useMemo, useState } from 'preact/hooks';
import { TEAM_RUN_EVENT_TYPES } from '../../../src/team/domain/run-events';
import { describeRunPin } from '../../../src/team/domain/model-pin';
import { describeRefusal } from '../../../src/attestation/gate-refusal';
import { api, type SubAgentSummary, type TextDelta } from '../api';
import { subAgentTree, type TreeNode } from '../graphs';
import { useFreshRead } from '../use-fresh-read';
import { href } from '../router';
import { useMay } from '../session';
import { ErrorNote, fmtInt, fmtTime, fmtUsd, Notice, StatusBadge, Table } from '../ui';
import { RunTimeline, type LiveText } from '../run-timeline';
import type { Typed } from '../timeline-item';

/** Every event type a run's stream carries (the server's list): EventSource delivers named events only to their own listeners. */
const EVENT_TYPES = TEAM_RUN_EVENT_TYPES;
const TERMINAL = new Set(['completed', 'failed', 'blocked', 'cancelled']);

/** Events arriving together (a long run's catch-up) are shown together: one render per this many ms, not one per event. */
const BATCH_MS = 50;

/** The run's events through EventSource (the session cookie authenticates it), plus live model text. */
function useRunStream(runId: string) {
  const [events, setEvents] = useState<Typed[]>([]);
  const [live, setLive] = useState<LiveText | null>(null);
  const [connected, setConnected] = useState(false);
  const [ended, setEnded] = useState(false);

  useEffect(() => {
    const source = new EventSource(`/v1/runs/${encodeURIComponent(runId)}/events`);
    const seen = new Set<number>();
    let pending: Typed[] = [];
    let flush: ReturnType<typeof setTimeout> | undefined;
    const show = () => {
      flush = undefined;
      const batch = pending;
      pending = [];
      setEvents((prev) => [...prev, ...batch]);
    };
    const onEvent = (m: MessageEvent<string>) => {
      const e = JSON.parse(m.data) as Typed;
      if (seen.has(e.revision)) return;
      seen.add(e.revision);
      pending.push(e);
      flush ??= setTimeout(show, BATCH_MS);
      if (e.type === 'ModelCallCompleted' || e.type === 'ModelCallFailed') setLive((l) => (l && l.role === e.data.role && l.turn === e.data.turn ? null : l));
      if (e.type === 'RunEnded' && TERMINAL.has(e.data.status)) {
        // The end and everything before it, together: nothing more comes.
        clearTimeout(flush);
        show();
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
    return () => {
      clearTimeout(flush);
      source.close();
    };
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
          <Table label="Usage per role" columns={['Role', 'Turns', 'Input tokens', 'Output tokens', 'Cache read', 'Cache written', 'Cost']}>
            {(['architect', 'executor', 'reviewer'] as const).map((role) => (
              <tr key={role}>
                <th scope="row">{role}</th>
                <td>{run.usage.byRole[role].turns}</td>
                <td>{fmtInt(run.usage.byRole[role].inputTokens)}</td>
                <td>{fmtInt(run.usage.byRole[role].outputTokens)}</td>
                <td>{fmtInt(run.usage.byRole[role].cacheReadTokens)}</td>
                <td>{fmtInt(run.usage.byRole[role].cacheWriteTokens)}</td>
                <td>{fmtUsd(costByRole[role] ?? 0)}</td>
              </tr>
            ))}
            <tr>
              <th scope="row">total</th>
              <td>{run.usage.turns}</td>
              <td>{fmtInt(run.usage.inputTokens)}</td>
              <td>{fmtInt(run.usage.outputTokens)}</td>
              <td>{fmtInt(run.usage.cacheReadTokens)}</td>
              <td>{fmtInt(run.usage.cacheWriteTokens)}</td>
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
        <RunTimeline events={events} live={live} />
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

