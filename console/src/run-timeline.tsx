// A run's timeline in groups (timeline.ts): each folded to one line with its counts and time, the
// current one open, the others opened on demand; cards are built only for open groups, so a long
// run's page stays light. Turn navigation opens the group a turn is in and moves focus to it.
import type { VNode } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { RoleName } from './api';
import { groupTimeline, turnIndex, type TimelineGroup } from './timeline';
import { reviewHref, TimelineItem, type Typed } from './timeline-item';

export interface LiveText {
  role: RoleName;
  turn: number;
  text: string;
}

const KIND_TITLE: Record<TimelineGroup['kind'], string> = {
  start: 'Start',
  plan: 'Architect plan',
  execute: 'Executor turns',
  review: 'Reviewer verdict',
  decision: 'Human decision',
  end: 'Run ended',
};

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

export const fmtDuration = (ms: number): string =>
  ms < 1000 ? `${ms} ms` : ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;

/** A group's title: what it is, in which iteration, and its outcome when it has one. */
export function groupTitle(g: TimelineGroup, events: readonly Typed[]): string {
  if (g.kind === 'start') {
    const first = events[g.first];
    return first?.type === 'RunForked' ? `Forked from ${first.data.parent.runId} at turn ${first.data.parent.turn}` : 'Launched';
  }
  if (g.kind === 'end') return `Run ended · ${g.ended?.status ?? ''} · ${g.ended?.reason ?? ''}`;
  const outcome = g.kind === 'review' && g.verdict ? `: ${g.verdict}` : g.kind === 'decision' && g.review?.outcome ? `: ${g.review.outcome}${g.review.by ? ` by ${g.review.by}` : ''}` : '';
  return `Iteration ${g.iteration} · ${KIND_TITLE[g.kind]}${outcome}`;
}

/** A group's counts and time, on its line. */
export function groupCounts(g: TimelineGroup): string {
  const turns = g.turns === 0 ? '0 turns' : `${plural(g.turns, 'turn')} (${g.firstTurn === g.lastTurn ? `turn ${g.firstTurn}` : `turns ${g.firstTurn}–${g.lastTurn}`})`;
  return `${turns} · ${plural(g.toolCalls, 'tool call')} · ${plural(g.events, 'event')} · ${fmtDuration(g.durationMs)}`;
}

export function RunTimeline({ events, live }: { events: Typed[]; live: LiveText | null }) {
  const groups = useMemo(() => groupTimeline(events), [events]);
  const turns = useMemo(() => turnIndex(events), [events]);
  /** Groups the person opened or closed; the others follow the run (the current one open). */
  const [toggled, setToggled] = useState<Record<string, boolean>>({});
  /** The turn navigated to (a new object each time, so going to the same turn again moves the focus again). */
  const [target, setTarget] = useState<{ turn: number } | null>(null);
  const selected = target?.turn ?? null;
  const [jump, setJump] = useState('');
  // A recorded event never changes: its card, once built, is the same element at every render, which
  // Preact does not diff again. A busy open group then costs its new cards, not all of them.
  const built = useRef(new Map<number, VNode>()).current;
  const card = (e: Typed, index: number): VNode => {
    let v = built.get(e.revision);
    if (!v) {
      v = <TimelineItem key={e.revision} e={e} turn={e.type === 'ModelCallCompleted' ? turnOf(turns, index) : undefined} />;
      built.set(e.revision, v);
    }
    return v;
  };
  const current = groups.length > 0 ? groups[groups.length - 1].key : undefined;
  const isOpen = (g: TimelineGroup) => toggled[g.key] ?? g.key === current;

  const goTo = (turn: number) => {
    const at = turns.find((t) => t.turn === turn);
    if (!at) return;
    const group = groups.find((g) => g.first <= at.index && at.index <= g.last);
    if (group && !isOpen(group)) setToggled((t) => ({ ...t, [group.key]: true }));
    setTarget({ turn });
  };
  // After the group has opened (this render), its card takes the focus and the view.
  useEffect(() => {
    if (target === null) return;
    const card = document.getElementById(`turn-${target.turn}`);
    card?.focus({ preventScroll: true });
    card?.scrollIntoView({ block: 'center' });
  }, [target]);

  const firstTurn = turns[0]?.turn;
  const lastTurn = turns[turns.length - 1]?.turn;
  const position = selected === null ? -1 : turns.findIndex((t) => t.turn === selected);
  const previous = position > 0 ? turns[position - 1].turn : position === -1 ? lastTurn : undefined;
  const next = position >= 0 && position < turns.length - 1 ? turns[position + 1].turn : position === -1 ? firstTurn : undefined;

  return (
    <>
      {turns.length > 0 ? (
        <nav aria-label="Turns" class="toolbar turns">
          <button type="button" onClick={() => previous !== undefined && goTo(previous)} disabled={previous === undefined}>
            ‹ Previous turn
          </button>
          <button type="button" onClick={() => next !== undefined && goTo(next)} disabled={next === undefined}>
            Next turn ›
          </button>
          <form
            class="toolbar"
            aria-label="Jump to a turn"
            onSubmit={(e) => {
              e.preventDefault();
              goTo(Number(jump));
            }}
          >
            <label for="turn-jump">Jump to turn</label>
            <input id="turn-jump" type="number" min={firstTurn} max={lastTurn} required value={jump} onInput={(e) => setJump(e.currentTarget.value)} />
            <button type="submit">Go</button>
          </form>
          <span class="small" role="status">
            {selected === null ? `${plural(turns.length, 'turn')}: ${firstTurn}–${lastTurn}` : `Turn ${selected} of ${firstTurn}–${lastTurn}`}
          </span>
        </nav>
      ) : null}
      <ol class="timeline" aria-label="Timeline">
        {groups.map((g) => {
          const open = isOpen(g);
          const title = groupTitle(g, events);
          const waiting = g.kind === 'decision' && g.review && !g.review.outcome ? g.review.reviewId : undefined;
          return (
            <li key={g.key} class={`group group-${g.kind}${open ? ' open' : ''}`}>
              <div class="group-line">
                <button type="button" class="fold" aria-expanded={open} aria-controls={open ? `cards-${g.key}` : undefined} onClick={() => setToggled((t) => ({ ...t, [g.key]: !open }))}>
                  <span aria-hidden="true">{open ? '▾' : '▸'}</span> <span class="kind">{title}</span> <span class="small">· {groupCounts(g)}</span>
                </button>
                {waiting ? (
                  <a class="gate" href={reviewHref(waiting)}>
                    Review {waiting} waits for a human
                  </a>
                ) : null}
              </div>
              {open ? (
                <ol id={`cards-${g.key}`} class="cards" aria-label={title}>
                  {events.slice(g.first, g.last + 1).map((e, i) => card(e, g.first + i))}
                </ol>
              ) : null}
            </li>
          );
        })}
        {live ? (
          <li key="live" class="item live" aria-label={`${live.role} is writing (turn ${live.turn})`}>
            <div class="head">
              <span class="kind">{live.role}</span> turn {live.turn} · streaming
            </div>
            <div class="text streamed">{live.text}</div>
          </li>
        ) : null}
      </ol>
    </>
  );
}

/** The run's turn number of the ModelCallCompleted at `index` (turns are in index order). */
function turnOf(turns: ReadonlyArray<{ turn: number; index: number }>, index: number): number | undefined {
  let lo = 0;
  let hi = turns.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (turns[mid].index === index) return turns[mid].turn;
    if (turns[mid].index < index) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}
