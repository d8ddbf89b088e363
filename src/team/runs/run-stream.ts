import { restoreCheckpoint } from '../../checkpoint/checkpoint';
import type { CheckpointStore } from '../../checkpoint/checkpoint-store.port';
import type { CommandContext, StreamModel } from '../../events/command-handling';
import type { EventStore } from '../../events/event-store/event-store.port';
import { toRunStreamId, type TeamRunEvent } from '../domain/run-events';
import { evolve, initialRunState, type RunState } from '../domain/run-state';
import { foldRunHistory } from './run-history';

/** A run's stream for the command path: loaded from its latest checkpoint, folded with `evolve`. */
export function runStream(store: EventStore, runId: string, checkpoints?: CheckpointStore): StreamModel<RunState, TeamRunEvent> {
  return {
    streamId: toRunStreamId(runId),
    load: () => loadRunState(store, runId, checkpoints),
    initial: () => initialRunState(runId),
    evolve: (state, event) => evolve(state, event, event),
  };
}

/** The metadata context of everything written to a run: correlated by the run's id. */
export function runContext(runId: string, actor: string): CommandContext {
  return { runId, correlationId: runId, actor };
}

/**
 * A run's state from its events: the latest valid checkpoint plus the events after it, or a full
 * replay when there is no checkpoint or it cannot be trusted (with a warning, never a wrong state).
 */
export async function loadRunState(
  store: EventStore,
  runId: string,
  checkpoints?: CheckpointStore,
  logger?: { warn(message: string): void },
): Promise<RunState> {
  if (checkpoints) {
    const found = await checkpoints.latest(runId).catch((err: Error) => ({ corrupt: err.message }));
    if (found && 'corrupt' in found) logger?.warn(`run ${runId}: checkpoint unusable (${found.corrupt}); replaying all events`);
    else if (found) {
      try {
        const state = restoreCheckpoint(found);
        // A checkpoint past the stream's head (events lost, an older backup restored) describes a
        // history the store does not have: appends at its revision would conflict forever.
        const head = await store.streamRevision(toRunStreamId(runId));
        if (head === null || head < state.revision) throw new Error(`it is at revision ${state.revision}, past the stream's head (${head ?? 'no stream'})`);
        return await foldRunHistory(store, runId, state, { fromRevision: state.revision + 1 });
      } catch (err) {
        logger?.warn(`run ${runId}: checkpoint at revision ${found.revision} unusable (${(err as Error).message}); replaying all events`);
      }
    }
  }
  return foldRunHistory(store, runId, initialRunState(runId));
}

