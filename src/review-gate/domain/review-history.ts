import type { RecordedEvent } from '../../events/event-store/event-store.port';
import type { ReviewDecidedData, ReviewOpenedData, RunEndedData } from '../../team/domain/run-events';

/**
 * Why a review cannot be decided, from the run's events (the fold keeps only the current review):
 * it never existed (404), it was decided (by whom, how), or the run ended. Pure; only read when a
 * decision was refused, so deciding costs nothing more.
 */
export type ReviewStanding =
  | { kind: 'unknown' }
  | { kind: 'decided'; decision: Pick<ReviewDecidedData, 'outcome' | 'decider' | 'at'> }
  | { kind: 'run_ended'; ended: Pick<RunEndedData, 'status' | 'reason'> }
  | { kind: 'superseded' }
  | { kind: 'open' };

export function reviewStanding(events: Iterable<Pick<RecordedEvent, 'type' | 'data'>>, reviewId: string): ReviewStanding {
  let opened = false;
  let decided: ReviewDecidedData | undefined;
  let ended: RunEndedData | undefined;
  let later = false;
  for (const e of events) {
    if (e.type === 'ReviewOpened') {
      const id = (e.data as ReviewOpenedData).reviewId;
      if (id === reviewId) opened = true;
      else if (opened) later = true;
    } else if (e.type === 'ReviewDecided') {
      const d = e.data as ReviewDecidedData;
      // An escalation leaves the review open for a human.
      if (d.reviewId === reviewId && d.outcome !== 'escalated') decided = d;
    } else if (e.type === 'RunEnded') ended = e.data as RunEndedData;
  }
  if (!opened) return { kind: 'unknown' };
  if (decided) return { kind: 'decided', decision: { outcome: decided.outcome, decider: decided.decider, at: decided.at } };
  if (ended) return { kind: 'run_ended', ended: { status: ended.status, reason: ended.reason } };
  return later ? { kind: 'superseded' } : { kind: 'open' };
}

/** The 409 message for a review that is not waiting for a decision. */
export function notPendingMessage(reviewId: string, standing: ReviewStanding): string {
  switch (standing.kind) {
    case 'decided': {
      const d = standing.decision;
      return `review ${reviewId} was already decided: ${d.outcome} by ${d.decider} at ${d.at}`;
    }
    case 'run_ended':
      return standing.ended.status === 'cancelled'
        ? `review ${reviewId} can no longer be decided: the run was cancelled`
        : `review ${reviewId} can no longer be decided: the run ended ${standing.ended.reason} (${standing.ended.status})`;
    case 'superseded':
      return `review ${reviewId} can no longer be decided: a later review of the run replaced it`;
    default:
      return `review ${reviewId} is not waiting for a decision`;
  }
}
