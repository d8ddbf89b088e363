import fc from 'fast-check';
import { initialTransition, transition, type AnyStateMachine } from 'xstate';
import { agentLoopMachine } from '../../../src/team/domain/agent-loop.machine';
import { compileFlatMachine } from '../../../src/team/domain/flat-machine';
import { pureTransition } from '../../../src/team/domain/pure-transition';
import { teamRunMachine } from '../../../src/team/domain/team-run.machine';

// The step every fold takes (`pureTransition`: the flat machine's fast path, events no state handles
// skipped) must be indistinguishable from xstate's own pure `transition()`: given the same start and
// the same events (valid runs, valid runs with random events slipped in, random events), every
// snapshot along the way has the same fields, value, context, status, tags, active nodes and
// persisted form. So must `pureTransition`'s xstate engine (which only adds the skip).

type Ev = { type: string; data: Record<string, unknown> };

function observable(machine: AnyStateMachine, s: Record<string, unknown>): unknown {
  return {
    // The same fields in the same order: the fast path names them one by one.
    fields: Object.keys(s),
    value: s.value,
    context: s.context,
    status: s.status,
    output: s.output,
    error: s.error,
    children: s.children,
    historyValue: s.historyValue,
    tags: [...(s.tags as Set<string>)].sort(),
    // The active nodes as a set: xstate's own order depends on how it got there and nothing reads it.
    nodes: (s._nodes as Array<{ id: string }>).map((n) => n.id).sort(),
    persisted: machine.getPersistedSnapshot(s as never),
    methods: [s.matches, s.hasTag, s.can, s.getMeta, s.toJSON],
  };
}

function runBoth(machine: AnyStateMachine, input: unknown, events: Ev[]): void {
  const steps = { fast: pureTransition(machine), xstate: pureTransition(machine, { engine: 'xstate' }) };
  const start = initialTransition(machine, input as never)[0] as unknown as Record<string, unknown>;
  let expected = start;
  const actual = { fast: start, xstate: start };
  for (const [i, e] of events.entries()) {
    expected = transition(machine, expected as never, e as never)[0] as unknown as Record<string, unknown>;
    for (const engine of ['fast', 'xstate'] as const) {
      actual[engine] = steps[engine](actual[engine] as never, e as never) as unknown as Record<string, unknown>;
      try {
        expect(observable(machine, actual[engine])).toEqual(observable(machine, expected));
      } catch (err) {
        throw new Error(`${engine} step, after event ${i} (${e.type}): ${(err as Error).message}`);
      }
    }
  }
}

const ids = fc.constantFrom('t1', 't2', 't3', 't4');
const block = fc.oneof(
  fc.record({ type: fc.constant('text'), text: fc.string({ maxLength: 8 }) }),
  fc.record({ type: fc.constant('tool_use'), id: ids, name: fc.constantFrom('read_file', 'write_file'), input: fc.constant({}) }),
);
const loopEvent: fc.Arbitrary<Ev> = fc.oneof(
  fc.record({ type: fc.constant('ModelCallStarted'), data: fc.record({ turn: fc.integer({ min: 0, max: 6 }) }) }),
  fc.record({ type: fc.constant('ModelCallCompleted'), data: fc.record({ content: fc.array(block, { maxLength: 3 }) }) }),
  ...['ToolCallRequested', 'ToolCallCompleted', 'ToolApprovalRequested', 'ToolApprovalDecided'].map((type) =>
    fc.record({ type: fc.constant(type), data: fc.record({ toolUseId: ids }) }),
  ),
  fc.record({ type: fc.constantFrom('PlanSubmitted', 'WorkSubmitted', 'VerdictSubmitted', 'RunEnded', 'DriverClaimed'), data: fc.constant({}) }),
);

