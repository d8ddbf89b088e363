import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import { forkPoint } from '../../src/session-replay/fork';
import { forkOutlook, groupTimeline, turnIndex, turnPoint, turnRange, type TimelineEvent } from '../../console/src/timeline';

// The run page's groups and turns, from events shaped as a run records them: given a stream, when
// grouped or asked for turn N, then the groups and points below. Turn N must be where the server
// forks (src/session-replay/fork.ts), or replay would show one place and fork start from another.

type Step = [type: string, data?: Record<string, unknown>];

/** A run's stream from steps, one second apart. */
function stream(steps: Step[], runId = 'r1'): RecordedEvent[] {
  return steps.map(([type, data = {}], revision) => ({
    id: `e${revision}`,
    type,
    streamId: `run-${runId}`,
    revision,
    position: revision,
    data,
    metadata: { runId, correlationId: runId, causationId: null, actor: 'system', schemaVersion: 1 },
    recordedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, revision)).toISOString(),
  })) as unknown as RecordedEvent[];
}

/** One model turn of `role` with one tool call. */
const turn = (role: string, tool = 'read_file'): Step[] => [
  ['ModelCallStarted', { role }],
  ['ModelCallCompleted', { role }],
  ['ToolCallRequested', { role, name: tool }],
  ['ToolCallCompleted', { role, name: tool }],
];

/** Plan, two iterations (the first sent back by a human), each at the gate. */
const RUN: Step[] = [
  ['RunLaunched'],
  ['DriverClaimed'],
  ['PhaseStarted', { phase: 'planning', role: 'architect', iteration: 1 }],
  ...turn('architect', 'submit_plan'),
  ['PlanSubmitted'],
  ['PhaseStarted', { phase: 'executing', role: 'executor', iteration: 1 }],
  ...turn('executor', 'write_file'),
  ...turn('executor', 'submit_work'),
  ['WorkSubmitted', { iteration: 1 }],
  ['PhaseStarted', { phase: 'reviewing', role: 'reviewer', iteration: 1 }],
  ...turn('reviewer', 'submit_verdict'),
  ['VerdictSubmitted', { iteration: 1, verdict: 'APPROVE' }],
  ['ReviewOpened', { iteration: 1, reviewId: 'rev_r1_1' }],
  ['ReviewDecided', { iteration: 1, reviewId: 'rev_r1_1', outcome: 'rejected', decider: 'user:bob' }],
  ['IterationStarted', { iteration: 2 }],
  ['PhaseStarted', { phase: 'executing', role: 'executor', iteration: 2 }],
  ...turn('executor', 'submit_work'),
  ['WorkSubmitted', { iteration: 2 }],
  ['PhaseStarted', { phase: 'reviewing', role: 'reviewer', iteration: 2 }],
  ...turn('reviewer', 'submit_verdict'),
  ['VerdictSubmitted', { iteration: 2, verdict: 'APPROVE' }],
  ['ReviewOpened', { iteration: 2, reviewId: 'rev_r1_2' }],
];

