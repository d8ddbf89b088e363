import { SelfDecisionError } from '../../shared/self-decision';
/**
 * No self-review: who may not decide a review of a piece of work.
 *
 * Agents' identities are `agent:<role>:<runId>`; an agent spawned by another is named below its
 * parent: `<parent identity>/<child>`, and a sub-agent `agent:<role>:<runId>/<path>`, whose path
 * starts with the phase agent that spawned the chain (`agent:coder:r1/executor/1`). The executor's
 * delegation chain is the executor itself, every agent below it, and every agent above it. Human names compare case-insensitively (also
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
  if (inOneChain(decider, review.executor)) return 'delegation_chain';
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

/** `agent:<role>:<runId>[/<path>]` as its run and chain: a phase agent's chain is its role, a sub-agent's its path. */
function chainOf(identity: string): { runId: string; chain: string[] } | undefined {
  const m = /^agent:([^:/]+):([^/]+)(?:\/(.+))?$/.exec(identity);
  if (!m) return undefined;
  return { runId: m[2], chain: m[3] ? m[3].split('/') : [m[1]] };
}

/** Two agents of one run where one delegated (directly or not) to the other. */
function inOneChain(a: string, b: string): boolean {
  const x = chainOf(a);
  const y = chainOf(b);
  if (!x || !y || x.runId !== y.runId) return false;
  const [short, long] = x.chain.length <= y.chain.length ? [x.chain, y.chain] : [y.chain, x.chain];
  return short.every((part, i) => part === long[i]);
}
