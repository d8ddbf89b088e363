import { ConflictError, NotFoundError } from '../../shared/errors';
import { TERMINAL_STATUSES, type TeamRunEvent } from './run-events';
import { runStatus, type RunState } from './run-state';
import { pinOf, repinned, samePin, type PinChange } from './model-pin';

/**
 * What people and recovery ask of a run from outside its driver, decided on the run's folded
 * state: pure, with time given in the command. (The driver's own steps: `nextAction` picks
 * one, `run-steps.ts` builds its events; review and tool-approval decisions: their deciders.)
 */
export type RunCommand =
  | { type: 'CancelRun'; runId: string; by: string; reason?: string; at: string }
  | { type: 'ResumeRun'; runId: string; by: string; at: string; repin?: PinChange };

export class RunNotFoundError extends NotFoundError {
  override name = 'RunNotFoundError';
  constructor(runId: string) {
    super(`run ${runId} not found`);
  }
}

/** The run has ended (cancel) or cannot be driven on (resume): 409. */
export class RunNotActiveError extends ConflictError {
  override name = 'RunNotActiveError';
}

export function decideRun(command: RunCommand, state: RunState): TeamRunEvent[] {
  if (!state.launched) throw new RunNotFoundError(command.runId);
  const status = runStatus(state);
  switch (command.type) {
    case 'CancelRun': {
      if (TERMINAL_STATUSES.has(status)) throw new RunNotActiveError(`run ${command.runId} has already ended (${status})`);
      const message = command.reason ? `cancelled by ${command.by}: ${command.reason}` : `cancelled by ${command.by}`;
      return [{ type: 'RunEnded', data: { status: 'cancelled', reason: 'CANCELLED', message, at: command.at } }];
    }
    case 'ResumeRun': {
      if (TERMINAL_STATUSES.has(status)) throw new RunNotActiveError(`run ${command.runId} has ended (${status}); fork it to continue from a turn`);
      if (status === 'awaiting_review') throw new RunNotActiveError(`run ${command.runId} waits for a human review, not for a driver`);
      // An operator's re-pin is recorded first (when it changes anything); only a suspended run
      // records its resumption, any other is driven on as it stands.
      const events: TeamRunEvent[] = [];
      if (command.repin) {
        const from = structuredClone(pinOf(state.launched));
        const to = repinned(from, command.repin);
        if (!samePin(from, to)) events.push({ type: 'RunRepinned', data: { by: command.by, from, to, at: command.at } });
      }
      if (state.suspended) events.push({ type: 'RunResumed', data: { by: command.by, at: command.at } });
      return events;
    }
    default: {
      const never: never = command;
      throw new Error(`unknown run command ${(never as { type: string }).type}`);
    }
  }
}
