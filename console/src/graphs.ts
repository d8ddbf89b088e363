// Pure shapes the pages draw: a project's tasks in dependency order, a run's sub-agents as a tree.
import type { SubAgentSummary, TaskState } from './api';

/** The tasks in dependency order (each after what it depends on), the given order where the graph allows. */
export function dependencyOrder<T extends Pick<TaskState, 'key' | 'dependsOn'>>(tasks: readonly T[]): T[] {
  const placed = new Set<string>();
  const out: T[] = [];
  let left = [...tasks];
  while (left.length > 0) {
    const ready = left.filter((t) => t.dependsOn.every((d) => placed.has(d)));
    // A graph the server accepted has no cycle; should one show up, list the rest as given.
    const next = ready.length > 0 ? ready : left;
    for (const t of next) {
      placed.add(t.key);
      out.push(t);
    }
    left = left.filter((t) => !next.includes(t));
  }
  return out;
}

export interface TreeNode<T> {
  agent: T;
  children: TreeNode<T>[];
}

/**
 * Sub-agents nested by path (`executor/1/2` under `executor/1`), in spawn order. One whose parent
 * path is not a sub-agent (`executor/1`: a phase agent spawned it) is a root.
 */
export function subAgentTree<T extends Pick<SubAgentSummary, 'path'>>(agents: readonly T[]): TreeNode<T>[] {
  const nodes = new Map(agents.map((a) => [a.path, { agent: a, children: [] as TreeNode<T>[] }]));
  const roots: TreeNode<T>[] = [];
  for (const a of agents) {
    const cut = a.path.lastIndexOf('/');
    const parent = cut > 0 ? nodes.get(a.path.slice(0, cut)) : undefined;
    (parent ? parent.children : roots).push(nodes.get(a.path)!);
  }
  return roots;
}
