import { initialTransition, type AnyStateMachine, type EventFromLogic, type SnapshotFrom } from 'xstate';

/**
 * The one place in triad that reads xstate's internals: the state nodes' transition tables, the
 * `assign` action objects, the snapshot's field layout (`_nodes`, `historyValue`, its shared
 * methods). Everything else steps machines through `pureTransition`, and this only backs it.
 *
 * Why it exists: folding a run's events (replay, resume, the context endpoint) steps a machine on
 * almost every event, and xstate's pure `transition()` builds a throwaway actor and runs the
 * general interpreter for each one: 20-40 µs per event measured on replays of 300 to 4,000
 * events, ten to thirty times the rest of the fold and several times reading and decoding the
 * events; this step costs under a microsecond and a half (figures in docs/ARCHITECTURE.md,
 * "Stepping the machines").
 *
 * What it does: an exact transition function for flat machines — what triad's machines are: one
 * level of atomic and final states under the root, guards named in `setup`, only `assign` actions,
 * no entry/exit actions, invocations, delays, history or wildcard events. It follows xstate's
 * macrostep for that subset: the first enabled transition of the current state for the event (else
 * of the root), its assigns in order, its target; then, as long as one is enabled, the eventless
 * (`always`) transitions of the current state (else of the root); a final state ends the machine
 * (`status: 'done'`). Snapshots are built like xstate's own (the same fields and shared methods), so
 * nothing downstream can tell them apart, and a differential test holds them equal to xstate's
 * `transition()` over random event sequences. `compileFlatMachine` returns undefined for a machine
 * outside the subset (or an xstate whose snapshots have other fields), and `pureTransition` falls
 * back to `transition()`.
 */

interface AssignAction {
  type: 'xstate.assign';
  assignment: ((args: { context: unknown; event: unknown }, params: undefined) => Record<string, unknown>) | Record<string, unknown>;
}

interface Transition {
  guard?: (args: { context: unknown; event: unknown }, params: undefined) => boolean;
  assigns: AssignAction[];
  /** The state entered, or undefined for a targetless transition. */
  target?: StateInfo;
}

interface StateInfo {
  key: string;
  /** The xstate node. */
  node: unknown;
  /** `_nodes` of a snapshot in this state (the root and the node; never mutated, so shared). */
  nodes: unknown[];
  final: boolean;
  tags: string[];
  on: Map<string, Transition[]>;
  always: Transition[];
}

/** The parts of xstate's StateNode this reads (public properties of its v5 StateNode class). */
interface NodeLike {
  key: string;
  type: string;
  states: Record<string, NodeLike>;
  entry: unknown[];
  exit: unknown[];
  invoke: unknown[];
  after: unknown[];
  tags: string[];
  always?: TransitionDefLike[];
  transitions: Map<string, TransitionDefLike[]>;
  output?: unknown;
}

interface TransitionDefLike {
  target?: NodeLike[];
  actions: unknown[];
  guard?: unknown;
  reenter?: boolean;
}

class NotFlat extends Error {}

export type FlatTransition<M extends AnyStateMachine> = (snapshot: SnapshotFrom<M>, event: EventFromLogic<M>) => SnapshotFrom<M>;

export function compileFlatMachine<M extends AnyStateMachine>(machine: M): FlatTransition<M> | undefined {
  try {
    return compile(machine);
  } catch (err) {
    if (err instanceof NotFlat) return undefined;
    throw err;
  }
}

