import { ConflictException, Inject, NotFoundException } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Identity } from '../../auth/identity';
import { EVENT_STORE, type EventStore } from '../../events/event-store.port';
import { WrongExpectedRevisionError } from '../../events/errors';
import { CLOCK } from '../../shared/system';
import { TERMINAL_STATUSES, type TeamRunEvent } from '../domain/run-events';
import { runStatus } from '../domain/run-state';
import { handleRunCommand } from '../run-command';
import type { Clock } from '../../shared/ports';
import { RunSupervisor } from '../run-supervisor';

export class CancelRunCommand {
  constructor(
    readonly runId: string,
    readonly by: Identity,
    readonly reason?: string,
  ) {}
}

/**
 * Appends RunEnded(CANCELLED) at the run's revision, then stops the local driver (aborting its
 * model call or tool). A driver in another process finds the run ended at its next append.
 */
@CommandHandler(CancelRunCommand)
export class CancelRunHandler implements ICommandHandler<CancelRunCommand, { runId: string; status: string }> {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly supervisor: RunSupervisor,
  ) {}

  async execute({ runId, by, reason }: CancelRunCommand): Promise<{ runId: string; status: string }> {
    try {
      await handleRunCommand(
        this.store,
        runId,
        (state): TeamRunEvent[] => {
          if (!state.launched) throw new NotFoundException(`run ${runId} not found`);
          const status = runStatus(state);
          if (TERMINAL_STATUSES.has(status)) throw new ConflictException(`run ${runId} has already ended (${status})`);
          const message = reason ? `cancelled by ${by.id}: ${reason}` : `cancelled by ${by.id}`;
          return [{ type: 'RunEnded', data: { status: 'cancelled', reason: 'CANCELLED', message, at: new Date(this.clock.now()).toISOString() } }];
        },
        { actor: by.id, maxAttempts: 10 },
      );
    } catch (err) {
      if (err instanceof WrongExpectedRevisionError) throw new ConflictException(`run ${runId} is changing too fast to cancel; try again`);
      throw err;
    }
    await this.supervisor.stop(runId, 'cancelled');
    return { runId, status: 'cancelled' };
  }
}