const verdict = fc.record({
  verdict: fc.constantFrom('APPROVE', 'REQUEST_CHANGES', 'BLOCK'),
  findings: fc.array(fc.constantFrom('f1', 'f2'), { maxLength: 2 }),
});
const teamEvent: fc.Arbitrary<Ev> = fc.oneof(
  fc.record({
    type: fc.constant('RunLaunched'),
    data: fc.record({
      runId: fc.constant('run_x'),
      maxIterations: fc.integer({ min: 1, max: 3 }),
      reviewPolicy: fc.record({ humanGate: fc.boolean() }),
      stagnation: fc.option(fc.record({ enabled: fc.boolean(), repeatedFindings: fc.boolean() }), { nil: undefined }),
    }),
  }),
  fc.record({ type: fc.constant('PhaseStarted'), data: fc.record({ phase: fc.constantFrom('planning', 'executing', 'reviewing') }) }),
  fc.record({ type: fc.constantFrom('PlanSubmitted', 'WorkSubmitted'), data: fc.constant({}) }),
  fc.record({ type: fc.constant('VerdictSubmitted'), data: verdict }),
  fc.record({ type: fc.constant('ReviewOpened'), data: fc.record({ reviewId: fc.constantFrom('r1', 'r2') }) }),
  fc.record({ type: fc.constant('ReviewDecided'), data: fc.constant({}) }),
  fc.record({ type: fc.constant('IterationStarted'), data: fc.record({ iteration: fc.integer({ min: 1, max: 3 }), findings: fc.array(fc.constantFrom('f1', 'f2'), { maxLength: 2 }), feedback: fc.option(fc.string({ maxLength: 5 }), { nil: undefined }) }) }),
  fc.record({ type: fc.constant('RunEnded'), data: fc.record({ status: fc.constantFrom('completed', 'failed'), reason: fc.constant('x') }) }),
  fc.record({ type: fc.constant('ModelCallStarted'), data: fc.record({ turn: fc.nat(3) }) }),
);

// Random events alone seldom go deep (a tool call completing the last pending one, a second review
// round): valid runs are generated too, as they are, and with random events slipped in.
const withNoise = (valid: fc.Arbitrary<Ev[]>, noise: fc.Arbitrary<Ev>): fc.Arbitrary<Ev[]> =>
  fc.oneof(
    valid,
    fc.tuple(valid, fc.array(fc.tuple(fc.nat(), noise), { maxLength: 4 })).map(([events, extra]) => {
      const out = [...events];
      for (const [at, e] of extra) out.splice(at % (out.length + 1), 0, e);
      return out;
    }),
    fc.array(noise, { maxLength: 40 }),
  );

const loopTurn = fc.oneof(
  fc.record({ tools: fc.uniqueArray(fc.record({ id: ids, approval: fc.boolean() }), { minLength: 1, maxLength: 3, selector: (t) => t.id }), text: fc.boolean() }),
  fc.record({ answer: fc.string({ maxLength: 8 }) }),
);
const validLoopRun: fc.Arbitrary<Ev[]> = fc
  .tuple(fc.array(loopTurn, { maxLength: 6 }), fc.constantFrom(undefined, 'PlanSubmitted', 'WorkSubmitted', 'VerdictSubmitted'))
  .map(([turns, submit]) => {
    const out: Ev[] = [];
    turns.forEach((t, i) => {
      out.push({ type: 'ModelCallStarted', data: { turn: i + 1 } });
      if ('answer' in t) {
        out.push({ type: 'ModelCallCompleted', data: { content: [{ type: 'text', text: t.answer }] } });
        return;
      }
      const uses = t.tools.map((u) => ({ type: 'tool_use', id: u.id, name: 'read_file', input: {} }));
      out.push({ type: 'ModelCallCompleted', data: { content: t.text ? [{ type: 'text', text: 'x' }, ...uses] : uses } });
      const gated = t.tools.filter((u) => u.approval);
      for (const u of gated) out.push({ type: 'ToolApprovalRequested', data: { toolUseId: u.id } });
      for (const u of gated) out.push({ type: 'ToolApprovalDecided', data: { toolUseId: u.id } });
      for (const u of t.tools) out.push({ type: 'ToolCallRequested', data: { toolUseId: u.id } }, { type: 'ToolCallCompleted', data: { toolUseId: u.id } });
    });
    if (submit) out.push({ type: submit, data: {} });
    return out;
  });

