import type { TeamRunEvent } from '../../../src/team/domain/run-events';
import { DEFAULT_STAGNATION_POLICY, type StagnationPolicy } from '../../../src/team/domain/resilience/policies';
import {
  detectCycle,
  detectStagnation,
  normaliseFindings,
  recordTurn,
  repetitionRatio,
  sameFindings,
  toolFingerprint,
  type StagnationWindow,
} from '../../../src/team/domain/resilience/stagnation';
import {
  given,
  iterationStarted,
  modelCallCompleted,
  modelCallStarted,
  phaseStarted,
  planSubmitted,
  runLaunched,
  submitTurn,
  text,
  toolCallCompleted,
  toolUse,
  verdictSubmitted,
  workSubmitted,
} from '../machines/given-when-then';

// Stagnation detectors, given / when / then: pure over tool calls, then over the fold and the
// next action (corrective message first, then the end), then at team level (repeated findings).

const policy: StagnationPolicy = DEFAULT_STAGNATION_POLICY;

function givenTurns(...turns: Array<Array<[string, Record<string, unknown>]>>): StagnationWindow {
  let w: StagnationWindow = { calls: [], turns: [] };
  for (const t of turns) w = recordTurn(w, t.map(([name, input]) => ({ name, input })), policy.windowSize);
  return w;
}
const read = (path: string): [string, Record<string, unknown>] => ['read_file', { path }];
const list = (): [string, Record<string, unknown>] => ['list_files', {}];

