import { SUB_AGENT_LIMITS } from './sub-agents';

/**
 * Which waiting sub-agents may start: pure, so the policy is tested on its own. At most
 * `perProcess` run at once in a process and `perParent` per spawning agent; the rest wait, taken
 * by priority (1 highest … 10 lowest), then in arrival order.
 */

export interface SchedulerLimits {
  perProcess: number;
  perParent: number;
}

export const DEFAULT_SCHEDULER_LIMITS: SchedulerLimits = {
  perProcess: SUB_AGENT_LIMITS.maxRunningPerProcess,
  perParent: SUB_AGENT_LIMITS.maxRunningPerParent,
};

export interface Slot {
  /** Unique in the process: `<runId>/<path>`. */
  id: string;
  /** Identity of the spawning agent. */
  parent: string;
}

export interface Waiting extends Slot {
  priority: number;
  /** Arrival order. */
  seq: number;
}

export interface SchedulerState {
  running: readonly Slot[];
  waiting: readonly Waiting[];
}

/** The ids of the waiting sub-agents to start now, in the order they start. */
export function schedule(state: SchedulerState, limits: SchedulerLimits = DEFAULT_SCHEDULER_LIMITS): string[] {
  const perParent = new Map<string, number>();
  for (const r of state.running) perParent.set(r.parent, (perParent.get(r.parent) ?? 0) + 1);
  let running = state.running.length;
  const started: string[] = [];
  const queue = [...state.waiting].sort((a, b) => a.priority - b.priority || a.seq - b.seq);
  for (const w of queue) {
    if (running >= limits.perProcess) break;
    const ofParent = perParent.get(w.parent) ?? 0;
    // A parent at its limit does not hold back the others behind it.
    if (ofParent >= limits.perParent) continue;
    started.push(w.id);
    perParent.set(w.parent, ofParent + 1);
    running++;
  }
  return started;
}
