import { placedOn, placeRun, type ProcessLoad } from '../../../src/team/dispatch/placement';

const me = (active: number, cap = 2): ProcessLoad => ({ owner: 'me', active, cap });
const other = (owner: string, active: number, cap = 2): ProcessLoad => ({ owner, active, cap });

describe('placeRun', () => {
  it('given room on the launching process, when a run is placed, then the launcher takes it', () => {
    expect(placeRun(me(1), [other('a', 0)])).toEqual({ kind: 'take' });
  });

  it('given the launcher at its cap, when a run is placed, then the least-loaded other process gets it', () => {
    expect(placeRun(me(2), [other('a', 1), other('b', 0), other('c', 1)])).toEqual({ kind: 'hand', to: 'b' });
  });

  it('given equal loads, then the process with more free slots, then the smaller owner id', () => {
    expect(placeRun(me(2), [other('a', 1, 2), other('b', 1, 5)])).toEqual({ kind: 'hand', to: 'b' });
    expect(placeRun(me(2), [other('z', 1), other('y', 1)])).toEqual({ kind: 'hand', to: 'y' });
  });

  it('given every other process at its cap, when a run is placed, then it is queued', () => {
    expect(placeRun(me(2), [other('a', 2), other('b', 3)])).toEqual({ kind: 'queue' });
  });

  it('given no other live process, when the launcher is at its cap, then the run is queued', () => {
    expect(placeRun(me(1, 1), [])).toEqual({ kind: 'queue' });
  });

  it('given the launcher listed among the live processes, then it is never handed its own run', () => {
    expect(placeRun(me(2), [me(0, 10)])).toEqual({ kind: 'queue' });
  });
});

describe('placedOn', () => {
  it('given a placement, then it names the process whose lease was taken: the launcher for a take, the chosen one for a hand, none when queued or not placed', () => {
    expect(placedOn({ kind: 'take' }, 'me')).toBe('me');
    expect(placedOn({ kind: 'hand', to: 'b' }, 'me')).toBe('b');
    expect(placedOn({ kind: 'queue' }, 'me')).toBeUndefined();
    expect(placedOn(undefined, 'me')).toBeUndefined();
  });
});
