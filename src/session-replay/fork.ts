import { InvalidRequestError } from '../shared/errors';
import type { RecordedEvent } from '../events/event-store/event-store.port';
import { runIdOfStream } from '../team/runs/run-summary';

export class InvalidForkError extends InvalidRequestError {
  override readonly name = 'InvalidForkError';
}

/**
 * What a human is asked or decides about. They name the run they were asked on (review and approval
 * ids carry its id), so a fork never inherits them past its fork point: it reaches the gate again and
 * asks for itself. Otherwise a fork at the last turn would wait on its parent's review for ever.
 */
const HUMAN_GATE_EVENTS = new Set(['ReviewOpened', 'ReviewDecided', 'ToolApprovalRequested', 'ToolApprovalDecided']);

/**
 * Where "turn N" of a run is: right after the Nth model turn and its tool results, before the next
 * model call starts or a human is asked anything (or, past the last turn, before the run ended or
 * was suspended). Returned as the stream and revision of the last event of the fork's inherited
 * history — which may be an ancestor's event when the run is itself a fork.
 */
export function forkPoint(history: RecordedEvent[], turn: number): { index: number; runId: string; revision: number; turns: number } {
  if (!Number.isSafeInteger(turn) || turn < 0) throw new InvalidForkError('turn must be a non-negative integer');
  let completed = 0;
  let index = -1;
  for (let i = 0; i < history.length; i++) {
    const e = history[i];
    if ((e.type === 'ModelCallStarted' || HUMAN_GATE_EVENTS.has(e.type)) && completed >= turn) break;
    if (e.type === 'RunEnded' || e.type === 'RunSuspended') break;
    if (e.type === 'ModelCallCompleted') completed++;
    index = i;
  }
  if (completed < turn) throw new InvalidForkError(`the run has only ${completed} turn(s); cannot fork at turn ${turn}`);
  if (index < 0) throw new InvalidForkError('the run has no events to fork from');
  const at = history[index];
  const runId = runIdOfStream(at.streamId);
  if (!runId) throw new InvalidForkError('the fork point is not in a run stream');
  return { index, runId, revision: at.revision, turns: completed };
}
