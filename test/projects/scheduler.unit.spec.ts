import { nextTasksToStart, type TaskStatus } from '../../src/projects/domain/scheduler';
import { taskGraphProblem, topologicalOrder, type TaskSpec } from '../../src/projects/domain/task-graph';

const task = (key: string, dependsOn: string[] = []): TaskSpec => ({ key, goal: `do ${key}`, acceptanceCriteria: [`${key} done`], dependsOn });
const states = (entries: Record<string, TaskStatus>) => entries;

// a ─┬─► c ─► d      e (independent)
//    b ┘
const GRAPH = [task('a'), task('b'), task('c', ['a', 'b']), task('d', ['c']), task('e')];

describe('nextTasksToStart', () => {
  it('given a dag with nothing started, when scheduled, then every task without dependencies starts', () => {
    expect(nextTasksToStart(GRAPH, {}, 'dag', 10)).toEqual(['a', 'b', 'e']);
  });

  it('given a dag, when the limit leaves room for fewer, then the earliest ready tasks start', () => {
    expect(nextTasksToStart(GRAPH, {}, 'dag', 2)).toEqual(['a', 'b']);
    expect(nextTasksToStart(GRAPH, states({ a: 'running', b: 'running' }), 'dag', 2)).toEqual([]);
    expect(nextTasksToStart(GRAPH, states({ a: 'completed', b: 'running' }), 'dag', 2)).toEqual(['e']);
  });

  it('given a task whose dependencies have all completed, when scheduled, then it starts', () => {
    expect(nextTasksToStart(GRAPH, states({ a: 'completed', b: 'completed', e: 'completed' }), 'dag', 10)).toEqual(['c']);
  });

  it('given a dependency that failed or was skipped, when scheduled, then its dependents never start', () => {
    expect(nextTasksToStart(GRAPH, states({ a: 'failed', b: 'completed', e: 'completed' }), 'dag', 10)).toEqual([]);
    expect(nextTasksToStart(GRAPH, states({ a: 'completed', b: 'completed', c: 'skipped' }), 'dag', 10)).toEqual(['e']);
  });

  it('given sequential, when scheduled, then one task at a time in dependency order, whatever the limit', () => {
    const graph = [task('c', ['a']), task('a'), task('b')];
    expect(nextTasksToStart(graph, {}, 'sequential', 10)).toEqual(['a']);
    expect(nextTasksToStart(graph, states({ a: 'running' }), 'sequential', 10)).toEqual([]);
    expect(nextTasksToStart(graph, states({ a: 'completed' }), 'sequential', 10)).toEqual(['c']);
    // A failed task: its dependents wait for ever, the others go on.
    expect(nextTasksToStart(graph, states({ a: 'failed' }), 'sequential', 10)).toEqual(['b']);
  });

  it('given parallel, when scheduled, then independent tasks start up to the limit', () => {
    const graph = ['a', 'b', 'c', 'd'].map((k) => task(k));
    expect(nextTasksToStart(graph, {}, 'parallel', 3)).toEqual(['a', 'b', 'c']);
    expect(nextTasksToStart(graph, states({ a: 'completed', b: 'running', c: 'running' }), 'parallel', 3)).toEqual(['d']);
  });

  it('given a retried task back to pending, when scheduled, then it starts again', () => {
    expect(nextTasksToStart(GRAPH, states({ a: 'pending', b: 'completed', e: 'completed' }), 'dag', 10)).toEqual(['a']);
  });

  it('given cancelled tasks, when scheduled, then nothing of theirs starts', () => {
    expect(nextTasksToStart(GRAPH, states({ a: 'cancelled', b: 'cancelled', c: 'cancelled', d: 'cancelled', e: 'cancelled' }), 'dag', 10)).toEqual([]);
  });
});

describe('task graph validation', () => {
  it('accepts a dag and orders it topologically, keeping the given order where it can', () => {
    expect(taskGraphProblem(GRAPH, 'dag')).toBeUndefined();
    expect(topologicalOrder([task('c', ['a']), task('a'), task('b')])).toEqual(['a', 'c', 'b']);
  });

  it.each([
    ['a cycle', [task('a', ['c']), task('b', ['a']), task('c', ['b'])], 'dag', /cycle: a -> c -> b -> a/],
    ['a self-dependency', [task('a', ['a'])], 'dag', /depends on itself/],
    ['an unknown key', [task('a'), task('b', ['zz'])], 'dag', /unknown task 'zz'/],
    ['a duplicate key', [task('a'), task('a')], 'dag', /'a' is used twice/],
    ['a malformed key', [task('a b')], 'dag', /task key 'a b'/],
    ['no tasks', [], 'dag', /at least one task/],
    ['dependencies under parallel', [task('a'), task('b', ['a'])], 'parallel', /strategy 'parallel'/],
  ] as const)('refuses %s', (_name, tasks, strategy, message) => {
    expect(taskGraphProblem(tasks as unknown as TaskSpec[], strategy)).toMatch(message);
  });
});
