import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Identity } from '../../auth/identity';
import { CHECKPOINT_STORE, type CheckpointStore } from '../../checkpoint/checkpoint-store.port';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import type { Clock } from '../../shared/ports';
import { CLOCK } from '../../shared/system';
import { RUN_LEASES, type RunLeases } from '../../team/leases/run-leases';
import { RunSupervisor } from '../../team/run-supervisor';
import { resumeRun, type ResumeDeps } from '../resume-run';

export class ResumeRunCommand {
  constructor(
    readonly runId: string,
    readonly by: Identity,
  ) {}
}

/** Resumes a suspended or crashed run (`resumeRun`). */
@CommandHandler(ResumeRunCommand)
export class ResumeRunHandler implements ICommandHandler<ResumeRunCommand, { runId: string; status: string; driver: string }> {
  private readonly deps: ResumeDeps;

  constructor(
    @Inject(COMMAND_PATH) path: CommandPath,
    @Inject(CHECKPOINT_STORE) checkpoints: CheckpointStore,
    @Inject(RUN_LEASES) leases: RunLeases,
    @Inject(CLOCK) clock: Clock,
    supervisor: RunSupervisor,
  ) {
    this.deps = { path, checkpoints, leases, clock, supervisor };
  }

  execute({ runId, by }: ResumeRunCommand) {
    return resumeRun(this.deps, runId, by);
  }
}