function compile<M extends AnyStateMachine>(machine: M): FlatTransition<M> {
  const root = machine.root as unknown as NodeLike;
  const impl = machine.implementations as { guards: Record<string, unknown>; actions: Record<string, unknown> };
  const check = (ok: unknown, why: string) => {
    if (!ok) throw new NotFlat(why);
  };
  const plain = (n: NodeLike) => n.entry.length === 0 && n.exit.length === 0 && n.invoke.length === 0 && n.after.length === 0;
  check(plain(root) && root.output === undefined, 'root has actions, invocations, delays or output');

  const states = new Map<NodeLike, StateInfo>();
  for (const [key, node] of Object.entries(root.states)) {
    check(node.type === 'atomic' || node.type === 'final', `state ${key} is ${node.type}`);
    check(plain(node), `state ${key} has entry/exit actions, invocations or delays`);
    states.set(node, { key, node, nodes: [root, node], final: node.type === 'final', tags: [...root.tags, ...node.tags], on: new Map(), always: [] });
  }
  check(states.size > 0, 'no states');

  const guardOf = (g: unknown): Transition['guard'] => {
    if (g === undefined) return undefined;
    check(typeof g === 'string', 'a guard that is not named');
    const fn = impl.guards[g as string];
    check(typeof fn === 'function' && !('check' in (fn as object)), `guard ${String(g)} is not a plain function`);
    return fn as Transition['guard'];
  };
  const assignOf = (a: unknown): AssignAction => {
    const resolved = typeof a === 'string' ? impl.actions[a] : a;
    check(
      (typeof resolved === 'function' || typeof resolved === 'object') && resolved !== null && (resolved as { type?: unknown }).type === 'xstate.assign',
      `action ${typeof a === 'string' ? a : '(inline)'} is not an assign`,
    );
    return resolved as AssignAction;
  };
  const transitionOf = (def: TransitionDefLike): Transition => {
    check(!def.reenter, 'a reentering transition');
    const targets = def.target ?? [];
    check(targets.length <= 1, 'a transition with several targets');
    let target: StateInfo | undefined;
    if (targets.length === 1) {
      target = states.get(targets[0]);
      check(target, 'a transition to a state that is not a child of the root');
    }
    return { guard: guardOf(def.guard), assigns: def.actions.map(assignOf), target };
  };
  const transitionsOf = (node: NodeLike): Map<string, Transition[]> => {
    const on = new Map<string, Transition[]>();
    for (const [type, defs] of node.transitions) {
      check(!type.includes('*') && !type.startsWith('xstate.'), `event descriptor ${type}`);
      on.set(type, defs.map(transitionOf));
    }
    return on;
  };

  const rootOn = transitionsOf(root);
  const rootAlways = (root.always ?? []).map(transitionOf);
  for (const [node, info] of states) {
    info.on = transitionsOf(node);
    info.always = (node.always ?? []).map(transitionOf);
  }
  const byKey = new Map([...states.values()].map((s) => [s.key, s]));
  // Snapshots are built field by field: this xstate must build them with exactly those fields.
  const fields = Object.keys((initialTransition as (m: AnyStateMachine) => [object, unknown])(machine)[0]);
  check(fields.length === SNAPSHOT_FIELDS.length && fields.every((f, i) => f === SNAPSHOT_FIELDS[i]), `xstate snapshots have the fields ${fields.join(', ')}`);

  const enabled = (list: Transition[] | undefined, context: unknown, event: unknown): Transition | undefined => {
    if (!list) return undefined;
    for (const t of list) if (!t.guard || t.guard({ context, event }, undefined)) return t;
    return undefined;
  };
  const applyAssigns = (t: Transition, context: unknown, event: unknown): unknown => {
    let ctx = context;
    for (const a of t.assigns) {
      let update: Record<string, unknown>;
      if (typeof a.assignment === 'function') update = a.assignment({ context: ctx, event }, undefined);
      else {
        update = {};
        for (const k of Object.keys(a.assignment)) {
          const p = a.assignment[k];
          update[k] = typeof p === 'function' ? (p as (args: unknown, params: undefined) => unknown)({ context: ctx, event }, undefined) : p;
        }
      }
      ctx = Object.assign({}, ctx, update);
    }
    return ctx;
  };

  return (snapshot, event) => {
    const snap = snapshot as unknown as { status: string; value: string; context: unknown };
    // Like machine.transition, a finished machine still takes transitions (only its root's can
    // match: a final state has none); eventless ones are only taken while it is active.
    const current = byKey.get(snap.value);
    if (!current) throw new Error(`flat machine ${machine.id}: unknown state ${String(snap.value)}`);
    let state: StateInfo = current;
    let context = snap.context;
    let changed = false;
    const type = (event as { type: string }).type;
    const t = enabled(state.on.get(type), context, event) ?? enabled(rootOn.get(type), context, event);
    if (t) {
      context = applyAssigns(t, context, event);
      if (t.target) state = t.target;
      changed = true;
    }
    // Eventless transitions, until none is enabled (each sees the event being processed).
    for (let guard = 0; !state.final && snap.status === 'active'; guard++) {
      if (guard > 1000) throw new Error(`flat machine ${machine.id}: eventless transitions do not settle`);
      const e: Transition | undefined = enabled(state.always, context, event) ?? enabled(rootAlways, context, event);
      if (!e) break;
      context = applyAssigns(e, context, event);
      if (e.target) state = e.target;
      changed = true;
    }
    if (!changed) return snapshot;
    // Every field named, in xstate's order: one object shape for all snapshots (a spread of the
    // previous snapshot cost more than the rest of the step).
    const o = snapshot as unknown as MachineSnapshotFields;
    const next: MachineSnapshotFields = {
      status: state.final ? 'done' : o.status,
      output: o.output,
      error: o.error,
      machine: o.machine,
      context,
      _nodes: state.nodes,
      value: state.key,
      tags: new Set(state.tags),
      children: o.children,
      historyValue: o.historyValue,
      matches: o.matches,
      hasTag: o.hasTag,
      can: o.can,
      getMeta: o.getMeta,
      toJSON: o.toJSON,
    };
    return next as unknown as SnapshotFrom<M>;
  };
}

/** The fields of an xstate 5 machine snapshot (`createMachineSnapshot`), in its order. */
interface MachineSnapshotFields {
  status: string;
  output: unknown;
  error: unknown;
  machine: unknown;
  context: unknown;
  _nodes: unknown[];
  value: string;
  tags: Set<string>;
  children: unknown;
  historyValue: unknown;
  matches: unknown;
  hasTag: unknown;
  can: unknown;
  getMeta: unknown;
  toJSON: unknown;
}

const SNAPSHOT_FIELDS: readonly string[] = [
  'status', 'output', 'error', 'machine', 'context', '_nodes', 'value', 'tags',
  'children', 'historyValue', 'matches', 'hasTag', 'can', 'getMeta', 'toJSON',
] satisfies (keyof MachineSnapshotFields)[];
