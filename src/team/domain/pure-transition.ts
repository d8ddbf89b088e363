import { createActor, type AnyStateMachine, type EventFromLogic, type SnapshotFrom } from 'xstate';
import { compileFlatMachine } from './flat-machine';

/**
 * A pure transition function for folding events, like xstate's `transition()`. Flat machines (all
 * of triad's) take the exact fast path of `compileFlatMachine`; any other machine goes through
 * xstate's interpreter with one inert actor scope per machine (`transition()` builds a throwaway
 * actor for every event). Our machines only `assign`; actions that would need executing are
 * discarded here, exactly as `transition()` leaves them to its caller.
 */
export function pureTransition<M extends AnyStateMachine>(machine: M, options: { interpreter?: boolean } = {}): (snapshot: SnapshotFrom<M>, event: EventFromLogic<M>) => SnapshotFrom<M> {
  // Events no state of the machine handles cannot change it: skip the step altogether.
  const handled = new Set<string>(machine.events as string[]);
  const flat = options.interpreter ? undefined : compileFlatMachine(machine);
  if (flat) return (snapshot, event) => (handled.has((event as { type: string }).type) ? flat(snapshot, event) : snapshot);
  let scope: unknown;
  return (snapshot, event) => {
    if (!handled.has((event as { type: string }).type)) return snapshot;
    if (!scope) {
      const actorScope = (createActor(machine) as unknown as { _actorScope: { actionExecutor: (action: unknown) => void } })._actorScope;
      actorScope.actionExecutor = () => undefined;
      scope = actorScope;
    }
    return machine.transition(snapshot, event, scope as never) as SnapshotFrom<M>;
  };
}
