import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Identity } from '../../auth/identity';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import { CLOCK, newRunId } from '../../shared/system';
import { launchRun, type LaunchResult, type LaunchRunInput } from '../launch';
import type { LaunchPolicyDefaults } from '../resilience/policies';
import { MODEL_PROVIDER, type ModelProvider } from '../models/model.port';
import type { Clock } from '../../shared/ports';
import { DEFAULT_MODEL, LAUNCH_POLICY_DEFAULTS } from './tokens';

export class LaunchRunCommand {
  constructor(
    readonly input: LaunchRunInput,
    readonly launchedBy: Identity,
  ) {}
}

/**
 * Records the launch. The run is driven by whichever serving process's dispatcher takes its lease
 * (RunDispatcher), or by the CLI in the foreground.
 */
@CommandHandler(LaunchRunCommand)
export class LaunchRunHandler implements ICommandHandler<LaunchRunCommand, LaunchResult> {
  constructor(
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Inject(MODEL_PROVIDER) private readonly model: ModelProvider,
    @Inject(DEFAULT_MODEL) private readonly defaultModel: string,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LAUNCH_POLICY_DEFAULTS) private readonly defaults: LaunchPolicyDefaults,
  ) {}

  execute(command: LaunchRunCommand): Promise<LaunchResult> {
    return launchRun(this.path, command.input, {
      runId: newRunId(),
      launchedBy: command.launchedBy.id,
      now: new Date(this.clock.now()),
      provider: this.model.name,
      defaultModel: this.defaultModel,
      // Launches through the API and the CLI record the product's resilience defaults.
      defaults: this.defaults,
    });
  }
}
