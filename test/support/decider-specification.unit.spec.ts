import { DeciderSpecification, type Decider } from './decider-specification';

// The helper itself, on a toy decider: it passes what holds and fails what does not.

type Event = { type: 'Added'; data: { n: number } } | { type: 'Reset'; data: Record<string, never> };
type Command = { type: 'Add'; n: number } | { type: 'Reset' };
interface State {
  total: number;
  revision: number;
}

class TooBigError extends Error {
  override readonly name = 'TooBigError';
  constructor(readonly total: number) {
    super(`total ${total} would pass 10`);
  }
}

const counter: Decider<State, Command, Event> = {
  decide(command, state) {
    switch (command.type) {
      case 'Add':
        if (state.total + command.n > 10) throw new TooBigError(state.total + command.n);
        return command.n === 0 ? [] : [{ type: 'Added', data: { n: command.n } }];
      case 'Reset':
        return [{ type: 'Reset', data: {} }];
    }
  },
  evolve: (state, event, { revision }) => ({ total: event.type === 'Added' ? state.total + event.data.n : 0, revision }),
  initialState: () => ({ total: 0, revision: -1 }),
};

const given = DeciderSpecification.for(counter);
const added = (n: number): Event => ({ type: 'Added', data: { n } });

describe('DeciderSpecification', () => {
  it('then: the decided events match, in order; the outcome carries the state folded over past and decided events', () => {
    const { events, state } = given([added(2), added(3)]).when({ type: 'Add', n: 4 }).then([{ type: 'Added', data: { n: 4 } }]);
    expect(events).toEqual([added(4)]);
    expect(state).toEqual({ total: 9, revision: 2 });
    given([added(1)]).when({ type: 'Add', n: 1 }).then(({ state: s }) => expect(s.total).toBe(2));
  });

  it('then fails on other events, another order, another count or a refusal', () => {
    expect(() => given([]).when({ type: 'Add', n: 4 }).then([{ type: 'Added', data: { n: 5 } }])).toThrow();
    expect(() => given([]).when({ type: 'Add', n: 4 }).then([{ type: 'Reset' }])).toThrow();
    expect(() => given([]).when({ type: 'Add', n: 4 }).then([])).toThrow();
    expect(() => given([added(10)]).when({ type: 'Add', n: 1 }).then([{ type: 'Added' }])).toThrow(TooBigError);
  });

  it('thenThrows: by class (with a check of the typed error) or by predicate; fails when the decider accepts or throws something else', () => {
    const error = given([added(9)]).when({ type: 'Add', n: 2 }).thenThrows(TooBigError, (err) => expect(err.total).toBe(11));
    expect(error.total).toBe(11);
    given([added(9)]).when({ type: 'Add', n: 2 }).thenThrows((err) => err instanceof TooBigError && err.total === 11);
    expect(() => given([]).when({ type: 'Add', n: 2 }).thenThrows(TooBigError)).toThrow(/expected the decider to refuse/);
    expect(() => given([added(9)]).when({ type: 'Add', n: 2 }).thenThrows(RangeError)).toThrow();
    expect(() => given([added(9)]).when({ type: 'Add', n: 2 }).thenThrows(() => false)).toThrow(/predicate/);
  });

  it('thenNothing: accepted with no event; fails when something was decided', () => {
    given([added(1)]).when({ type: 'Add', n: 0 }).thenNothing();
    expect(() => given([]).when({ type: 'Reset' }).thenNothing()).toThrow();
  });

  it('each assertion folds the past afresh: a scenario can be asserted twice', () => {
    const scenario = given([added(5)]).when({ type: 'Add', n: 5 });
    scenario.then([{ type: 'Added', data: { n: 5 } }]);
    scenario.then([{ type: 'Added', data: { n: 5 } }]);
  });
});
