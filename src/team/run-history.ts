import type { EventStore, RecordedEvent } from '../events/event-store.port';
import { toRunStreamId, type RunForkedData } from './domain/run-events';
import { foldRun, type RunState } from './domain/run-state';

/**
 * The events a run's state is folded from: its own stream, preceded — for a forked run — by its
 * parent's history up to the fork point (recursively for forks of forks). Parent events are read
 * from the parent's stream: a fork links to them, it does not copy them.
 */
export async function loadRunHistory(store: EventStore, runId: string, upToRevision?: number): Promise<RecordedEvent[]> {
  const own = await store.readStream(toRunStreamId(runId), upToRevision === undefined ? {} : { maxCount: upToRevision + 1 });
  if (own.length === 0 || own[0].type !== 'RunForked') return own;
  const parent = (own[0].data as RunForkedData).parent;
  const inherited = await loadRunHistory(store, parent.runId, parent.revision);
  return [...inherited, ...own];
}

/** Events read per page when folding a stream: memory stays flat however long the run. */
export const FOLD_PAGE_EVENTS = 2_000;

/**
 * Folds a run's history (as `loadRunHistory` defines it) into `state`, page by page, from
 * `fromRevision` of its own stream up to `upToRevision` (inclusive; the end when undefined). A
 * fork's parent history is folded first when the fold starts at the fork's first event. Holding
 * one page of decoded events at a time keeps a long replay's heap — and its garbage collection —
 * small.
 */
export async function foldRunHistory(
  store: EventStore,
  runId: string,
  state: RunState,
  options: { fromRevision?: number; upToRevision?: number } = {},
): Promise<RunState> {
  const stream = toRunStreamId(runId);
  let from = options.fromRevision ?? 0;
  const start = from;
  for (;;) {
    const count = options.upToRevision === undefined ? FOLD_PAGE_EVENTS : Math.min(FOLD_PAGE_EVENTS, options.upToRevision + 1 - from);
    if (count <= 0) break;
    const page = await store.readStream(stream, { fromRevision: from, maxCount: count });
    if (from === 0 && start === 0 && page.length > 0 && page[0].type === 'RunForked') {
      const parent = (page[0].data as RunForkedData).parent;
      await foldRunHistory(store, parent.runId, state, { upToRevision: parent.revision });
    }
    foldRun(page, state);
    if (page.length < count) break;
    from += page.length;
  }
  return state;
}
