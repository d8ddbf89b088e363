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
 * Measured in `bench turns` (1,000 turns, medians of 5 runs; each pair this step, then
 * `transition()` alone with the same skip of unhandled events; 2 shared cores at load 5 to 19, so
 * the figures drift, but every pair agrees): the in-memory store's cost per turn 369 / 1,439,
 * 878 / 1,364 and 775 / 1,690 µs; the durable SQLite run 444 / 276 turns/s (2.25 / 3.63 s).
 * The public API costs 55% to 290% more per turn, far over the 10% that would let it replace
 * this step; folding a 1,000-turn run's 4,017 events takes 4-8 ms here and 75-125 ms with
 * `transition()`. `engine: 'xstate'` always takes xstate's own step, to measure again.
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
