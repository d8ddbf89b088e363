import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Identity } from '../../auth/identity';
import { CHECKPOINT_STORE, type CheckpointStore } from '../../checkpoint/checkpoint-store.port';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import { ConflictError } from '../../shared/errors';
import type { Clock } from '../../shared/ports';
import { CLOCK } from '../../shared/system';
import { decideRun } from '../../team/domain/run-decider';
import { RUN_LEASES, type RunLeases } from '../../team/leases/run-leases';
import { runContext, runStream } from '../../team/run-stream';
import { RunSupervisor } from '../../team/run-supervisor';

export class ResumeRunCommand {
  constructor(
    readonly runId: string,
    readonly by: Identity,
  ) {}
}

/**
 * Resumes a suspended or crashed run: records RunResumed when it was suspended. A serving
 * process's dispatcher then drives it (the CLI drives it in the foreground); a crashed run with no
 * live lease is taken by whoever resumes it or by recovery.
 */
@CommandHandler(ResumeRunCommand)
export class ResumeRunHandler implements ICommandHandler<ResumeRunCommand, { runId: string; status: string; driver: string }> {
  constructor(
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Inject(CHECKPOINT_STORE) private readonly checkpoints: CheckpointStore,
    @Inject(RUN_LEASES) private readonly leases: RunLeases,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly supervisor: RunSupervisor,
  ) {}

  async execute({ runId, by }: ResumeRunCommand) {
    if (this.supervisor.isDriving(runId)) return { runId, status: 'running', driver: this.supervisor.owner };
    const model = runStream(this.path.store, runId, this.checkpoints);
    const holder = await this.leases.holder(runId, this.clock.now());
    if (holder && holder !== this.supervisor.owner) {
      decideRun({ type: 'ResumeRun', runId, by: by.id, at: '' }, await model.load());
      throw new ConflictError(`run ${runId} is being driven by another process`);
    }
    const at = new Date(this.clock.now()).toISOString();
    await this.path.handle(model, (state) => decideRun({ type: 'ResumeRun', runId, by: by.id, at }, state), runContext(runId, by.id), { maxAttempts: 1 });
    // This process takes the run when it can: a suspended run's RunResumed wakes the dispatchers
    // too, a crashed run's (nothing recorded) is otherwise recovery's once its lease expires.
    const leased = await this.supervisor.startIfLeased(runId, { overCap: true });
    if (!leased) throw new ConflictError(`run ${runId} is being driven by another process`);
    return { runId, status: 'running', driver: this.supervisor.owner };
  }
}
