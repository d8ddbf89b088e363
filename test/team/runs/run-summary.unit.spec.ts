import type { RecordedEvent } from '../../../src/events/event-store/event-store.port';
import { TEAM_RUN_EVENT_TYPES } from '../../../src/team/domain/run-events';
import { teamRunMachine } from '../../../src/team/domain/team-run.machine';
import { applyToSummary, SUMMARY_EVENT_TYPES, type RunSummaryState } from '../../../src/team/runs/run-summary';
import {
  iterationStarted,
  modelCallCompleted,
  modelCallStarted,
  phaseStarted,
  recorded,
  planSubmitted,
  reviewOpened,
  runLaunched,
  submitTurn,
  text,
  toolCallCompleted,
  toolCallRequested,
  toolUse,
  verdictTurn,
  workSubmitted,
} from '../machines/given-when-then';

// The runs read model folds only SUMMARY_EVENT_TYPES (so that a process need not read the rest of
// every run's stream): the summary must not depend on the others.

function summaryOf(events: RecordedEvent[]): RunSummaryState | undefined {
  let s: RunSummaryState | undefined;
  for (const e of events) s = applyToSummary(s, e);
  return s;
}

describe('the run summary folds the summary events alone', () => {
  it('lists every event the team machine takes', () => {
    const machineEvents = new Set<string>();
    const walk = (node: { on?: Record<string, unknown>; states?: Record<string, unknown> }) => {
      for (const type of Object.keys(node.on ?? {})) machineEvents.add(type);
      for (const child of Object.values(node.states ?? {})) walk(child as typeof node);
    };
    walk(teamRunMachine.config as Parameters<typeof walk>[0]);
    expect(machineEvents.size).toBeGreaterThan(5);
    for (const type of machineEvents) expect(SUMMARY_EVENT_TYPES).toContain(type);
    for (const type of SUMMARY_EVENT_TYPES) expect(TEAM_RUN_EVENT_TYPES).toContain(type);
  });

  it('given a run of two iterations, when only the summary events are folded, then the summary is the one every event gives, at the last summary event', () => {
    const events = recorded([
      runLaunched(),
      phaseStarted('planning'),
      ...submitTurn('architect', 1, planSubmitted()),
      phaseStarted('executing'),
      modelCallStarted('executor', 1, { content: [text('task')] }),
      modelCallCompleted('executor', 1, [toolUse('tu_1', 'write_file', { path: 'a', content: 'A' })]),
      toolCallRequested('executor', 1, 'tu_1', 'write_file', { path: 'a', content: 'A' }),
      toolCallCompleted('executor', 1, 'tu_1', 'write_file', 'ok'),
      ...submitTurn('executor', 2, workSubmitted()),
      phaseStarted('reviewing'),
      ...verdictTurn('REQUEST_CHANGES', { findings: ['more'] }),
      iterationStarted(2, ['more']),
      phaseStarted('executing', { iteration: 2 }),
      ...submitTurn('executor', 3, workSubmitted('tu_work2', 2)),
      phaseStarted('reviewing', { iteration: 2 }),
      ...verdictTurn('APPROVE', { iteration: 2, toolUseId: 'tu_v2' }),
      reviewOpened(2),
      // Not summary events: nothing a summary shows changes.
      modelCallStarted('reviewer', 9, { content: [text('late')] }),
      toolCallRequested('reviewer', 9, 'tu_9', 'read_file', { path: 'a' }),
    ]);
    const all = summaryOf(events)!;
    const some = summaryOf(events.filter((e) => (SUMMARY_EVENT_TYPES as readonly string[]).includes(e.type)))!;

    expect(some).toEqual(all);
    expect(all.summary.status).toBe('awaiting_review');
    expect(all.summary.iteration).toBe(2);
    expect(all.summary.usage.turns).toBeGreaterThan(3);
    // The revision is the review's opening, the last event that changed the summary.
    expect(all.summary.revision).toBe(events.findIndex((e) => e.type === 'ReviewOpened'));
  });
});