// Valid runs stop on repeated findings more often than random ones: the rule needs two rounds.
const launched = fc.record({
  type: fc.constant('RunLaunched'),
  data: fc.record({
    runId: fc.constant('run_x'),
    maxIterations: fc.integer({ min: 1, max: 3 }),
    reviewPolicy: fc.record({ humanGate: fc.boolean() }),
    stagnation: fc.constantFrom(undefined, { enabled: true, repeatedFindings: true }, { enabled: true, repeatedFindings: false }, { enabled: false, repeatedFindings: true }),
  }),
});
const roundVerdict = fc.record({
  verdict: fc.constantFrom('APPROVE', 'REQUEST_CHANGES', 'REQUEST_CHANGES', 'BLOCK'),
  findings: fc.constantFrom(['f1'], ['f1'], ['f1', 'f2'], []),
});
const phase = (p: string): Ev => ({ type: 'PhaseStarted', data: { phase: p } });
const iterationStarted = fc.record({
  type: fc.constant('IterationStarted'),
  data: fc.record({ iteration: fc.integer({ min: 1, max: 3 }), findings: fc.array(fc.constantFrom('f1', 'f2'), { maxLength: 2 }), feedback: fc.option(fc.string({ maxLength: 5 }), { nil: undefined }) }),
});
// Launched, planned, worked, then review rounds: a verdict, a review opened or decided, or a new
// iteration that works and is reviewed again; now and then ended.
const validTeamRun: fc.Arbitrary<Ev[]> = fc
  .tuple(
    launched,
    fc.array(
      fc.oneof(
        fc.record({ type: fc.constant('VerdictSubmitted'), data: roundVerdict }).map((e) => [e]),
        fc.record({ type: fc.constant('ReviewOpened'), data: fc.record({ reviewId: fc.constantFrom('r1', 'r2') }) }).map((e) => [e]),
        fc.constant([{ type: 'ReviewDecided', data: {} }]),
        iterationStarted.map((e) => [e, phase('executing'), { type: 'WorkSubmitted', data: {} }, phase('reviewing')]),
      ),
      { maxLength: 6 },
    ),
    fc.option(fc.record({ status: fc.constantFrom('completed', 'failed'), reason: fc.constant('x') }), { nil: undefined }),
  )
  .map(([launch, rounds, ended]) => [
    launch,
    phase('planning'),
    { type: 'PlanSubmitted', data: {} },
    phase('executing'),
    { type: 'WorkSubmitted', data: {} },
    phase('reviewing'),
    ...rounds.flat(),
    ...(ended ? [{ type: 'RunEnded', data: ended }] : []),
  ]);

// Runs per property (more with TRIAD_PROPERTY_RUNS, for a longer search).
const PROPERTY_RUNS = Number(process.env.TRIAD_PROPERTY_RUNS ?? 150);

