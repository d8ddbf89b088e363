import { createActor, type AnyStateMachine, type EventFromLogic, type SnapshotFrom } from 'xstate';

/**
 * A pure transition function for folding events, like xstate's `transition()` but reusing one
 * inert actor scope per machine: `transition()` builds a throwaway actor for every event, which
 * dominated the cost of folding long runs. Our machines only `assign`; actions that would need
 * executing are discarded here, exactly as `transition()` leaves them to its caller.
 */
export function pureTransition<M extends AnyStateMachine>(machine: M): (snapshot: SnapshotFrom<M>, event: EventFromLogic<M>) => SnapshotFrom<M> {
  let scope: unknown;
  // Events no state of the machine handles cannot change it: skip the microstep altogether.
  const handled = new Set<string>(machine.events as string[]);
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
