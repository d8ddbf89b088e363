import type { EventStore } from '../events/event-store/event-store.port';
import type { HumanRole } from '../auth/roles';
import { InvalidRequestError } from '../shared/errors';
import { parseReviewId } from '../team/domain/review-id';
import { loadRunHistory } from '../team/runs/run-history';
import { resolvedWorkspaceHistory } from '../session-replay/workspace-view';
import { ReviewNotFoundError } from './domain/review-decider';
import { reviewView, type ReviewView } from './review-view';

/** One review read from its run's stream (review-view.ts): 400 for an id that cannot be one, 404 for a review never opened. */
export async function loadReviewView(store: EventStore, reviewId: string, caller?: { id: string; roles: readonly HumanRole[] }): Promise<ReviewView> {
  const parsed = parseReviewId(reviewId);
  if (!parsed) throw new InvalidRequestError('a review id is rev_<runId>_<iteration>');
  const history = await loadRunHistory(store, parsed.runId);
  const view = history.length === 0 ? undefined : reviewView(history, reviewId, await resolvedWorkspaceHistory(store, history), caller);
  if (!view) throw new ReviewNotFoundError(reviewId);
  return view;
}
