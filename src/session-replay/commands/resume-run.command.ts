import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Identity } from '../../auth/identity';
import { CHECKPOINT_STORE, type CheckpointStore } from '../../checkpoint/checkpoint-store.port';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import type { Clock } from '../../shared/ports';
import { CLOCK } from '../../shared/system';
import { RUN_LEASES, type RunLeases } from '../../team/leases/run-leases.port';
import { DriverPool } from '../../team/dispatch/driver-pool';
import { resumeRun, type ResumeDeps, type ResumeResult } from '../resume-run';
import type { PinChange } from '../../team/domain/model-pin';

export class ResumeRunCommand {
  constructor(
    readonly runId: string,
    readonly by: Identity,
    /** An operator's re-pin (parsePinChange), recorded as RunRepinned before the run is driven. */
    readonly repin?: PinChange,
  ) {}
}

/** Resumes a suspended or crashed run (`resumeRun`), re-pinned first when an operator asks. */
@CommandHandler(ResumeRunCommand)
export class ResumeRunHandler implements ICommandHandler<ResumeRunCommand, ResumeResult> {
  private readonly deps: ResumeDeps;

  constructor(
    @Inject(COMMAND_PATH) path: CommandPath,
    @Inject(CHECKPOINT_STORE) checkpoints: CheckpointStore,
    @Inject(RUN_LEASES) leases: RunLeases,
    @Inject(CLOCK) clock: Clock,
    pool: DriverPool,
  ) {
    this.deps = { path, checkpoints, leases, clock, supervisor: pool };
  }

  execute({ runId, by, repin }: ResumeRunCommand) {
    return resumeRun(this.deps, runId, by, repin);
  }
}
