import { ForbiddenError } from './errors';

/**
 * Refused: a human (or agent) may not decide what waits at a gate because of who they are — the
 * work's author, its delegation chain, the run's launcher. The review gate and tool approvals
 * refuse with subclasses naming their rule. The message names no ids on purpose.
 */
export abstract class SelfDecisionError<R extends string = string> extends ForbiddenError {
  constructor(
    readonly rule: R,
    message: string,
  ) {
    super(message);
  }

  /** What the security log calls this refusal (`self_review_refused`, `self_approval_refused`). */
  abstract readonly securityEvent: string;
}
