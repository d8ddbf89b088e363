// The run page's timeline as groups (pure: events in, groups out), and where a run's turns are in
// its stream: what the run page folds and navigates by, and what replay and fork pick.

/** The little of a recorded event these functions read. */
export interface TimelineEvent {
  type: string;
  revision: number;
  recordedAt: string;
  data: unknown;
}

export type GroupKind = 'start' | 'plan' | 'execute' | 'review' | 'decision' | 'end';

/** A stretch of the timeline: one phase of one iteration (or the start, a human decision, the end). */
export interface TimelineGroup {
  /** Stable while the run grows: the revision of the group's first event. */
  key: string;
  kind: GroupKind;
  /** 0 before the first phase. */
  iteration: number;
  /** Indices into the events, `first` to `last` inclusive. */
  first: number;
  last: number;
  events: number;
  /** Model turns completed in the group, and the run's turn numbers of the first and last. */
  turns: number;
  firstTurn?: number;
  lastTurn?: number;
  toolCalls: number;
  startedAt: string;
  endedAt: string;
  durationMs: number;
  /** The reviewer's verdict (a review group), the review and its outcome (a decision group), the end's status. */
  verdict?: string;
  review?: { reviewId: string; outcome?: string; by?: string };
  ended?: { status: string; reason: string };
}

type Data = Record<string, unknown>;
const str = (d: unknown, k: string): string | undefined => (typeof (d as Data)?.[k] === 'string' ? ((d as Data)[k] as string) : undefined);
const num = (d: unknown, k: string): number | undefined => (typeof (d as Data)?.[k] === 'number' ? ((d as Data)[k] as number) : undefined);

const PHASE_KIND: Record<string, GroupKind> = { planning: 'plan', executing: 'execute', reviewing: 'review' };
const ROLE_KIND: Record<string, GroupKind> = { architect: 'plan', executor: 'execute', reviewer: 'review' };

/** The turn a fork starts after (0 for a run that is not a fork): its own turns are numbered on from there. */
export function turnOffset(events: readonly TimelineEvent[]): number {
  const first = events[0];
  if (first?.type !== 'RunForked') return 0;
  return num((first.data as Data).parent, 'turn') ?? 0;
}

/**
 * The timeline in groups, in order: the start (launch or fork, a driver's claim), then each phase
 * of each iteration (an iteration's feedback opens its executor group), a review waiting for and
 * decided by a human, and the end. Anything else joins the group it happens in.
 */
export function groupTimeline(events: readonly TimelineEvent[]): TimelineGroup[] {
  const groups: TimelineGroup[] = [];
  let turn = turnOffset(events);
  let iteration = 0;
  let current: TimelineGroup | undefined;
  /** An iteration's start opens the executor group its PhaseStarted then joins. */
  let awaitingPhase = false;

  const open = (kind: GroupKind, index: number): TimelineGroup => {
    const e = events[index];
    current = { key: `g${e.revision}`, kind, iteration, first: index, last: index, events: 0, turns: 0, toolCalls: 0, startedAt: e.recordedAt, endedAt: e.recordedAt, durationMs: 0 };
    groups.push(current);
    return current;
  };

  events.forEach((e, index) => {
    let group = current;
    switch (e.type) {
      case 'IterationStarted':
        iteration = num(e.data, 'iteration') ?? iteration;
        group = open('execute', index);
        awaitingPhase = true;
        break;
      case 'PhaseStarted': {
        iteration = num(e.data, 'iteration') ?? iteration;
        const kind = PHASE_KIND[str(e.data, 'phase') ?? ''] ?? 'execute';
        if (!(awaitingPhase && group?.kind === kind && group.iteration === iteration)) group = open(kind, index);
        awaitingPhase = false;
        break;
      }
      case 'ReviewOpened':
        iteration = num(e.data, 'iteration') ?? iteration;
        group = open('decision', index);
        group.review = { reviewId: str(e.data, 'reviewId') ?? '' };
        break;
      case 'RunEnded':
        group = open('end', index);
        group.ended = { status: str(e.data, 'status') ?? '', reason: str(e.data, 'reason') ?? '' };
        break;
      case 'ModelCallStarted':
      case 'ModelCallCompleted':
      case 'ToolCallRequested':
      case 'ToolCallCompleted':
        // A fork (or a resumed run) whose stream begins within a phase: that phase's group.
        if (!group || group.kind === 'start' || group.kind === 'end') group = open(ROLE_KIND[str(e.data, 'role') ?? ''] ?? 'execute', index);
        break;
      default:
        if (!group) group = open('start', index);
    }
    group!.last = index;
    group!.events += 1;
    group!.endedAt = e.recordedAt;
    if (e.type === 'ModelCallCompleted') {
      turn += 1;
      group!.turns += 1;
      group!.firstTurn ??= turn;
      group!.lastTurn = turn;
    }
    if (e.type === 'ToolCallCompleted') group!.toolCalls += 1;
    if (e.type === 'VerdictSubmitted') group!.verdict = str(e.data, 'verdict');
    if (e.type === 'ReviewDecided' && group!.review) Object.assign(group!.review, { outcome: str(e.data, 'outcome'), by: str(e.data, 'decider') });
  });
  for (const g of groups) g.durationMs = Math.max(0, Date.parse(g.endedAt) - Date.parse(g.startedAt));
  return groups;
}

