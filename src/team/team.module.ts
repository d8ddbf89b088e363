import { Redactor } from '../observability/log-format';
import { Logger, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { CancelRunHandler } from './commands/cancel-run.command';
import { LaunchRunHandler } from './commands/launch-run.command';
import { DEFAULT_MODEL, LAUNCH_POLICY_DEFAULTS } from './commands/tokens';
import { RunsController } from './http/runs.controller';
import { LiveRunBus } from './live-run-bus';
import { createModelProvider, type ModelSelection } from './models/model-provider.factory';
import { MODEL_PROVIDER } from './models/model.port';
import { GetRunHandler, ListRunsHandler } from './queries/run.queries';
import { productLaunchDefaults, retrySchedule } from './resilience/policies';
import { RETRY_POLICY, RunSupervisor, SUPERVISOR_OPTIONS } from './dispatch/run-supervisor';
import { RECOVERY_INTERVAL_MS, RecoveryService } from './dispatch/recovery.service';
import { RunDispatcher } from './dispatch/run-dispatcher';
import { RUN_LEASES } from './leases/run-leases';
import { CHECKPOINT_STORE } from '../checkpoint/checkpoint-store.port';
import { STORAGE, type Storage } from '../storage/storage';
import { RunsProjection } from './runs.projection';
import { SANDBOX, TOOL_REGISTRY } from './tokens';
import { Sandbox } from './tools/sandbox/sandbox';
import { sandboxSecrets } from '../config/config';
import { createDefaultToolRegistry } from './tools/tool-registry';

const MODEL_SELECTION = Symbol('MODEL_SELECTION');

export const TEAM_COMMAND_HANDLERS = [LaunchRunHandler, CancelRunHandler];
export const TEAM_QUERY_HANDLERS = [GetRunHandler, ListRunsHandler];

@Module({
  imports: [CqrsModule],
  controllers: [RunsController],
  providers: [
    ...TEAM_COMMAND_HANDLERS,
    ...TEAM_QUERY_HANDLERS,
    RunsProjection,
    RunSupervisor,
    RecoveryService,
    RunDispatcher,
    LiveRunBus,
    // Next to the events, in the storage opened once by the events module (closed there too).
    { provide: CHECKPOINT_STORE, inject: [STORAGE], useFactory: (s: Storage) => s.checkpoints },
    { provide: RUN_LEASES, inject: [STORAGE], useFactory: (s: Storage) => s.leases },
    { provide: SUPERVISOR_OPTIONS, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => ({ leaseTtlMs: c.leaseTtlMs, checkpointEveryTurns: c.checkpointEveryTurns, maxActiveRuns: c.maxActiveRuns }) },
    { provide: RECOVERY_INTERVAL_MS, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => c.recoveryIntervalMs },
    { provide: MODEL_SELECTION, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => createModelProvider(c) },
    { provide: MODEL_PROVIDER, inject: [MODEL_SELECTION], useFactory: (s: ModelSelection) => s.provider },
    { provide: DEFAULT_MODEL, inject: [MODEL_SELECTION], useFactory: (s: ModelSelection) => s.defaultModel },
    // The built-in tools, and the MCP servers of TRIAD_MCP_CONFIG: connected on first need (a
    // launch, a run driven here; `triad serve` at start), closed by the supervisor's shutdown. The
    // MCP SDK is loaded only when servers are configured.
    // The host is probed once, when first asked (serve asks at start, to say what the sandbox can do).
    { provide: SANDBOX, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => Sandbox.open(c.sandbox) },
    {
      provide: TOOL_REGISTRY,
      inject: [TRIAD_CONFIG, SANDBOX],
      useFactory: async (c: TriadConfig, sandbox: Sandbox) => {
        const registry = createDefaultToolRegistry(sandbox);
        registry.secrets = Redactor.fromEnv(process.env, [...(c.mcp?.secrets ?? []), ...sandboxSecrets(c.sandbox)]);
        if (c.mcp) {
          const { McpHub } = await import('./tools/mcp/mcp-hub');
          registry.addSource(new McpHub(c.mcp, { logger: new Logger('McpTools'), sandbox, dataDir: c.dataDir }));
        }
        return registry;
      },
    },
    { provide: RETRY_POLICY, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => retrySchedule(c.modelRetryDelaysMs) },
    { provide: LAUNCH_POLICY_DEFAULTS, inject: [RETRY_POLICY], useFactory: productLaunchDefaults },
  ],
  exports: [SANDBOX, RunSupervisor, RecoveryService, RunDispatcher, CHECKPOINT_STORE, RUN_LEASES, RunsProjection, LiveRunBus, MODEL_PROVIDER, TOOL_REGISTRY, DEFAULT_MODEL],
})
export class TeamModule {}
