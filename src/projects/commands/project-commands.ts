import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import { projectDecider, type ProjectCommand } from '../domain/project-decider';
import type { ProjectLaunchedData, ProjectState } from '../domain/project-events';
import type { TaskSpec } from '../domain/task-graph';
import { existingProject, launchProject, projectContext, projectStream } from '../project-stream';

/** Records a project's launch (its plan too, when the tasks are given); an idempotent retry finds it. */
export class LaunchProjectCommand {
  constructor(
    readonly data: ProjectLaunchedData,
    readonly tasks?: TaskSpec[],
  ) {}
}

/** A person's command on an existing project (cancel, retry a task, decide its review). */
export class DecideProjectCommand {
  constructor(
    readonly projectId: string,
    readonly command: ProjectCommand,
    readonly by: string,
  ) {}
}

@CommandHandler(LaunchProjectCommand)
export class LaunchProjectHandler implements ICommandHandler<LaunchProjectCommand, { projectId: string; acceptedAt: string; created: boolean }> {
  constructor(@Inject(COMMAND_PATH) private readonly path: CommandPath) {}

  execute({ data, tasks }: LaunchProjectCommand): Promise<{ projectId: string; acceptedAt: string; created: boolean }> {
    return launchProject(this.path, data, tasks);
  }
}

/**
 * Decides on the project as folded, appended at the revision read; the reactor writes to the
 * project too, so a busy project is decided again on what it wrote, up to ten times.
 */
@CommandHandler(DecideProjectCommand)
export class DecideProjectHandler implements ICommandHandler<DecideProjectCommand, ProjectState> {
  constructor(@Inject(COMMAND_PATH) private readonly path: CommandPath) {}

  async execute({ projectId, command, by }: DecideProjectCommand): Promise<ProjectState> {
    await existingProject(this.path.store, projectId);
    const { state } = await this.path.handle(projectStream(this.path.store, projectId), (s) => projectDecider.decide(command, s), projectContext(projectId, by), { maxAttempts: 10 });
    return state;
  }
}
