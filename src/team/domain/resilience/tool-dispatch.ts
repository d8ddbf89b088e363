/**
 * Tool dispatch in three passes per turn (the driver runs them; these are the pure parts):
 *
 * 1. preflight, serial in the model's order — schema and policy checks, the approval gate;
 * 2. execute — consecutive read-only calls run concurrently as one segment, every other call
 *    alone, segments in the model's order (a read after a write still sees the write);
 * 3. commit, serial — the ToolCallCompleted events appended in the model's order, whatever order
 *    the calls finished in.
 */

export type DispatchMode = 'three-pass' | 'serial';

/** Splits calls into execution segments: runs of read-only calls together, any other call alone. */
export function executionSegments<T>(items: readonly T[], readOnly: (item: T) => boolean, mode: DispatchMode = 'three-pass'): T[][] {
  const segments: T[][] = [];
  let run: T[] = [];
  for (const item of items) {
    if (mode === 'three-pass' && readOnly(item)) {
      run.push(item);
      continue;
    }
    if (run.length > 0) segments.push(run);
    run = [];
    segments.push([item]);
  }
  if (run.length > 0) segments.push(run);
  return segments;
}

/**
 * Runs segments in order, the calls of a segment concurrently. `beforeSegment` runs first for each
 * segment (the driver makes non-idempotent starts durable there). Stops before the next segment
 * once `stopped()` says so; every started call has settled when it returns.
 */
export async function runSegments<T>(
  segments: readonly T[][],
  run: (item: T) => Promise<void>,
  hooks: { beforeSegment?: (segment: readonly T[]) => Promise<void>; stopped?: () => boolean } = {},
): Promise<void> {
  for (const segment of segments) {
    if (hooks.stopped?.()) return;
    await hooks.beforeSegment?.(segment);
    // allSettled: nothing of a segment is still running when this returns, even if a call threw.
    const settled = await Promise.allSettled(segment.map((item) => run(item)));
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}
