import { topologicalOrder, type ProjectStrategy, type TaskSpec } from './task-graph';

/** A task's state in its project. */
export type TaskStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped' | 'cancelled';

/** How many task runs a project has in flight at most, unless it says otherwise. */
export const DEFAULT_PROJECT_CONCURRENCY = 10;

/**
 * The tasks to start now, in the order to start them: pending tasks whose dependencies have all
 * completed, in topological order (the given order where dependencies allow), as many as the
 * limit leaves room for beside the running ones. `sequential` runs one task at a time whatever
 * the limit; `parallel` and `dag` run up to `concurrency` (a parallel graph has no dependencies, so
 * every pending task is ready). Pure: the decider records the starts.
 */
export function nextTasksToStart(
  graph: readonly TaskSpec[],
  states: Readonly<Record<string, TaskStatus>>,
  strategy: ProjectStrategy,
  concurrency: number = DEFAULT_PROJECT_CONCURRENCY,
): string[] {
  const limit = strategy === 'sequential' ? 1 : Math.max(1, concurrency);
  const running = graph.filter((t) => states[t.key] === 'running').length;
  const room = limit - running;
  if (room <= 0) return [];
  const byKey = new Map(graph.map((t) => [t.key, t]));
  const ready = topologicalOrder(graph).filter((key) => {
    if ((states[key] ?? 'pending') !== 'pending') return false;
    return byKey.get(key)!.dependsOn.every((d) => states[d] === 'completed');
  });
  return ready.slice(0, room);
}
