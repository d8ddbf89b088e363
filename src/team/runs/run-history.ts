import { DEFAULT_PAGE_EVENTS, type EventStore, type RecordedEvent } from '../../events/event-store/event-store.port';
import { toRunStreamId, type RunForkedData } from '../domain/run-events';
import { foldRun, type RunState } from '../domain/run-state';

/** Events read per page when folding a stream: memory stays flat however long the run. */
export const FOLD_PAGE_EVENTS = DEFAULT_PAGE_EVENTS;

/**
 * A run's history a page at a time: its own stream from `fromRevision` up to `upToRevision`
 * (inclusive; the end when undefined), preceded — for a forked run read from its start — by its
 * parent's history up to the fork point (recursively for forks of forks). Parent events are read
 * from the parent's stream: a fork links to them, it does not copy them.
 */
export async function* runHistoryPages(
  store: EventStore,
  runId: string,
  options: { fromRevision?: number; upToRevision?: number } = {},
): AsyncGenerator<RecordedEvent[]> {
  const start = options.fromRevision ?? 0;
  let first = true;
  for await (const page of store.readStreamPages(toRunStreamId(runId), { fromRevision: start, toRevision: options.upToRevision, pageSize: FOLD_PAGE_EVENTS })) {
    if (first && start === 0 && page[0].type === 'RunForked') {
      const parent = (page[0].data as RunForkedData).parent;
      yield* runHistoryPages(store, parent.runId, { upToRevision: parent.revision });
    }
    first = false;
    yield page;
  }
}

/** The events a run's state is folded from (see `runHistoryPages`), all at once. */
export async function loadRunHistory(store: EventStore, runId: string, upToRevision?: number): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  for await (const page of runHistoryPages(store, runId, { upToRevision })) for (const e of page) events.push(e);
  return events;
}

/**
 * Folds a run's history into `state` page by page, from `fromRevision` of its own stream: holding
 * one page of decoded events at a time keeps a long replay's heap — and its garbage collection —
 * small.
 */
export async function foldRunHistory(
  store: EventStore,
  runId: string,
  state: RunState,
  options: { fromRevision?: number; upToRevision?: number } = {},
): Promise<RunState> {
  for await (const page of runHistoryPages(store, runId, options)) foldRun(page, state);
  return state;
}
