/**
 * What the driver's modules share: the driver's dependencies, the `StepContext` the loop gives the
 * modules of its effectful steps, and the run's signal those steps run under.
 */
import type { EventStore, RecordedEvent } from '../../events/event-store/event-store.port';
import type { CommandPath } from '../../events/command-handling';
import type { CheckpointStore } from '../../checkpoint/checkpoint-store.port';
import type { ModelProvider, RoleName } from '../models/model.port';
import type { RetryPolicy } from '../domain/resilience/policies';
import type { DispatchMode } from '../domain/resilience/tool-dispatch';
import type { ToolRegistry } from '../tools/tool-registry';
import type { RunLaunchedData, TeamRunEvent } from '../domain/run-events';
import type { ToolContext } from '../tools/tool.port';
import type { RunState } from '../domain/run-state';
import type { FairShare } from '../dispatch/fair-share';
import type { TokenCounter } from '../models/token-count';
import type { Clock, Ids } from '../../shared/ports';
import type { SubAgentPool } from './sub-agent-pool';
import type { SnapshotLimits } from '../workspace/workspace-effects';

/** What the driver publishes as it goes: recorded events and live text that is not stored. */
export interface RunObserver {
  onEvents?(runId: string, events: RecordedEvent[]): void;
  onTextDelta?(runId: string, role: RoleName, turn: number, text: string): void;
}

export interface RunDriverDeps {
  /**
   * This driver's identity for fencing. When set, the driver records DriverClaimed before it acts,
   * and stops as soon as it sees another owner's claim.
   */
  owner?: string;
  /** Checkpoints: resume from the latest valid one, and take new ones at phase boundaries and every N turns. */
  checkpoints?: CheckpointStore;
  checkpointEveryTurns?: number;
  logger?: { warn(message: string): void };
  store: EventStore;
  /** The one path events are written by (built on `store` when not given). */
  path?: CommandPath;
  model: ModelProvider;
  tools: ToolRegistry;
  clock: Clock;
  ids: Ids;
  /** Directory holding one workspace per run. */
  workspaceRoot: string;
  /** Retries when the run's RunLaunched records no policy of its own. */
  retry?: RetryPolicy;
  /** `three-pass` (default): read-only tool calls of a turn run concurrently; `serial`: one after another. */
  toolDispatch?: DispatchMode;
  observer?: RunObserver;
  /** Max output tokens per model call. */
  maxOutputTokens?: number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Commit repeatable tools' results with the next model call (default) or at once (false). */
  deferRepeatableToolResults?: boolean;
  /** Time-slicing shared with the other drivers of this process (the supervisor's: `processFairShare`). */
  fairShare?: FairShare;
  /**
   * Recording the workspace in the log (tests narrow the caps): `enabled: false` records no file
   * effects and never rebuilds the workspace.
   */
  workspaceLog?: { enabled?: boolean; maxBlobBytes?: number; limits?: SnapshotLimits };
  /** Token counts for the context budget, shared across drivers (default: one per driver when the model counts). */
  tokenCounter?: TokenCounter;
  /** The process's sub-agent slots (default: one pool per driver). */
  subAgentPool?: SubAgentPool;
}

/**
 * What the driver's loop gives the modules that perform its effectful steps (model turn, tool
 * dispatch, compaction): the run as folded so far and the two ways to record events.
 */
export interface StepContext {
  readonly runId: string;
  readonly deps: RunDriverDeps;
  /** The run's workspace directory. */
  readonly workspace: string;
  /** Its real path, resolved once for the driver's tool calls (undefined while it cannot be: each call resolves it then). */
  realWorkspace(): Promise<string | undefined>;
  /**
   * The run as folded so far (ahead of the store by the deferred events). Appends and catch-ups
   * replace it: read it again after every await.
   */
  readonly state: RunState;
  /** Aborted when the driver stops: cancel, shutdown, another driver's claim. */
  readonly runSignal: AbortSignal;
  /** Appends at the run's revision (deferred events first), folds and publishes what was written. */
  append(events: TeamRunEvent[]): Promise<void>;
  /** Folds events now; they are committed with the next append. */
  defer(events: TeamRunEvent[]): void;
  /** Makes `controller` the one the driver's `stop()` aborts: the work in flight. */
  track(controller: AbortController): void;
}

export function isoNow(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}

/** When the run's timeout passes (ms). */
export function deadlineOf(state: RunState): number {
  const launched = state.launched!;
  return Date.parse(launched.launchedAt) + launched.timeoutMs;
}

/**
 * Runs `work` with a signal aborted when the driver stops (cancel, shutdown, fencing) or the run's
 * timeout passes; `stop()` aborts it too. Resolves once `work` has settled.
 */
export async function underRunSignal<T>(ctx: StepContext, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const run = ctx.runSignal;
  const controller = new AbortController();
  ctx.track(controller);
  const onStop = () => controller.abort(run.reason);
  if (run.aborted) controller.abort(run.reason);
  else run.addEventListener('abort', onStop, { once: true });
  // One millisecond late rather than early, so the next decision sees the deadline passed.
  const timer = setTimeout(() => controller.abort(new Error('timeout')), Math.max(0, deadlineOf(ctx.state) - ctx.deps.clock.now()) + 1);
  try {
    return await work(controller.signal);
  } finally {
    clearTimeout(timer);
    run.removeEventListener('abort', onStop);
  }
}

/** What a run's tool calls carry of its sandbox, as RunLaunched recorded it: the role's hosts and the mode. */
export function runSandboxContext(launched: RunLaunchedData | undefined, role: RoleName): Pick<ToolContext, 'network' | 'sandboxMode'> {
  const sandbox = launched?.sandbox;
  if (!sandbox) return {};
  const network = sandbox.network[role];
  return { sandboxMode: sandbox.mode, ...(network ? { network } : {}) };
}
