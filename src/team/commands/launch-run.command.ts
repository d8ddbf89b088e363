import { Inject, Logger } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Identity } from '../../auth/identity';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import { CLOCK, newRunId } from '../../shared/system';
import { buildRunLaunched, launchRun, type LaunchContext, type LaunchResult, type LaunchRunInput } from './launch';
import { placedOn, type PlacementDecision } from '../dispatch/placement';
import { RunSupervisor } from '../dispatch/run-supervisor';
import type { LaunchPolicyDefaults } from '../domain/resilience/policies';
import { MODEL_PROVIDER, type ModelProvider } from '../models/model.port';
import { catalogueOf, defaultModelOf } from '../models/model-provider.factory';
import { processModelOf } from '../domain/model-pin';
import { launchRunId } from '../domain/run-id';
import type { Clock } from '../../shared/ports';
import { DEFAULT_MODEL, LAUNCH_POLICY_DEFAULTS } from './tokens';
import { TOOL_REGISTRY } from '../tokens';
import type { RunProjectLink } from '../domain/run-events';
import type { ToolRegistry } from '../tools/tool-registry';

export class LaunchRunCommand {
  constructor(
    readonly input: LaunchRunInput,
    readonly launchedBy: Identity,
    /** Set by the project reactor: the run is a task of this project. */
    readonly project?: RunProjectLink,
  ) {}
}

/**
 * Records the launch. On a serving process the run is placed first (RunSupervisor.place: here,
 * or on the least-loaded process, by taking its lease in that process's name), and RunLaunched
 * names the chosen process in its metadata (`placedOn`): that process's dispatcher drives the run,
 * the others leave it without asking the store. With no placement (every process at its cap) it
 * waits queued for a free slot, and every dispatcher tries it. The CLI drives the run it launches
 * in the foreground.
 */
@CommandHandler(LaunchRunCommand)
export class LaunchRunHandler implements ICommandHandler<LaunchRunCommand, LaunchResult> {
  constructor(
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Inject(MODEL_PROVIDER) private readonly model: ModelProvider,
    @Inject(DEFAULT_MODEL) private readonly defaultModel: string,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LAUNCH_POLICY_DEFAULTS) private readonly defaults: LaunchPolicyDefaults,
    @Inject(TOOL_REGISTRY) private readonly tools: ToolRegistry,
    private readonly supervisor: RunSupervisor,
  ) {}

  private readonly logger = new Logger('LaunchRun');

  async execute(command: LaunchRunCommand): Promise<LaunchResult> {
    // MCP servers not reached yet are connected now, so the allow-lists see their tools.
    await this.tools.ready();
    const runId = launchRunId(command.launchedBy.id, command.input.idempotencyKey, newRunId);
    // Bad input is refused before anything is written, the placement's lease included.
    const ctx = this.context(command, runId);
    const data = buildRunLaunched(command.input, ctx);
    let placement: PlacementDecision | undefined;
    try {
      placement = await this.supervisor.place(runId);
    } catch (err) {
      // Not placed: every serving process's dispatcher may take it, as without placement.
      this.logger.warn(`run ${runId}: not placed (${(err as Error).message}); the first free process takes it`);
    }
    let result: LaunchResult | undefined;
    try {
      const on = placedOn(placement, this.supervisor.owner);
      result = await launchRun(this.path, command.input, { ...ctx, ...(on !== undefined ? { placedOn: on } : {}) }, data);
      return result;
    } finally {
      if (!result?.created) await this.supervisor.unplace(runId, placement);
    }
  }

  private context(command: LaunchRunCommand, runId: string): LaunchContext {
    return {
      runId,
      launchedBy: command.launchedBy.id,
      now: new Date(this.clock.now()),
      provider: this.model.name,
      defaultModel: this.defaultModel,
      // Launches through the API and the CLI record the product's resilience defaults.
      defaults: this.defaults,
      resolveTools: (role, allowList) => this.tools.resolveRoleTools(role, allowList),
      ...(this.tools.sandbox ? { sandbox: { mode: this.tools.sandbox.settings.mode, defaultNetwork: this.tools.sandbox.settings.defaultNetwork } } : {}),
      ...(command.project ? { project: command.project } : {}),
      models: { here: processModelOf(this.model), catalogueOf, defaultModelOf },
    };
  }
}