describe("machine steps: the fold's step equals xstate's transition()", () => {
  it('both of triad machines are flat, so folds take the fast path', () => {
    expect(compileFlatMachine(agentLoopMachine)).toBeDefined();
    expect(compileFlatMachine(teamRunMachine)).toBeDefined();
  });

  it('given valid and random events, the agent loop goes through the same snapshots', () => {
    fc.assert(
      fc.property(fc.constantFrom('architect', 'executor', 'reviewer'), fc.integer({ min: 0, max: 4 }), withNoise(validLoopRun, loopEvent), (role, maxTurns, events) =>
        runBoth(agentLoopMachine, { role, maxTurns }, events),
      ),
      { numRuns: PROPERTY_RUNS },
    );
  });

  it('given valid and random events, the team run goes through the same snapshots', () => {
    fc.assert(
      fc.property(withNoise(validTeamRun, teamEvent), (events) => runBoth(teamRunMachine, undefined, events)),
      { numRuns: PROPERTY_RUNS },
    );
  });

  it("given the team run's deep paths, it goes through the same snapshots", () => {
    const launch = (maxIterations: number, humanGate: boolean): Ev => ({
      type: 'RunLaunched',
      data: { runId: 'run_x', maxIterations, reviewPolicy: { humanGate }, stagnation: { enabled: true, repeatedFindings: true } },
    });
    const toReview: Ev[] = [phase('planning'), { type: 'PlanSubmitted', data: {} }, phase('executing'), { type: 'WorkSubmitted', data: {} }, phase('reviewing')];
    const verdictOf = (v: string, findings: string[] = []): Ev => ({ type: 'VerdictSubmitted', data: { verdict: v, findings } });
    const rework = (iteration: number, findings: string[]): Ev[] => [
      { type: 'IterationStarted', data: { iteration, findings } },
      phase('executing'),
      { type: 'WorkSubmitted', data: {} },
      phase('reviewing'),
    ];
    const paths: Ev[][] = [
      // The same changes asked twice: stopped (the first matching guard wins over changesWithIterationLeft).
      [launch(3, true), ...toReview, verdictOf('REQUEST_CHANGES', ['f1']), ...rework(2, ['f1']), verdictOf('REQUEST_CHANGES', ['f1'])],
      // Out of iterations.
      [launch(2, true), ...toReview, verdictOf('REQUEST_CHANGES', ['f1']), ...rework(2, ['f1']), verdictOf('REQUEST_CHANGES', ['f2'])],
      // Approved, reviewed by a human who asks for another iteration, then approved and ended.
      [launch(2, true), ...toReview, verdictOf('APPROVE'), { type: 'ReviewOpened', data: { reviewId: 'r1' } }, ...rework(2, ['h1']), verdictOf('APPROVE'), { type: 'RunEnded', data: { status: 'completed', reason: 'x' } }],
      // Approved with the gate waived; blocked.
      [launch(1, false), ...toReview, verdictOf('APPROVE'), { type: 'ReviewDecided', data: {} }],
      [launch(1, true), ...toReview, verdictOf('BLOCK', ['f1'])],
    ];
    for (const events of paths) runBoth(teamRunMachine, undefined, events);
  });

  it('refuses machines outside the subset: they step through xstate', async () => {
    const { createMachine } = await import('xstate');
    const nested = createMachine({ initial: 'a', states: { a: { initial: 'x', states: { x: {} } } } });
    const withEntry = createMachine({ initial: 'a', states: { a: { entry: () => undefined } } });
    const wildcard = createMachine({ initial: 'a', states: { a: { on: { '*': 'b' } }, b: {} } });
    for (const m of [nested, withEntry, wildcard]) expect(compileFlatMachine(m)).toBeUndefined();
    // ...and pureTransition steps them through xstate's transition().
    expect(pureTransition(wildcard)(initialTransition(wildcard)[0], { type: 'ANY' }).value).toBe('b');
  });

  it('given tags on the root and on states, then every snapshot has the tags of both, as xstate gives them', async () => {
    const { createMachine } = await import('xstate');
    const tagged = createMachine({
      tags: ['team', 'shared'],
      initial: 'a',
      states: { a: { tags: ['shared', 'first'], on: { GO: 'b' } }, b: { on: { BACK: 'a', END: 'c' } }, c: { type: 'final', tags: ['done'] } },
    });
    expect(compileFlatMachine(tagged)).toBeDefined();
    const events = ['GO', 'BACK', 'GO', 'END', 'GO'].map((type) => ({ type, data: {} }));
    runBoth(tagged, undefined, events);
    const fast = pureTransition(tagged);
    const atB = fast(initialTransition(tagged)[0], { type: 'GO' });
    expect([...atB.tags].sort()).toEqual(['shared', 'team']);
  });
});
