/**
 * A project's task graph: tasks with keys and the keys they depend on. Pure: validation and a
 * stable topological order. A graph is valid when its keys are unique and well formed, every
 * dependency names a task of the graph (not itself), there is no cycle, and under the `parallel`
 * strategy no task depends on another (parallel is for independent tasks; `dag` honours order).
 */

import { hasVisibleText } from '../../shared/text';

export type ProjectStrategy = 'sequential' | 'parallel' | 'dag';
export const PROJECT_STRATEGIES: readonly ProjectStrategy[] = ['sequential', 'parallel', 'dag'];

export interface TaskSpec {
  key: string;
  goal: string;
  acceptanceCriteria: string[];
  dependsOn: string[];
}

/** Task keys: short, URL-safe (they appear in routes: /v1/projects/:id/tasks/:key/retry). */
export const TASK_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
export const MAX_TASKS = 100;

/** Why a graph is not valid, in one line; undefined when it is. */
export function taskGraphProblem(tasks: readonly TaskSpec[], strategy: ProjectStrategy): string | undefined {
  if (tasks.length === 0) return 'a project needs at least one task';
  if (tasks.length > MAX_TASKS) return `a project has at most ${MAX_TASKS} tasks`;
  const keys = new Set<string>();
  for (const t of tasks) {
    if (typeof t.key !== 'string' || !TASK_KEY_PATTERN.test(t.key)) return `task key '${String(t.key)}' must be 1-64 letters, digits, '_', '.' or '-' (starting with a letter or digit)`;
    if (keys.has(t.key)) return `task key '${t.key}' is used twice`;
    keys.add(t.key);
    if (typeof t.goal !== 'string' || !hasVisibleText(t.goal)) return `task '${t.key}' needs a goal`;
    if (!Array.isArray(t.acceptanceCriteria) || t.acceptanceCriteria.length === 0) return `task '${t.key}' needs at least one acceptance criterion`;
    if (t.acceptanceCriteria.some((c) => typeof c !== 'string' || !hasVisibleText(c))) return `task '${t.key}': acceptance criteria must be non-blank strings`;
    if (!Array.isArray(t.dependsOn)) return `task '${t.key}': dependsOn must be a list of task keys`;
  }
  for (const t of tasks) {
    const seen = new Set<string>();
    for (const d of t.dependsOn) {
      if (d === t.key) return `task '${t.key}' depends on itself`;
      if (!keys.has(d)) return `task '${t.key}' depends on unknown task '${d}'`;
      if (seen.has(d)) return `task '${t.key}' names dependency '${d}' twice`;
      seen.add(d);
    }
  }
  const cycle = findCycle(tasks);
  if (cycle) return `the tasks depend on each other in a cycle: ${cycle.join(' -> ')}`;
  if (strategy === 'parallel') {
    const dependent = tasks.find((t) => t.dependsOn.length > 0);
    if (dependent) return `strategy 'parallel' runs independent tasks, but task '${dependent.key}' depends on '${dependent.dependsOn[0]}' (use 'dag' or 'sequential')`;
  }
  return undefined;
}

/** A cycle of keys (first key repeated at the end), if the graph has one. */
function findCycle(tasks: readonly TaskSpec[]): string[] | undefined {
  const deps = new Map(tasks.map((t) => [t.key, t.dependsOn]));
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (key: string): string[] | undefined => {
    const s = state.get(key);
    if (s === 'done') return undefined;
    if (s === 'visiting') return [...path.slice(path.indexOf(key)), key];
    state.set(key, 'visiting');
    path.push(key);
    for (const d of deps.get(key) ?? []) {
      const found = visit(d);
      if (found) return found;
    }
    path.pop();
    state.set(key, 'done');
    return undefined;
  };
  for (const t of tasks) {
    const found = visit(t.key);
    if (found) return found;
  }
  return undefined;
}

/**
 * The keys in a topological order that keeps the given order wherever the dependencies allow
 * (Kahn's algorithm, always taking the earliest ready task): the order tasks are started in.
 */
export function topologicalOrder(tasks: readonly TaskSpec[]): string[] {
  const done = new Set<string>();
  const order: string[] = [];
  while (order.length < tasks.length) {
    const next = tasks.find((t) => !done.has(t.key) && t.dependsOn.every((d) => done.has(d)));
    if (!next) throw new Error('topologicalOrder: the graph has a cycle');
    done.add(next.key);
    order.push(next.key);
  }
  return order;
}

/** Every task that depends on `key`, directly or through others. */
export function dependentsOf(tasks: readonly TaskSpec[], key: string): string[] {
  const out = new Set<string>();
  const frontier = [key];
  while (frontier.length > 0) {
    const k = frontier.pop()!;
    for (const t of tasks) {
      if (t.dependsOn.includes(k) && !out.has(t.key)) {
        out.add(t.key);
        frontier.push(t.key);
      }
    }
  }
  return tasks.map((t) => t.key).filter((k) => out.has(k));
}

/** A plain, trimmed copy of a task (the input may be a DTO instance). */
export function normaliseTask(t: TaskSpec): TaskSpec {
  return {
    key: typeof t.key === 'string' ? t.key.trim() : t.key,
    goal: typeof t.goal === 'string' ? t.goal.trim() : t.goal,
    acceptanceCriteria: Array.isArray(t.acceptanceCriteria) ? t.acceptanceCriteria.map((c) => (typeof c === 'string' ? c.trim() : c)) : t.acceptanceCriteria,
    dependsOn: Array.isArray(t.dependsOn) ? [...t.dependsOn] : (t.dependsOn ?? []),
  };
}
