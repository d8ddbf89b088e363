/**
 * Given / when / then for a pure decider, after Emmett's `DeciderSpecification`:
 *
 *   const given = DeciderSpecification.for({ decide, evolve, initialState });
 *   given([past events]).when(command).then([expected events]);
 *   given([past events]).when(command).thenThrows(ReviewNotPendingError);
 *   given([past events]).when(command).thenNothing();
 *
 * The past is folded with `evolve` from a fresh `initialState()`, event i at revision i and position
 * i + 1 (as a read of the stream gives them), then `decide(command, state)` runs. Expected events
 * are compared in order: the same types, and each event `toMatchObject` its expectation, so any part
 * of `data` is enough. `then` also takes a function for checks of its own, and returns the decided
 * events with the state folded over the past and them, for follow-up assertions.
 *
 * Every decider's tests use this one helper; the xstate machines keep their own given/when/then
 * (test/team/machines/given-when-then.ts), which reads the driver's next move instead.
 */

export interface Decider<State, Command, Event> {
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: Event, recorded: { revision: number; position: number }): State;
  initialState(): State;
}

/** What a decider decided, and the state once those events are folded in too. */
export interface Decided<State, Event> {
  events: Event[];
  state: State;
}

/** An expected event: its type and, compared with toMatchObject, any part of the event. */
export type ExpectedEvent<Event extends { type: string }> = { type: Event['type'] } & Record<string, unknown>;

type ErrorClass<T extends Error> = abstract new (...args: never[]) => T;

export interface DeciderScenario<State, Event extends { type: string }> {
  /** The decided events match these, in order (see ExpectedEvent); or `check` runs on what was decided. */
  then(expected: ExpectedEvent<Event>[] | ((decided: Decided<State, Event>) => void)): Decided<State, Event>;
  /** The decider refuses with an error that satisfies `predicate`. Returns the error. */
  thenThrows(predicate: (error: unknown) => boolean): unknown;
  /** The decider refuses with an error of this class; `check` may look at it further. Returns the error. */
  thenThrows<T extends Error>(errorClass: ErrorClass<T>, check?: (error: T) => void): T;
  /** The decider accepts the command and decides no event. */
  thenNothing(): void;
}

export interface DeciderGiven<State, Command, Event extends { type: string }> {
  when(command: Command): DeciderScenario<State, Event>;
}

export const DeciderSpecification = {
  for<State, Command, Event extends { type: string }>(decider: Decider<State, Command, Event>): (past: Event[]) => DeciderGiven<State, Command, Event> {
    const fold = (events: Event[]): State => events.reduce((state, e, i) => decider.evolve(state, e, { revision: i, position: i + 1 }), decider.initialState());
    return (past) => ({
      when: (command) => scenario(decider, fold, [...past], command),
    });
  },
};

function scenario<State, Command, Event extends { type: string }>(
  decider: Decider<State, Command, Event>,
  fold: (events: Event[]) => State,
  past: Event[],
  command: Command,
): DeciderScenario<State, Event> {
  const decide = () => decider.decide(command, fold(past));

  function refusal(): unknown {
    let events: Event[];
    try {
      events = decide();
    } catch (error) {
      return error;
    }
    throw new Error(`expected the decider to refuse, but it decided ${JSON.stringify(events)}`);
  }

  return {
    then(expected) {
      const events = decide();
      const decided = { events, state: fold([...past, ...events]) };
      if (typeof expected === 'function') {
        expected(decided);
      } else {
        expect(events.map((e) => e.type)).toEqual(expected.map((e) => e.type));
        expect(events).toMatchObject(expected);
      }
      return decided;
    },

    thenThrows(expected: ErrorClass<Error> | ((error: unknown) => boolean), check?: (error: Error) => void): never {
      const error = refusal();
      if (isErrorClass(expected)) {
        expect(error).toBeInstanceOf(expected);
        check?.(error as Error);
      } else if (!(expected as (error: unknown) => boolean)(error)) {
        throw new Error(`the decider refused with an error the predicate does not accept: ${String(error)}`);
      }
      return error as never;
    },

    thenNothing() {
      expect(decide()).toEqual([]);
    },
  };
}

/** A class of errors (callable with `new`, Error or a subclass), as opposed to a predicate. */
function isErrorClass(value: unknown): value is ErrorClass<Error> {
  return typeof value === 'function' && (value === Error || value.prototype instanceof Error);
}
