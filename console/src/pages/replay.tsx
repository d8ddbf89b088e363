import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, type ChatMessage, type ForkOverrides, type RecordedEvent, type RoleName, type RunContext, type RunSummary } from '../api';
import { href, navigate } from '../router';
import { useMay } from '../session';
import { forkOutlook, turnPoint, turnRange } from '../timeline';
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

/** The run's own events, every page of them: turns are counted from these. */
async function allEvents(runId: string): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  for (;;) {
    const page = await api.events(runId, events.length === 0 ? 0 : events[events.length - 1].revision + 1);
    events.push(...page.events);
    if (page.events.length < EVENTS_PAGE) return events;
  }
}

/** What `GET /v1/runs/:id/events` answers at most per read. */
const EVENTS_PAGE = 10_000;

export function ReplayPage({ runId }: { runId: string }) {
  const canFork = useMay('operateRuns');
  const [run, setRun] = useState<RunSummary | null>(null);
  const [events, setEvents] = useState<RecordedEvent[] | null>(null);
  const [turn, setTurn] = useState<number | null>(null);
  /** The context on show, and the turn it was read for (the slider may have moved on since). */
  const [shown, setShown] = useState<{ turn: number; context: RunContext } | null>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    api.run(runId).then(setRun, setError);
    allEvents(runId).then((all) => {
      setEvents(all);
      setTurn(turnRange(all).to);
    }, setError);
  }, [runId]);

  const range = useMemo(() => (events ? turnRange(events) : { from: 0, to: 0 }), [events]);
  // Turn N is read at the revision the server would fork it at.
  const point = useMemo(() => (events && turn !== null ? turnPoint(events, turn) : undefined), [events, turn]);

  useEffect(() => {
    if (!point || turn === null) return;
    let stale = false;
    api.context(runId, point.revision).then(
      (c) => !stale && (setShown({ turn, context: c }), setError(null)),
      (err) => !stale && setError(err),
    );
    return () => {
      stale = true;
    };
  }, [runId, turn, point?.revision]);

  const set = (n: number) => Number.isFinite(n) && setTurn(Math.max(range.from, Math.min(range.to, Math.round(n))));

  return (
    <>
      <p>
        <a href={href.run(runId)}>← Run</a>
      </p>
      <h1>Replay</h1>
      {run ? <p class="goal">{run.goal}</p> : null}
      <ErrorNote error={error} />
      {run && events && turn !== null ? (
        <section class="card" aria-label="Turn">
          <label for="turn-range">
            Turn ({range.from} to {range.to}){range.from > 0 ? ' — a fork: the turns before are its parent\'s' : ''}
          </label>
          <div class="toolbar">
            <button type="button" onClick={() => set(turn - 1)} disabled={turn <= range.from} aria-label="Previous turn">
              ‹
            </button>
            <input id="turn-range" type="range" min={range.from} max={range.to} step={1} value={turn} onInput={(e) => set(Number(e.currentTarget.value))} />
            <button type="button" onClick={() => set(turn + 1)} disabled={turn >= range.to} aria-label="Next turn">
              ›
            </button>
            <label for="turn-number" class="sr-only">
              Turn number
            </label>
            <input id="turn-number" type="number" min={range.from} max={range.to} value={turn} onChange={(e) => set(Number(e.currentTarget.value))} />
          </div>
          {point ? <p class="small">Right after turn {turn} and its tool results: revision {point.revision} of the run's stream.</p> : null}
        </section>
      ) : null}
      {shown && turn !== null ? (
        <section aria-label={`Context at turn ${shown.turn}`}>
          <h2>Context at turn {shown.turn}</h2>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={shown.context.status} />
              {shown.context.phase ? ` · ${shown.context.phase}` : ''} · iteration {shown.context.iteration}
            </dd>
            <dt>Usage</dt>
            <dd>
              {shown.context.usage.turns} turns · {fmtInt(shown.context.usage.inputTokens)} in / {fmtInt(shown.context.usage.outputTokens)} out · {fmtUsd(shown.context.usage.costUsd)}
            </dd>
            <dt>Completeness</dt>
            <dd>
              {Math.round(shown.context.completeness.score * 100)}% ({shown.context.completeness.understood} of {shown.context.completeness.events} events understood)
              {shown.context.completeness.missing.length > 0 ? ` · missing: ${shown.context.completeness.missing.join('; ')}` : ''}
            </dd>
          </dl>
          <div class="roles">
            {ROLES.map((role) => (
              <section key={role} aria-label={`${role} conversation`} class="card">
                <h3>
                  {role} · {shown.context.roles[role].turns} turns · {shown.context.roles[role].messages.length} messages
                </h3>
                <ol class="conversation">
                  {shown.context.roles[role].messages.map((m, i) => (
                    <Message key={i} m={m} />
                  ))}
                </ol>
              </section>
            ))}
          </div>
        </section>
      ) : null}
      {/* The fork form stays one element as the turn moves (its overrides kept), whether or not that turn's context has arrived. */}
      {canFork && events && turn !== null ? <ForkForm runId={runId} events={events} turn={turn} /> : null}
    </>
  );
}

/** Fork at the turn replay shows; a fork that would have nothing to do says so first, and waits for a confirmation. */
function ForkForm({ runId, events, turn }: { runId: string; events: RecordedEvent[]; turn: number }) {
  const [overrides, setOverrides] = useState<Record<RoleName, { model: string; systemPrompt: string }>>({
    architect: { model: '', systemPrompt: '' },
    executor: { model: '', systemPrompt: '' },
    reviewer: { model: '', systemPrompt: '' },
  });
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  /** The turn a warning was shown for: confirming forks at that turn. */
  const [warned, setWarned] = useState<number | null>(null);
  const outlook = useMemo(() => forkOutlook(events, turn), [events, turn]);
  const fork = async () => {
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
      const result = await api.fork(runId, turn, Object.keys(team).length > 0 ? { team } : undefined);
      navigate(href.run(result.runId));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const submit = (e: Event) => {
    e.preventDefault();
    if (outlook && warned !== turn) setWarned(turn);
    else void fork(); // fork() shows its own failure (ErrorNote).
  };
  return (
    <section class="card" aria-labelledby="fork-heading">
      <h2 id="fork-heading">Fork at turn {turn}</h2>
      <form onSubmit={submit} aria-label="Fork">
        <p class="hint">A new run from right after turn {turn} (the turn replay shows), optionally with another model or system prompt per role.</p>
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
        {outlook && warned === turn ? (
          <div role="alert" class="card warn-box" aria-label="Nothing left to do">
            <p>
              <strong>A fork at turn {turn} has nothing left to do.</strong>{' '}
              {outlook.next === 'review'
                ? `After this turn the run made no more model turns before its review (${outlook.reviewId}): the fork would make 0 turns and go straight back to the review gate, with a review of its own.`
                : `The run ended right after this turn (${outlook.reason}): the fork would end the same way without a turn of its own.`}
            </p>
            <button type="submit" disabled={busy}>
              Fork anyway
            </button>
            <button type="button" onClick={() => setWarned(null)}>
              Cancel
            </button>
          </div>
        ) : (
          <button type="submit" disabled={busy}>
            Fork at turn {turn}
          </button>
        )}
        <ErrorNote error={error} />
      </form>
    </section>
  );
}
