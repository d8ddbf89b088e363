import { Redactor } from '../observability/log-format';
import { Logger, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { CancelRunHandler } from './commands/cancel-run.command';
import { LaunchRunHandler } from './commands/launch-run.command';
import { DEFAULT_MODEL, LAUNCH_POLICY_DEFAULTS } from './commands/tokens';
import { RunsController } from './http/runs.controller';
import { LiveRunBus } from './live/live-run-bus';
import { createModelProvider, type ModelSelection } from './models/model-provider.factory';
import { MODEL_PROVIDER, type ModelProvider } from './models/model.port';
import { GetRunHandler, ListRunsHandler } from './queries/run.queries';
import { productLaunchDefaults, retrySchedule } from './domain/resilience/policies';
import { RunSupervisor } from './dispatch/run-supervisor';
import { DISPATCH_OPTIONS, type DispatchOptions, RETRY_POLICY } from './dispatch/dispatch-options';
import { DriverFactory } from './dispatch/driver-factory';
import { DriverPool } from './dispatch/driver-pool';
import { LeaseClaims } from './dispatch/lease-claims';
import { Placement } from './dispatch/run-placement';
import { RunWorkspaces } from './dispatch/run-workspaces';
import { RECOVERY_INTERVAL_MS, RecoveryService } from './dispatch/recovery.service';
import { RunDispatcher } from './dispatch/run-dispatch';
import { RUN_LEASES, type RunLeases } from './leases/run-leases.port';
import { EVENT_STORE, type EventStore } from '../events/event-store/event-store.port';
import { HEALTH_REGISTRY, type HealthRegistry } from '../shared/health';
import { CLOCK, PROCESS_ID } from '../shared/system';
import type { Clock } from '../shared/ports';
import { processModelOf } from './domain/model-pin';
import type { ToolRegistry } from './tools/tool-registry';
import { CHECKPOINT_STORE, type CheckpointStore } from '../checkpoint/checkpoint-store.port';
import { STORAGE, type Storage } from '../storage/storage';
import { RunsProjection } from './runs/runs.projection';
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
    RunWorkspaces,
    DriverFactory,
    // The dispatch wing's parts are framework-free (their unit specs build them): wired here.
    {
      provide: DriverPool,
      inject: [DriverFactory, RunWorkspaces, EVENT_STORE, CHECKPOINT_STORE, RUN_LEASES, TOOL_REGISTRY, MODEL_PROVIDER, CLOCK, DISPATCH_OPTIONS, PROCESS_ID, HEALTH_REGISTRY],
      useFactory: (factory: DriverFactory, workspaces: RunWorkspaces, store: EventStore, checkpoints: CheckpointStore, leases: RunLeases, tools: ToolRegistry, model: ModelProvider, clock: Clock, options: DispatchOptions, owner: string, health: HealthRegistry) =>
        new DriverPool({
          newDriver: (runId) => factory.create(runId),
          prepareWorkspace: (runId) => workspaces.prepare(runId),
          store,
          checkpoints,
          leases,
          tools,
          here: processModelOf(model),
          clock,
          options,
          owner,
          health,
          logger: new Logger(DriverPool.name),
        }),
    },
    {
      provide: Placement,
      inject: [DriverPool, RUN_LEASES, CLOCK, DISPATCH_OPTIONS, PROCESS_ID],
      useFactory: (pool: DriverPool, leases: RunLeases, clock: Clock, options: DispatchOptions, owner: string) => new Placement(pool, leases, clock, options, owner, new Logger(Placement.name)),
    },
    {
      provide: RunDispatcher,
      inject: [EVENT_STORE, HEALTH_REGISTRY, DriverPool],
      useFactory: (store: EventStore, health: HealthRegistry, pool: DriverPool) => new RunDispatcher(store, health, pool, new Logger(RunDispatcher.name)),
    },
    LeaseClaims,
    RunSupervisor,
    RecoveryService,
    LiveRunBus,
    // Next to the events, in the storage opened once by the events module (closed there too).
    { provide: CHECKPOINT_STORE, inject: [STORAGE], useFactory: (s: Storage) => s.checkpoints },
    { provide: RUN_LEASES, inject: [STORAGE], useFactory: (s: Storage) => s.leases },
    { provide: DISPATCH_OPTIONS, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => ({ leaseTtlMs: c.leaseTtlMs, checkpointEveryTurns: c.checkpointEveryTurns, maxActiveRuns: c.maxActiveRuns }) },
    { provide: RECOVERY_INTERVAL_MS, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => c.recoveryIntervalMs },
    { provide: MODEL_SELECTION, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => createModelProvider(c, new Logger('OpenAIProvider')) },
    { provide: MODEL_PROVIDER, inject: [MODEL_SELECTION], useFactory: (s: ModelSelection) => s.provider },
    { provide: DEFAULT_MODEL, inject: [MODEL_SELECTION], useFactory: (s: ModelSelection) => s.defaultModel },
    // The built-in tools, and the MCP servers of TRIAD_MCP_CONFIG: connected on first need (a
    // launch, a run driven here; `triad serve` at start), closed by the driver pool's shutdown. The
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
  exports: [SANDBOX, RunSupervisor, DriverPool, Placement, RecoveryService, RunDispatcher, CHECKPOINT_STORE, RUN_LEASES, RunsProjection, LiveRunBus, MODEL_PROVIDER, TOOL_REGISTRY, DEFAULT_MODEL],
})
export class TeamModule {}
