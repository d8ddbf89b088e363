import { Logger } from '@nestjs/common';
import type { CommandPath, CommandResult } from '../../events/command-handling';
import { WrongExpectedRevisionError } from '../../events/errors';
import { ConflictError } from '../../shared/errors';
import { SelfDecisionError } from '../../shared/self-decision';
import type { TeamRunEvent } from '../domain/run-events';
import type { RunState } from '../domain/run-state';
import { runContext, runStream } from '../runs/run-stream';

const security = new Logger('security');

/** Reads and decides again after a concurrent append, at most this many times in all. */
const MAX_ATTEMPTS = 5;

/**
 * One decision at a human gate — a review, a tool approval — through the command path: decide on
 * the run's folded state (the decider checks that it waits and that the actor may decide it),
 * append at the revision read. Someone appended first: decide again on what they wrote; when it
 * was a decision, this one is no longer pending (409). A refusal because of who the actor is goes
 * to the security log too (outside the run's stream). The run is driven on by the dispatcher.
 */
export async function decideAtGate(
  path: CommandPath,
  gate: { runId: string; subject: string; id: string; actor: string },
  decide: (state: RunState) => TeamRunEvent[],
): Promise<CommandResult<RunState, TeamRunEvent>> {
  try {
    return await path.handle(runStream(path.store, gate.runId), decide, runContext(gate.runId, gate.actor), { maxAttempts: MAX_ATTEMPTS });
  } catch (err) {
    if (err instanceof SelfDecisionError) {
      // The event names the line; what it concerns are the line's own fields, for log collectors to filter on.
      security.warn(err.securityEvent, { event: err.securityEvent, rule: err.rule, runId: gate.runId, [`${gate.subject}Id`]: gate.id, [gate.subject === 'review' ? 'decider' : 'approver']: gate.actor });
    }
    if (err instanceof WrongExpectedRevisionError) throw new ConflictError(`${gate.subject} ${gate.id}: the run kept changing while deciding; try again`);
    throw err;
  }
}
