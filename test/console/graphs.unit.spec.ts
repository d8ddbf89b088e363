import { dependencyOrder, subAgentTree, type TreeNode } from '../../console/src/graphs';

const task = (key: string, dependsOn: string[] = []) => ({ key, dependsOn });
const keys = (tasks: Array<{ key: string }>) => tasks.map((t) => t.key);
const shape = (nodes: Array<TreeNode<{ path: string }>>): unknown => nodes.map((n) => (n.children.length ? { [n.agent.path]: shape(n.children) } : n.agent.path));

describe("the console's project graph", () => {
  it('given tasks listed before what they depend on, when ordered, then each comes after its dependencies, the given order kept otherwise', () => {
    expect(keys(dependencyOrder([task('c', ['b']), task('b', ['a']), task('x'), task('a')]))).toEqual(['x', 'a', 'b', 'c']);
  });

  it('given independent tasks, when ordered, then the given order is kept', () => {
    expect(keys(dependencyOrder([task('b'), task('a'), task('c')]))).toEqual(['b', 'a', 'c']);
  });

  it('given a cycle (never accepted by the server), when ordered, then every task is still listed once', () => {
    expect(keys(dependencyOrder([task('a', ['b']), task('b', ['a']), task('z')]))).toEqual(['z', 'a', 'b']);
  });
});

describe("the console's delegation tree", () => {
  it('given sub-agents of two phase agents and a nested one, when built, then each is under its path parent, in spawn order', () => {
    const agents = [{ path: 'executor/1' }, { path: 'executor/2' }, { path: 'executor/1/1' }, { path: 'architect/1' }, { path: 'executor/1/1/1' }];
    expect(shape(subAgentTree(agents))).toEqual([{ 'executor/1': [{ 'executor/1/1': ['executor/1/1/1'] }] }, 'executor/2', 'architect/1']);
  });

  it('given no sub-agent, when built, then the tree is empty', () => {
    expect(subAgentTree([])).toEqual([]);
  });
});
