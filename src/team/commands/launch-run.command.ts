import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Identity } from '../../auth/identity';
import { EVENT_STORE, type EventStore } from '../../events/event-store.port';
import { CLOCK, newRunId } from '../../shared/system';
import { launchRun, type LaunchResult, type LaunchRunInput } from '../launch';
import type { LaunchPolicyDefaults } from '../resilience/policies';
import { MODEL_PROVIDER, type ModelProvider } from '../models/model.port';
import type { Clock } from '../../shared/ports';
import { RunSupervisor } from '../run-supervisor';
import { DEFAULT_MODEL, LAUNCH_POLICY_DEFAULTS } from './tokens';

export class LaunchRunCommand {
  constructor(
    readonly input: LaunchRunInput,
    readonly launchedBy: Identity,
    /** false: record the launch only (the CLI drives the run in the foreground itself). */
    readonly startDriver = true,
  ) {}
}

@CommandHandler(LaunchRunCommand)
export class LaunchRunHandler implements ICommandHandler<LaunchRunCommand, LaunchResult> {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(MODEL_PROVIDER) private readonly model: ModelProvider,
    @Inject(DEFAULT_MODEL) private readonly defaultModel: string,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LAUNCH_POLICY_DEFAULTS) private readonly defaults: LaunchPolicyDefaults,
    private readonly supervisor: RunSupervisor,
  ) {}

  async execute(command: LaunchRunCommand): Promise<LaunchResult> {
    const result = await launchRun(this.store, command.input, {
      runId: newRunId(),
      launchedBy: command.launchedBy.id,
      now: new Date(this.clock.now()),
      provider: this.model.name,
      defaultModel: this.defaultModel,
      // Launches through the API and the CLI record the product's resilience defaults.
      defaults: this.defaults,
    });
    if (command.startDriver) void this.supervisor.start(result.runId);
    return result;
  }
}
