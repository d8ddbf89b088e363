import type { EventStore, RecordedEvent } from '../events/event-store.port';
import { toRunStreamId, type RunForkedData } from './domain/run-events';

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