/** The run's turn numbers, in order, with the index of each turn's ModelCallCompleted event. */
export function turnIndex(events: readonly TimelineEvent[]): Array<{ turn: number; index: number }> {
  let turn = turnOffset(events);
  const out: Array<{ turn: number; index: number }> = [];
  events.forEach((e, index) => {
    if (e.type === 'ModelCallCompleted') out.push({ turn: ++turn, index });
  });
  return out;
}

/** What a human is asked or decides: turn N is before them (as the server's fork point is). */
const GATES = new Set(['ReviewOpened', 'ReviewDecided', 'ToolApprovalRequested', 'ToolApprovalDecided']);

/**
 * Where turn N is in the run's own stream, by the server's rule for a fork point: right after the
 * Nth model turn and its tool results, before the next model call or anything a human is asked
 * (or the run's end). `index` is the last event of that stretch, `revision` its revision — what
 * replay at turn N reads. Undefined for a turn the run has not reached, or one before a fork's start.
 */
export function turnPoint(events: readonly TimelineEvent[], turn: number): { index: number; revision: number } | undefined {
  let completed = turnOffset(events);
  if (turn < completed) return undefined;
  let index = -1;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if ((e.type === 'ModelCallStarted' || GATES.has(e.type)) && completed >= turn) break;
    if (e.type === 'RunEnded' || e.type === 'RunSuspended') break;
    if (e.type === 'ModelCallCompleted') completed++;
    index = i;
  }
  if (completed < turn || index < 0) return undefined;
  return { index, revision: events[index].revision };
}

/** The turns replay and fork may pick, from the first (0, or where a fork starts) to the last completed. */
export function turnRange(events: readonly TimelineEvent[]): { from: number; to: number } {
  const from = turnOffset(events);
  return { from, to: from + events.filter((e) => e.type === 'ModelCallCompleted').length };
}

/**
 * What a fork at turn N would do first, from what the run did next: `review` when the run made no
 * more model turns before a human review (the fork reaches the gate again at once, with 0 turns of
 * its own), `end` when it ended right there (the fork has nothing to do either), undefined when
 * there is work left (a model turn, a tool call waiting for approval, a suspended run) or the run
 * has not gone further yet.
 */
export function forkOutlook(events: readonly TimelineEvent[], turn: number): { next: 'review'; reviewId: string } | { next: 'end'; reason: string } | undefined {
  const point = turnPoint(events, turn);
  if (!point) return undefined;
  for (let i = point.index + 1; i < events.length; i++) {
    const e = events[i];
    if (e.type === 'ReviewOpened') return { next: 'review', reviewId: str(e.data, 'reviewId') ?? '' };
    if (e.type === 'RunEnded') return { next: 'end', reason: str(e.data, 'reason') ?? '' };
    if (e.type === 'ModelCallStarted' || e.type === 'ToolApprovalRequested' || e.type === 'RunSuspended') return undefined;
  }
  return undefined;
}
