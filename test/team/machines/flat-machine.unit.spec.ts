import fc from 'fast-check';
import { initialTransition, type AnyStateMachine } from 'xstate';
import { agentLoopMachine } from '../../../src/team/domain/agent-loop.machine';
import { compileFlatMachine } from '../../../src/team/domain/flat-machine';
import { pureTransition } from '../../../src/team/domain/pure-transition';
import { teamRunMachine } from '../../../src/team/domain/team-run.machine';

// The fast path must be indistinguishable from xstate's interpreter: given the same start and the
// same random events, every snapshot along the way has the same fields, value, context, status,
// tags, active nodes and persisted form.

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
  const slow = pureTransition(machine, { interpreter: true });
  const fast = pureTransition(machine);
  let a = initialTransition(machine, input as never)[0] as unknown as Record<string, unknown>;
  let b = a;
  for (const [i, e] of events.entries()) {
    a = slow(a as never, e as never) as unknown as Record<string, unknown>;
    b = fast(b as never, e as never) as unknown as Record<string, unknown>;
    try {
      expect(observable(machine, b)).toEqual(observable(machine, a));
    } catch (err) {
      throw new Error(`after event ${i} (${e.type}): ${(err as Error).message}`);
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

// Sequences that follow the happy path now and then, so that deep states are reached.
const teamHappyPrefix: Ev[] = [
  { type: 'RunLaunched', data: { runId: 'run_x', maxIterations: 2, reviewPolicy: { humanGate: true }, stagnation: { enabled: true, repeatedFindings: true } } },
  { type: 'PhaseStarted', data: { phase: 'planning' } },
  { type: 'PlanSubmitted', data: {} },
  { type: 'PhaseStarted', data: { phase: 'executing' } },
  { type: 'WorkSubmitted', data: {} },
  { type: 'PhaseStarted', data: { phase: 'reviewing' } },
];

describe('flat machines: the fast transition equals xstate', () => {
  it('both of triad machines are flat, so folds take the fast path', () => {
    expect(compileFlatMachine(agentLoopMachine)).toBeDefined();
    expect(compileFlatMachine(teamRunMachine)).toBeDefined();
  });

  it('given random events, the agent loop goes through the same snapshots', () => {
    fc.assert(
      fc.property(fc.constantFrom('architect', 'executor', 'reviewer'), fc.integer({ min: 0, max: 4 }), fc.array(loopEvent, { maxLength: 40 }), (role, maxTurns, events) =>
        runBoth(agentLoopMachine, { role, maxTurns }, events),
      ),
      { numRuns: 400 },
    );
  });

  it('given random events (from launch, or from the review phase), the team run goes through the same snapshots', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.array(teamEvent, { maxLength: 30 }), (fromReview, events) => runBoth(teamRunMachine, undefined, fromReview ? [...teamHappyPrefix, ...events] : events)),
      { numRuns: 400 },
    );
  });

  it('refuses machines outside the subset: the caller keeps the interpreter', async () => {
    const { createMachine } = await import('xstate');
    const nested = createMachine({ initial: 'a', states: { a: { initial: 'x', states: { x: {} } } } });
    const withEntry = createMachine({ initial: 'a', states: { a: { entry: () => undefined } } });
    const wildcard = createMachine({ initial: 'a', states: { a: { on: { '*': 'b' } }, b: {} } });
    for (const m of [nested, withEntry, wildcard]) expect(compileFlatMachine(m)).toBeUndefined();
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
