/**
 * Where a new run is driven, among the serving processes sharing a store (pure: no I/O).
 *
 * The launching process takes the run unless it is at its cap (`TRIAD_MAX_ACTIVE_RUNS`); then the
 * least-loaded live process below its own cap does (fewest active runs, then the most free slots,
 * then the smallest owner id, so every launcher that sees the same loads picks the same process);
 * when every process is at its cap the run stays queued until a slot frees anywhere.
 */

/** A serving process's advertised load: runs it drives (or was handed), and its cap. */
export interface ProcessLoad {
  owner: string;
  active: number;
  cap: number;
}

export type PlacementDecision = { kind: 'take' } | { kind: 'hand'; to: string } | { kind: 'queue' };

/** Decides where a run goes, given this process's load and the live others' advertised loads. */
export function placeRun(me: ProcessLoad, others: readonly ProcessLoad[]): PlacementDecision {
  if (me.active < me.cap) return { kind: 'take' };
  let best: ProcessLoad | undefined;
  for (const p of others) {
    if (p.owner === me.owner || p.active >= p.cap) continue;
    if (!best || lessLoaded(p, best)) best = p;
  }
  return best ? { kind: 'hand', to: best.owner } : { kind: 'queue' };
}

/** The process a placement chose (its lease taken in that process's name), if any: `self` for a take. */
export function placedOn(placement: PlacementDecision | undefined, self: string): string | undefined {
  if (placement?.kind === 'take') return self;
  return placement?.kind === 'hand' ? placement.to : undefined;
}

function lessLoaded(a: ProcessLoad, b: ProcessLoad): boolean {
  if (a.active !== b.active) return a.active < b.active;
  const freeA = a.cap - a.active;
  const freeB = b.cap - b.active;
  if (freeA !== freeB) return freeA > freeB;
  return a.owner < b.owner;
}

/** Whether a process driving `active` runs (placed ones not started yet included) may start one more. */
export function hasRoom(active: number, cap: number): boolean {
  return active < cap;
}
