import { schedule, type SchedulerState, type Slot, type Waiting } from '../../../src/team/domain/sub-agent-scheduler';

const running = (n: number, parent = 'p'): Slot[] => Array.from({ length: n }, (_, i) => ({ id: `${parent}-r${i}`, parent }));
const waiting = (id: string, priority: number, seq: number, parent = 'p'): Waiting => ({ id, parent, priority, seq });

describe('sub-agent scheduling', () => {
  it('given free slots, when sub-agents wait, then they start by priority, then in arrival order', () => {
    const state: SchedulerState = { running: [], waiting: [waiting('low', 9, 0, 'a'), waiting('high', 1, 1, 'b'), waiting('mid1', 5, 2, 'c'), waiting('mid2', 5, 3, 'd')] };
    expect(schedule(state)).toEqual(['high', 'mid1', 'mid2', 'low']);
  });

  it('given 8 running in the process, when one waits, then it stays queued', () => {
    const state: SchedulerState = { running: [...running(4, 'a'), ...running(4, 'b')], waiting: [waiting('x', 1, 0, 'c')] };
    expect(schedule(state)).toEqual([]);
  });

  it('given 7 running, when three wait, then only the highest-priority one starts', () => {
    const state: SchedulerState = { running: [...running(4, 'a'), ...running(3, 'b')], waiting: [waiting('x', 5, 0, 'c'), waiting('y', 2, 1, 'c'), waiting('z', 3, 2, 'd')] };
    expect(schedule(state)).toEqual(['y']);
  });

  it('given a parent with 5 running, when it and another parent wait, then only the other parent\'s starts', () => {
    const state: SchedulerState = { running: running(5, 'a'), waiting: [waiting('a6', 1, 0, 'a'), waiting('b1', 10, 1, 'b')] };
    expect(schedule(state)).toEqual(['b1']);
  });

  it('given nothing running, when one parent has 7 waiting, then 5 start and 2 stay queued', () => {
    const state: SchedulerState = { running: [], waiting: Array.from({ length: 7 }, (_, i) => waiting(`w${i}`, 5, i, 'a')) };
    expect(schedule(state)).toEqual(['w0', 'w1', 'w2', 'w3', 'w4']);
  });

  it('honours other limits', () => {
    expect(schedule({ running: [], waiting: [waiting('a', 1, 0), waiting('b', 1, 1)] }, { perProcess: 1, perParent: 1 })).toEqual(['a']);
  });
});
