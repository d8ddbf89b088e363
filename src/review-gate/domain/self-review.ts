import { SelfDecisionError } from '../../shared/self-decision';
/**
 * No self-review (SPEC §4): who may not decide a review of a piece of work.
 *
 * Agents' identities are `agent:<role>:<runId>`; an agent spawned by another is named below its
 * parent: `<parent identity>/<child>`. The executor's delegation chain is the executor itself,
 * every agent below it, and every agent above it. Human names compare case-insensitively (also
 * names recorded before they were normalised at the boundary); agent identities exactly.
 */
import { sameIdentity } from '../../auth/names';

export type SelfReviewRule = 'executor' | 'delegation_chain' | 'launcher';

export function selfReviewRule(
  decider: string,
  review: { executor: string; launchedBy: string; allowLauncherToReview: boolean },
): SelfReviewRule | undefined {
  if (decider === review.executor) return 'executor';
  if (decider.startsWith(`${review.executor}/`) || review.executor.startsWith(`${decider}/`)) return 'delegation_chain';
  if (!review.allowLauncherToReview && sameIdentity(decider, review.launchedBy)) return 'launcher';
  return undefined;
}

/** Refused: the decider may not review this work. The message names no ids on purpose. */
export class SelfReviewError extends SelfDecisionError<SelfReviewRule> {
  override readonly name = 'SelfReviewError';
  readonly securityEvent = 'self_review_refused';
  constructor(rule: SelfReviewRule) {
    super(rule, 'you may not decide this review');
  }
}