describe("the run page's timeline groups", () => {
  it('given a run sent back once by a human, when grouped, then one group per phase of each iteration, a decision group per review, with their counts and times', () => {
    const groups = groupTimeline(stream(RUN));
    expect(groups.map((g) => [g.kind, g.iteration, g.turns, g.toolCalls, g.events])).toEqual([
      ['start', 0, 0, 0, 2],
      ['plan', 1, 1, 1, 6],
      ['execute', 1, 2, 2, 10],
      ['review', 1, 1, 1, 6],
      ['decision', 1, 0, 0, 2],
      ['execute', 2, 1, 1, 7],
      ['review', 2, 1, 1, 6],
      ['decision', 2, 0, 0, 1],
    ]);
    const [, plan, execute, review, decision, again] = groups;
    expect([plan.firstTurn, plan.lastTurn, execute.firstTurn, execute.lastTurn, again.firstTurn]).toEqual([1, 1, 2, 3, 5]);
    // One second per event: a group's duration runs from its first event to its last.
    expect(execute.durationMs).toBe(9000);
    expect(review.verdict).toBe('APPROVE');
    expect(decision.review).toEqual({ reviewId: 'rev_r1_1', outcome: 'rejected', by: 'user:bob' });
    expect(groups[7].review).toEqual({ reviewId: 'rev_r1_2' });
    // Every event is in exactly one group, in order.
    expect(groups.map((g) => [g.first, g.last])).toEqual(groups.map((g, i) => [i === 0 ? 0 : groups[i - 1].last + 1, g.last]));
    expect(groups[groups.length - 1].last).toBe(RUN.length - 1);
    // Keys are the first events' revisions: stable as the run grows.
    expect(groupTimeline(stream(RUN.slice(0, 18))).map((g) => g.key)).toEqual(groups.slice(0, 3).map((g) => g.key));
  });

  it('given a run that ended, when grouped, then its end is a group of its own with the status and reason', () => {
    const groups = groupTimeline(stream([...RUN, ['ReviewDecided', { outcome: 'approved' }], ['RunEnded', { status: 'completed', reason: 'COMPLETED' }]]));
    expect(groups.slice(-2).map((g) => [g.kind, g.events])).toEqual([
      ['decision', 2],
      ['end', 1],
    ]);
    expect(groups[groups.length - 1].ended).toEqual({ status: 'completed', reason: 'COMPLETED' });
  });

  it("given a fork's stream (RunForked, then turns within a phase), when grouped, then its turns are numbered on from the fork's turn, in the phase of their role", () => {
    const fork = stream([['RunForked', { parent: { runId: 'r1', revision: 20, turn: 3 } }], ['DriverClaimed'], ...turn('executor'), ['WorkSubmitted', { iteration: 1 }]], 'f1');
    const groups = groupTimeline(fork);
    expect(groups.map((g) => [g.kind, g.firstTurn, g.events])).toEqual([
      ['start', undefined, 2],
      ['execute', 4, 5],
    ]);
    expect(turnIndex(fork)).toEqual([{ turn: 4, index: 3 }]);
    expect(turnRange(fork)).toEqual({ from: 3, to: 4 });
  });

  it('given no events, when grouped, then no group', () => {
    expect(groupTimeline([])).toEqual([]);
  });
});

describe('turn N in the stream', () => {
  it("given a run, when asked for each of its turns, then the point is the server's fork point, and past the last turn there is none", () => {
    const events = stream(RUN);
    const { from, to } = turnRange(events);
    expect([from, to]).toEqual([0, 6]);
    for (let n = from; n <= to; n++) {
      const server = forkPoint(events, n);
      expect({ n, ...turnPoint(events as TimelineEvent[], n) }).toEqual({ n, index: server.index, revision: server.revision });
    }
    expect(turnPoint(events, 7)).toBeUndefined();
    // Turn 0 is before the first model call; turn 1 after the architect's turn, its plan, and the executor's phase start.
    expect(turnPoint(events, 0)).toEqual({ index: 2, revision: 2 });
    expect(events[turnPoint(events, 1)!.index]).toMatchObject({ type: 'PhaseStarted', data: { role: 'executor' } });
  });

  it('given a fork, when asked for a turn before its own start, then there is none there', () => {
    const fork = stream([['RunForked', { parent: { runId: 'r1', revision: 20, turn: 3 } }], ...turn('executor')], 'f1');
    expect(turnPoint(fork, 2)).toBeUndefined();
    expect(turnPoint(fork, 3)).toEqual({ index: 0, revision: 0 });
    expect(turnPoint(fork, 4)).toEqual({ index: 4, revision: 4 });
  });
});

describe('what a fork at turn N would do first', () => {
  it('given the last turn of a run at its review, when asked, then the fork would go straight back to the gate; at an earlier turn there is work left', () => {
    const events = stream(RUN);
    expect(forkOutlook(events, 6)).toEqual({ next: 'review', reviewId: 'rev_r1_2' });
    // The reviewer's last turn of iteration 1 was followed by a review a human rejected, then more turns.
    expect(forkOutlook(events, 4)).toEqual({ next: 'review', reviewId: 'rev_r1_1' });
    for (const n of [0, 1, 2, 3, 5]) expect(forkOutlook(events, n)).toBeUndefined();
  });

  it('given a run that ended right after a turn, when asked, then the fork would end too; a run still working says nothing yet', () => {
    const ended = stream([...RUN.slice(0, 18), ['RunEnded', { status: 'failed', reason: 'MAX_TURNS' }]]);
    expect(forkOutlook(ended, 3)).toEqual({ next: 'end', reason: 'MAX_TURNS' });
    expect(forkOutlook(stream(RUN.slice(0, 18)), 3)).toBeUndefined();
  });
});
