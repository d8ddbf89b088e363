import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Identity } from '../../auth/identity';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import { CLOCK } from '../../shared/system';
import type { Clock } from '../../shared/ports';
import { runDecider } from '../domain/run-decider';
import { runContext, runStream } from '../runs/run-stream';
import { RunSupervisor } from '../dispatch/run-supervisor';

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
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly supervisor: RunSupervisor,
  ) {}

  async execute({ runId, by, reason }: CancelRunCommand): Promise<{ runId: string; status: string }> {
    const at = new Date(this.clock.now()).toISOString();
    // A busy driver appends often: decide again on what it wrote, up to ten times.
    await this.path.handle(runStream(this.path.store, runId), (state) => runDecider.decide({ type: 'CancelRun', runId, by: by.id, reason, at }, state), runContext(runId, by.id), {
      maxAttempts: 10,
    });
    await this.supervisor.stop(runId, 'cancelled');
    return { runId, status: 'cancelled' };
  }
}
