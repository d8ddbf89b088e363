import { Inject, Injectable, Logger } from '@nestjs/common';
import { CHECKPOINT_STORE, type CheckpointStore } from '../../checkpoint/checkpoint-store.port';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import { CLOCK, IDS, PROCESS_ID } from '../../shared/system';
import type { Clock, Ids } from '../../shared/ports';
import { LiveRunBus } from '../live/live-run-bus';
import { MODEL_PROVIDER, type ModelProvider } from '../models/model.port';
import { RunDriver } from '../driver/run-driver';
import { SubAgentPool } from '../driver/sub-agent-pool';
import type { RetryPolicy } from '../domain/resilience/policies';
import { TOOL_REGISTRY } from '../tokens';
import type { ToolRegistry } from '../tools/tool-registry';
import { processFairShare } from './fair-share';
import { RunWorkspaces } from './run-workspaces';
import { DISPATCH_OPTIONS, RETRY_POLICY, type DispatchOptions } from './dispatch-options';

/**
 * Makes the run drivers of this process: everything a driver needs that is the same for every run
 * (the store, the model, the tools, the clock, the sub-agent slots they share), so that the pool
 * that starts and stops drivers needs none of it.
 */
@Injectable()
export class DriverFactory {
  private readonly logger = new Logger(RunDriver.name);
  /** Sub-agent slots shared by every run this process drives (8 at once, 5 per parent). */
  private readonly subAgentPool = new SubAgentPool();

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Inject(MODEL_PROVIDER) private readonly model: ModelProvider,
    @Inject(TOOL_REGISTRY) private readonly tools: ToolRegistry,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(IDS) private readonly ids: Ids,
    @Inject(RETRY_POLICY) private readonly retry: RetryPolicy,
    @Inject(CHECKPOINT_STORE) private readonly checkpoints: CheckpointStore,
    @Inject(DISPATCH_OPTIONS) private readonly options: DispatchOptions,
    private readonly live: LiveRunBus,
    private readonly workspaces: RunWorkspaces,
    /** This process's identity as a driver (and as a writer: every event's metadata names it). */
    @Inject(PROCESS_ID) private readonly owner: string,
  ) {}

  create(runId: string): RunDriver {
    return new RunDriver(runId, {
      store: this.store,
      path: this.path,
      model: this.model,
      tools: this.tools,
      clock: this.clock,
      ids: this.ids,
      workspaceRoot: this.workspaces.root,
      retry: this.retry,
      observer: this.live,
      owner: this.owner,
      checkpoints: this.checkpoints,
      checkpointEveryTurns: this.options.checkpointEveryTurns,
      logger: this.logger,
      fairShare: processFairShare,
      subAgentPool: this.subAgentPool,
    });
  }
}
