import { handleCommand } from '../events/command-handling';
import type { EventStore, RecordedEvent } from '../events/event-store.port';
import { WrongExpectedRevisionError } from '../events/errors';
import { toRunStreamId, type RunForkedData, type TeamRunEvent } from './domain/run-events';
import { foldRun, initialRunState, type RunState } from './domain/run-state';
import { loadRunHistory } from './run-history';

/**
 * The command path for anything that writes to a run from outside its driver (cancel, review and
 * approval decisions): fold the run's whole history — a fork's starts in its parent's stream, which
 * never changes, so it is read once — decide, append at the run's own revision. When someone
 * appended first, decide again on what they wrote, up to `maxAttempts` times; the last conflict is
 * rethrown.
 */
export async function handleRunCommand<E extends TeamRunEvent>(
  store: EventStore,
  runId: string,
  decide: (state: RunState) => E[],
  options: { actor: string; maxAttempts: number },
): Promise<{ state: RunState; events: E[] }> {
  const stream = toRunStreamId(runId);
  const inherited = await inheritedHistory(store, runId);
  for (let attempt = 1; ; attempt++) {
    try {
      const { state, events } = await handleCommand(
        store,
        stream,
        (recorded) => foldRun([...inherited, ...recorded], initialRunState(runId)),
        decide,
        { runId, correlationId: runId, actor: options.actor },
      );
      return { state, events };
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError) || attempt >= options.maxAttempts) throw err;
    }
  }
}

/** The parent's events up to the fork point when the run is a fork; none otherwise. */
async function inheritedHistory(store: EventStore, runId: string): Promise<RecordedEvent[]> {
  const [first] = await store.readStream(toRunStreamId(runId), { maxCount: 1 });
  if (first?.type !== 'RunForked') return [];
  const { parent } = first.data as RunForkedData;
  return loadRunHistory(store, parent.runId, parent.revision);
}
