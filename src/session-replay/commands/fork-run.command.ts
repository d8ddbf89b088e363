import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Identity } from '../../auth/identity';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import { CLOCK } from '../../shared/system';
import type { Clock } from '../../shared/ports';
import type { ForkOverrides } from '../../team/domain/run-events';
import { RunSupervisor } from '../../team/dispatch/run-supervisor';
import { forkRun, type ForkDeps, type ForkResult } from '../fork-run';

export class ForkRunCommand {
  constructor(
    readonly runId: string,
    readonly turn: number,
    readonly overrides: ForkOverrides,
    readonly by: Identity,
  ) {}
}

/** Forks a run at a turn (`forkRun`). */
@CommandHandler(ForkRunCommand)
export class ForkRunHandler implements ICommandHandler<ForkRunCommand, ForkResult> {
  private readonly deps: ForkDeps;

  constructor(@Inject(COMMAND_PATH) path: CommandPath, @Inject(CLOCK) clock: Clock, supervisor: RunSupervisor) {
    this.deps = { path, clock, workspaces: supervisor };
  }

  execute({ runId, turn, overrides, by }: ForkRunCommand): Promise<ForkResult> {
    return forkRun(this.deps, runId, turn, overrides, by);
  }
}