describe('stagnation detectors (pure)', () => {
  it('fingerprints are name + sha256 of the canonical input: key order does not matter', () => {
    expect(toolFingerprint('read_file', { path: 'a', max: 1 })).toBe(toolFingerprint('read_file', { max: 1, path: 'a' }));
    expect(toolFingerprint('read_file', { path: 'a' })).not.toBe(toolFingerprint('read_file', { path: 'b' }));
    expect(toolFingerprint('read_file', { path: 'a' })).toMatch(/^read_file:[0-9a-f]{16}$/);
  });

  it('given fewer than 6 calls, then repetition does not count yet', () => {
    const w = givenTurns([read('a')], [read('a')], [read('a')], [read('a')], [read('a')]);
    expect(repetitionRatio(w.calls)).toBe(0.8);
    expect(detectStagnation(w, { ...policy, cycleDetection: false })).toBeUndefined();
  });

  it('given 6 identical calls, then repetition is detected (ratio 5/6)', () => {
    const w = givenTurns([read('a')], [read('a')], [read('a')], [read('a')], [read('a')], [read('a')]);
    expect(detectStagnation(w, policy)).toMatchObject({ signal: 'repetition', ratio: 0.833, calls: 6, repeated: [{ tool: 'read_file', count: 6 }] });
  });

  it('given varied calls under the threshold, then nothing is detected', () => {
    // 8 calls, 5 distinct: ratio 3/8 < 0.6.
    const w = givenTurns([read('a')], [read('b')], [read('a')], [read('c')], [list()], [read('d')], [read('b')], [read('a')]);
    expect(repetitionRatio(w.calls)).toBe(0.375);
    expect(detectStagnation(w, policy)).toBeUndefined();
  });

  it('the window slides: only the last windowSize calls count', () => {
    const w = givenTurns(...Array.from({ length: 8 }, () => [read('a')]), ...['b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k'].map((p) => [read(p)]));
    expect(w.calls).toHaveLength(10);
    expect(detectStagnation(w, policy)).toBeUndefined();
  });

  it('given A→B→A→B turns, then a cycle of 2 is detected; A→A→A→A is repetition, not a cycle', () => {
    expect(detectCycle(['A', 'B', 'A', 'B'])).toEqual({ length: 2, cycle: ['A', 'B'] });
    expect(detectCycle(['X', 'A', 'B', 'C', 'A', 'B', 'C'])).toEqual({ length: 3, cycle: ['A', 'B', 'C'] });
    expect(detectCycle(['A', 'A', 'A', 'A'])).toBeUndefined();
    expect(detectCycle(['A', 'B', 'A', 'C'])).toBeUndefined();
    const w = givenTurns([read('a')], [list()], [read('a')], [list()]);
    expect(detectStagnation(w, policy)).toMatchObject({ signal: 'cycle', cycleLength: 2, turns: 4 });
    expect(detectStagnation(w, { ...policy, cycleDetection: false })).toBeUndefined();
  });

  it('calls within one turn are compared as a set', () => {
    const w = givenTurns([read('a'), list()], [list(), read('a')]);
    expect(w.turns[0]).toBe(w.turns[1]);
  });

  it('a disabled policy detects nothing', () => {
    const w = givenTurns(...Array.from({ length: 10 }, () => [read('a')]));
    expect(detectStagnation(w, { ...policy, enabled: false })).toBeUndefined();
  });

  it('findings are compared as normalised sets', () => {
    expect(normaliseFindings(['  Say  World. ', 'say world', 'Add a comma;'])).toEqual(['add a comma', 'say world']);
    expect(sameFindings(['Say world.', 'add a comma'], ['ADD A COMMA', 'say   world'])).toBe(true);
    expect(sameFindings(['say world'], ['say world', 'add a comma'])).toBe(false);
    expect(sameFindings([], [])).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------

const withPolicy = (p: Partial<StagnationPolicy> = {}): TeamRunEvent => {
  const e = runLaunched({ maxIterations: 3 });
  (e.data as { stagnation?: StagnationPolicy }).stagnation = { ...DEFAULT_STAGNATION_POLICY, ...p };
  return e;
};

/** The executor's turn n: one read_file of `path`, its result recorded. */
function readTurn(n: number, path = 'a.txt'): TeamRunEvent[] {
  const id = `tu_${n}`;
  return [
    modelCallStarted('executor', n, { toolResultIds: n === 1 ? [] : [`tu_${n - 1}`] }),
    modelCallCompleted('executor', n, [toolUse(id, 'read_file', { path })]),
    toolCallCompleted('executor', n, id, 'read_file', 'A'),
  ];
}

const executing = (p?: Partial<StagnationPolicy>): TeamRunEvent[] => [
  withPolicy(p),
  phaseStarted('planning'),
  ...submitTurn('architect', 1, planSubmitted()),
  phaseStarted('executing'),
];

describe('stagnation in the agent loop (fold + next action)', () => {
  const sixReads = () => [1, 2, 3, 4, 5, 6].flatMap((n) => readTurn(n));

  it('given 6 identical reads, when the executor is ready, then the next action warns it', () => {
    given([...executing(), ...sixReads()]).then(({ next }) => {
      expect(next).toMatchObject({ kind: 'warnStagnation', role: 'executor', turn: 6, detection: { signal: 'repetition' } });
      expect((next as { message: string }).message).toMatch(/You seem to be stuck: 83% of the last 6 tool calls repeat .*read_file ×6.*call submit_work now/);
    });
  });

  it('given the warning, then the next call carries it and the window starts over', () => {
    const warned: TeamRunEvent = {
      type: 'StagnationWarned',
      data: { role: 'executor', turn: 6, signal: 'repetition', ratio: 0.833, fingerprints: [], message: 'You seem to be stuck.', at: '2025-01-01T00:00:00.000Z' },
    };
    given([...executing(), ...sixReads(), warned]).then(({ state, next }) => {
      expect(state.resilience.stagnation).toMatchObject({ calls: [], turns: [], warnings: 1, pendingWarning: { role: 'executor', message: 'You seem to be stuck.' } });
      expect(next).toMatchObject({ kind: 'callModel', turn: 7, toolResultIds: ['tu_6'], content: [text('You seem to be stuck.')] });
    });
    // Once sent (in ModelCallStarted's content), it is not pending any more.
    given([...executing(), ...sixReads(), warned, modelCallStarted('executor', 7, { toolResultIds: ['tu_6'], content: [text('You seem to be stuck.')] })]).then(
      ({ state }) => expect(state.resilience.stagnation.pendingWarning).toBeUndefined(),
    );
  });

  it('given the warning and 6 more identical reads, then the run ends STAGNATION', () => {
    const warned: TeamRunEvent = {
      type: 'StagnationWarned',
      data: { role: 'executor', turn: 6, signal: 'repetition', fingerprints: [], message: 'stuck', at: '2025-01-01T00:00:00.000Z' },
    };
    given([...executing(), ...sixReads(), warned, ...[7, 8, 9, 10, 11, 12].flatMap((n) => readTurn(n))]).then(({ next }) => {
      expect(next).toMatchObject({ kind: 'end', reason: 'STAGNATION' });
      expect((next as { message: string }).message).toMatch(/^the executor is stuck after 1 corrective message\(s\): 83% of the last 6 tool calls/);
    });
  });

  it('with maxWarnings 0 the first detection ends the run', () => {
    given([...executing({ maxWarnings: 0 }), ...sixReads()]).then({ next: { kind: 'end', reason: 'STAGNATION' } });
  });

  it('without a stagnation policy (runs launched before it), nothing is detected', () => {
    given([runLaunched(), phaseStarted('planning'), ...submitTurn('architect', 1, planSubmitted()), phaseStarted('executing'), ...sixReads()]).then({
      next: { kind: 'callModel', turn: 7 },
    });
  });

  it('a new phase starts a new window', () => {
    given([...executing(), ...sixReads().slice(0, 15), phaseStarted('executing', { iteration: 2 })]).then(({ state }) =>
      expect(state.resilience.stagnation).toEqual({ calls: [], turns: [], warnings: 0 }),
    );
  });
});

describe('stagnation at team level: the reviewer requests the same changes again', () => {
  const reviewRound = (iteration: number, findings: string[]): TeamRunEvent[] => [
    phaseStarted('executing', { iteration }),
    ...submitTurn('executor', 1, workSubmitted(`tu_work_${iteration}`, iteration)),
    phaseStarted('reviewing', { iteration }),
    ...submitTurn('reviewer', 1, verdictSubmitted('REQUEST_CHANGES', { toolUseId: `tu_v_${iteration}`, iteration, findings })),
  ];
  const start = (p?: Partial<StagnationPolicy>) => [withPolicy(p), phaseStarted('planning'), ...submitTurn('architect', 1, planSubmitted())];

  it('given round 1 asked for X, when round 2 asks for X again (case and punctuation aside), then the run ends STAGNATION', () => {
    given([...start(), ...reviewRound(1, ['Say world.']), iterationStarted(2, ['Say world.'])])
      .when(...reviewRound(2, ['say WORLD']))
      .then({ team: 'findingsRepeated', next: { kind: 'end', reason: 'STAGNATION' } });
  });

  it('given different findings, then another iteration starts', () => {
    given([...start(), ...reviewRound(1, ['say world']), iterationStarted(2, ['say world'])])
      .when(...reviewRound(2, ['add a comma']))
      .then({ team: 'changesRequested', next: { kind: 'startIteration', iteration: 3 } });
  });

  it('with repeatedFindings off, repeated findings burn the iterations as before', () => {
    given([...start({ repeatedFindings: false }), ...reviewRound(1, ['x']), iterationStarted(2, ['x'])])
      .when(...reviewRound(2, ['x']))
      .then({ team: 'changesRequested' });
  });
});
