import { useEffect, useState } from 'preact/hooks';
import type { ChatMessage, ForkOverrides, RoleName, RunContext, RunSummary } from '../../../src/http/api-types';
import { api } from '../api';
import { href, navigate } from '../router';
import { useMay } from '../session';
import { ErrorNote, fmtInt, fmtUsd, Json, StatusBadge } from '../ui';

const ROLES: RoleName[] = ['architect', 'executor', 'reviewer'];

function Message({ m }: { m: ChatMessage }) {
  const blocks = typeof m.content === 'string' ? [{ type: 'text' as const, text: m.content }] : m.content;
  return (
    <li class={`msg msg-${m.role}`}>
      <div class="small">{m.role}</div>
      {blocks.map((b, i) =>
        b.type === 'text' ? (
          <div key={i} class="text">
            {b.text}
          </div>
        ) : b.type === 'tool_use' ? (
          <details key={i}>
            <summary>
              tool call <strong>{b.name}</strong>
            </summary>
            <Json value={b.input} />
          </details>
        ) : b.type === 'tool_result' ? (
          <details key={i}>
            <summary>tool result{b.is_error ? ' (error)' : ''}</summary>
            <pre class="json">{b.content}</pre>
          </details>
        ) : b.type === 'thinking' ? (
          <details key={i}>
            <summary>thinking</summary>
            <pre class="json">{b.thinking}</pre>
          </details>
        ) : (
          <div key={i} class="small">
            thinking (redacted by the provider)
          </div>
        ),
      )}
    </li>
  );
}

export function ReplayPage({ runId }: { runId: string }) {
  const canFork = useMay('operateRuns');
  const [run, setRun] = useState<RunSummary | null>(null);
  const [head, setHead] = useState(0);
  const [revision, setRevision] = useState<number | null>(null);
  const [context, setContext] = useState<RunContext | null>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    api.run(runId).then(setRun, setError);
    // The stream's last revision: the latest context's (a summary's is that of the last event that changed it).
    api.context(runId).then((c) => {
      setHead(c.revision);
      setContext(c);
      setRevision(c.revision);
    }, setError);
  }, [runId]);

  useEffect(() => {
    if (revision === null) return;
    let stale = false;
    api.context(runId, revision).then(
      (c) => !stale && (setContext(c), setError(null)),
      (err) => !stale && setError(err),
    );
    return () => {
      stale = true;
    };
  }, [runId, revision]);

  const set = (n: number) => setRevision(Math.max(0, Math.min(head, n)));

  return (
    <>
      <p>
        <a href={href.run(runId)}>← Run</a>
      </p>
      <h1>Replay</h1>
      {run ? <p class="goal">{run.goal}</p> : null}
      <ErrorNote error={error} />
      {run && revision !== null ? (
        <section class="card" aria-label="Revision">
          <label for="revision-range">Revision (0 to {head})</label>
          <div class="toolbar">
            <button type="button" onClick={() => set(revision - 1)} disabled={revision <= 0} aria-label="Previous revision">
              ‹
            </button>
            <input id="revision-range" type="range" min={0} max={head} value={revision} onInput={(e) => set(Number(e.currentTarget.value))} />
            <button type="button" onClick={() => set(revision + 1)} disabled={revision >= head} aria-label="Next revision">
              ›
            </button>
            <label for="revision-number" class="sr-only">
              Revision number
            </label>
            <input id="revision-number" type="number" min={0} max={head} value={revision} onChange={(e) => set(Number(e.currentTarget.value))} />
          </div>
        </section>
      ) : null}
      {context ? (
        <section aria-label={`Context at revision ${context.revision}`}>
          <h2>Context at revision {context.revision}</h2>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={context.status} />
              {context.phase ? ` · ${context.phase}` : ''} · iteration {context.iteration}
            </dd>
            <dt>Usage</dt>
            <dd>
              {context.usage.turns} turns · {fmtInt(context.usage.inputTokens)} in / {fmtInt(context.usage.outputTokens)} out · {fmtUsd(context.usage.costUsd)}
            </dd>
            <dt>Completeness</dt>
            <dd>
              {Math.round(context.completeness.score * 100)}% ({context.completeness.understood} of {context.completeness.events} events understood)
              {context.completeness.missing.length > 0 ? ` · missing: ${context.completeness.missing.join('; ')}` : ''}
            </dd>
          </dl>
          <div class="roles">
            {ROLES.map((role) => (
              <section key={role} aria-label={`${role} conversation`} class="card">
                <h3>
                  {role} · {context.roles[role].turns} turns · {context.roles[role].messages.length} messages
                </h3>
                <ol class="conversation">
                  {context.roles[role].messages.map((m, i) => (
                    <Message key={i} m={m} />
                  ))}
                </ol>
              </section>
            ))}
          </div>
          {canFork ? <ForkForm runId={runId} maxTurn={context.usage.turns} /> : null}
        </section>
      ) : null}
    </>
  );
}

function ForkForm({ runId, maxTurn }: { runId: string; maxTurn: number }) {
  const [turn, setTurn] = useState(String(maxTurn));
  const [overrides, setOverrides] = useState<Record<RoleName, { model: string; systemPrompt: string }>>({
    architect: { model: '', systemPrompt: '' },
    executor: { model: '', systemPrompt: '' },
    reviewer: { model: '', systemPrompt: '' },
  });
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const team: NonNullable<ForkOverrides['team']> = {};
    for (const role of ROLES) {
      const o = overrides[role];
      const cfg: { model?: string; systemPrompt?: string } = {};
      if (o.model.trim()) cfg.model = o.model.trim();
      if (o.systemPrompt.trim()) cfg.systemPrompt = o.systemPrompt;
      if (Object.keys(cfg).length > 0) team[role] = cfg;
    }
    try {
      const result = await api.fork(runId, Number(turn), Object.keys(team).length > 0 ? { team } : undefined);
      navigate(href.run(result.runId));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card" aria-labelledby="fork-heading">
      <h2 id="fork-heading">Fork from a turn</h2>
      <form onSubmit={submit} aria-label="Fork">
        <label for="fork-turn">Turn (0 to {maxTurn})</label>
        <input id="fork-turn" type="number" min={0} max={maxTurn} required value={turn} onInput={(e) => setTurn(e.currentTarget.value)} />
        <div class="grid">
          {ROLES.map((role) => (
            <fieldset key={role}>
              <legend>{role} overrides</legend>
              <label for={`fork-model-${role}`}>{role} model</label>
              <input id={`fork-model-${role}`} value={overrides[role].model} onInput={(e) => setOverrides({ ...overrides, [role]: { ...overrides[role], model: e.currentTarget.value } })} />
              <label for={`fork-prompt-${role}`}>{role} system prompt</label>
              <textarea id={`fork-prompt-${role}`} rows={2} value={overrides[role].systemPrompt} onInput={(e) => setOverrides({ ...overrides, [role]: { ...overrides[role], systemPrompt: e.currentTarget.value } })} />
            </fieldset>
          ))}
        </div>
        <button type="submit" disabled={busy}>
          Fork run
        </button>
        <ErrorNote error={error} />
      </form>
    </section>
  );
}
