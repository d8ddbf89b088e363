import { transition, type AnyStateMachine, type EventFromLogic, type Snapshot, type SnapshotFrom, type StateValue } from 'xstate';
import { compileFlatMachine } from './flat-machine';

/** One step of a machine: the snapshot after the event, the one given left as it is. */
export type MachineStep<M extends AnyStateMachine> = (snapshot: SnapshotFrom<M>, event: EventFromLogic<M>) => SnapshotFrom<M>;

/**
 * How every fold steps a machine (run state, run summaries): xstate's public pure `transition()`,
 * whose actions are left undone (triad's machines only `assign`, which `transition()` applies). A
 * flat machine (both of triad's) steps through `compileFlatMachine` instead, which gives the
 * snapshots `transition()` gives — a differential test holds them equal — at a fraction of the cost:
 * `transition()` builds a throwaway actor (and its initial snapshot) for every event.
 *
 * Measured against the public API alone (`engine: 'xstate'`), a run of 1,000 executor turns driven
 * as the turns benchmark drives it (in-memory store, checkpoints every 100 turns, to its verdict;
 * medians of 5 after warm-up, 2 shared cores, load 5-9): 266-496 µs per turn with this step,
 * 292-830 µs with `transition()` alone, 1.1 to 2.1 times as much pair by pair (1.3 times best
 * against best); folding that run's 4,017 events, 3.9-7.5 ms against 75-125 ms. The public API
 * costs well over 10% of a turn, so the fast step stays; docs/ARCHITECTURE.md ("Stepping the
 * machines") has the replay figures. `engine: 'xstate'` always takes xstate's own step, to
 * measure one against the other again.
 */
export function pureTransition<M extends AnyStateMachine>(machine: M, options: { engine?: 'fast' | 'xstate' } = {}): MachineStep<M> {
  const flat = options.engine === 'xstate' ? undefined : compileFlatMachine(machine);
  const step: MachineStep<M> = flat ?? ((snapshot, event) => transition(machine, snapshot, event)[0]);
  // Most of a run's events are for one of the two machines only. An event no state of a machine
  // handles cannot change it when its eventless guards read only the context (triad's do; the
  // differential test checks it): they were all taken by the step before. Skip it — unless a
  // wildcard descriptor (`*`, `a.*`) may handle any event.
  const descriptors = machine.events as string[];
  if (descriptors.some((d) => d.includes('*'))) return step;
  const handled = new Set<string>(descriptors);
  return (snapshot, event) => (handled.has((event as { type: string }).type) ? step(snapshot, event) : snapshot);
}

/** A machine snapshot as checkpoints, replays and forks store it: xstate's persisted form. */
export type StoredSnapshot = Snapshot<unknown>;

/**
 * The one way a machine snapshot is stored (checkpoints, the replay and context views, a fork's
 * view): xstate's persisted form, so a stored snapshot reads the same whatever stepped it.
 */
export function persistSnapshot<M extends AnyStateMachine>(machine: M, snapshot: SnapshotFrom<M>): StoredSnapshot {
  return machine.getPersistedSnapshot(snapshot);
}

/**
 * The one way a stored snapshot is brought back (a checkpoint, a fork's view, a fork's new run id):
 * xstate resolves its state value and context into a whole snapshot (active nodes, tags, status),
 * never copied field by field, so a restored snapshot steps exactly as the one that was stored.
 */
export function restoreSnapshot<M extends AnyStateMachine>(machine: M, stored: { value: StateValue; context: unknown }): SnapshotFrom<M> {
  return machine.resolveState({ value: stored.value, context: stored.context }) as SnapshotFrom<M>;
}
