import fc from 'fast-check';
import type { TeamRunEvent } from '../../../src/team/domain/run-events';
import { evolve, foldRun, initialRunState, type RunState } from '../../../src/team/domain/run-state';
import { DEFAULT_STAGNATION_POLICY, type StagnationPolicy } from '../../../src/team/domain/resilience/policies';
import { modelCallCompleted, modelCallStarted, phaseStarted, runLaunched, text, toolUse } from '../machines/given-when-then';

// foldRun leaves out the stagnation fingerprints of turns that cannot be in the window once the
// list is folded. Property: for random runs, folding them in random pages gives exactly the state
// of evolving every event one by one (which computes every fingerprint).

type Step = { kind: 'turn'; calls: Array<[string, string]> } | { kind: 'phase' } | { kind: 'warn' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('turn' as const),
      calls: fc.array(fc.tuple(fc.constantFrom('read_file', 'list_files', 'write_file'), fc.constantFrom('a', 'b', 'c')), { maxLength: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'phase' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'warn' as const }) },
);

function eventsOf(windowSize: number, steps: Step[]): TeamRunEvent[] {
  const launched = runLaunched({ maxIterations: 3 });
  (launched.data as { stagnation?: StagnationPolicy }).stagnation = { ...DEFAULT_STAGNATION_POLICY, windowSize };
  const events: TeamRunEvent[] = [launched, phaseStarted('executing', { maxTurns: 1_000 })];
  let turn = 0;
  for (const s of steps) {
    if (s.kind === 'phase') events.push(phaseStarted('executing', { maxTurns: 1_000 }));
    else if (s.kind === 'warn') {
      events.push({
        type: 'StagnationWarned',
        data: { role: 'executor', turn, signal: 'repetition', ratio: 1, fingerprints: [], message: 'You seem to be stuck.', at: '2025-01-01T00:00:00.000Z' },
      });
    } else {
      turn++;
      events.push(modelCallStarted('executor', turn));
      const content = s.calls.length === 0 ? [text('done')] : s.calls.map(([name, path], i) => toolUse(`tu_${turn}_${i}`, name, { path }));
      events.push(modelCallCompleted('executor', turn, content));
    }
  }
  return events;
}

const recorded = (events: TeamRunEvent[]) => events.map((e, i) => ({ type: e.type, data: e.data, revision: i, position: i + 1 }));

function oneByOne(events: TeamRunEvent[]): RunState {
  const state = initialRunState('run_test');
  for (const e of recorded(events)) evolve(state, e as unknown as TeamRunEvent, e);
  return state;
}

describe('foldRun and the stagnation window', () => {
  it('given random runs folded in random pages, then the state equals evolving every event with every fingerprint', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(step, { maxLength: 60 }), fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 8 }), (windowSize, steps, pageSizes) => {
        const events = recorded(eventsOf(windowSize, steps));
        const paged = initialRunState('run_test');
        for (let at = 0, p = 0; at < events.length; p++) {
          const size = pageSizes[p % pageSizes.length];
          foldRun(events.slice(at, at + size), paged);
          at += size;
        }
        const expected = oneByOne(eventsOf(windowSize, steps));
        expect(paged.resilience).toEqual(expected.resilience);
        expect(paged).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('given a long run, then its final window holds the fingerprints of its last turns only', () => {
    const steps: Step[] = Array.from({ length: 50 }, (_, i) => ({ kind: 'turn', calls: [['read_file', `f${i % 7}`]] }) as Step);
    const state = foldRun(recorded(eventsOf(4, steps)), initialRunState('run_test'));
    expect(state.resilience.stagnation.calls).toEqual(oneByOne(eventsOf(4, steps)).resilience.stagnation.calls);
    expect(state.resilience.stagnation.calls).toHaveLength(4);
  });
});
