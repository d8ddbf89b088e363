import { InvalidRequestError } from '../../shared/errors';
import type { CommandPath } from '../../events/command-handling';
import { runContext, runStream } from '../runs/run-stream';
import { foldRun, type RunState } from '../domain/run-state';
import { runDecider } from '../domain/run-decider';
import type { RoleName } from '../models/model.port';
import { DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_TURNS, DEFAULT_TIMEOUT_MS, DEFAULT_TOKEN_BUDGET, ROLES } from '../domain/roles';
import { LOOP_STRATEGIES, toRunStreamId, type RunProjectLink, type TeamRunEvent, type ReviewPolicy, type ReviewTimeoutPolicy, type RoleConfig, type RunLaunchedData, type RunSandbox } from '../domain/run-events';
import { resolveRoleTools, ToolPolicyError } from '../tools/tool-registry';
import { loopSettingsOf, loopSettingsProblem, type LoopInput } from '../domain/loop-strategy';
export type { LoopInput } from '../domain/loop-strategy';
import {
  DEFAULT_RETRY_POLICY,
  DEFAULT_STAGNATION_POLICY,
  EXPONENTIAL_RETRY_DEFAULTS,
  DEFAULT_TOOL_APPROVAL,
  type ApprovalThreshold,
  type ApprovalTimeoutPolicy,
  type ContextWindowPolicy,
  type ExponentialRetryPolicy,
  isRetrySchedule,
  type LaunchPolicyDefaults,
  type RetryPolicy,
  retrySchedule,
  type StagnationPolicy,
  type ToolApprovalPolicy,
} from '../domain/resilience/policies';
import { hasVisibleText } from '../../shared/text';
import { parseNetworkAllowList } from '../tools/sandbox/sandbox-policy';
import { launchPin, servedBy, unservedModel, type ModelCatalogue, type ProcessModel } from '../domain/model-pin';

export interface LaunchRunInput {
  goal: string;
  acceptanceCriteria: string[];
  team?: Partial<
    Record<
      RoleName,
      { model?: string; provider?: string; maxTurns?: number; tools?: string[]; systemPrompt?: string; thinking?: { budgetTokens: number }; loop?: LoopInput; network?: string[] }
    >
  >;
  maxIterations?: number;
  timeoutMs?: number;
  budget?: { totalTokens?: number; perRole?: Partial<Record<RoleName, number>> };
  reviewPolicy?: { humanGate?: boolean; allowLauncherToReview?: boolean; timeout?: { policy: ReviewTimeoutPolicy; afterMs?: number } };
  idempotencyKey?: string;
  /**
   * Model-call retries: `delaysMs` (the wait before each retry) and `maxDelayMs` (the longest wait,
   * `retry-after` included); fields left out come from the defaults (10 s, 30 s, 90 s; 5 min). The
   * older form `maxAttempts` / `baseDelayMs` / `maxDelayMs` (exponential) is still accepted.
   */
  retry?: RetryInput;
  /** Tool calls above the threshold wait for a human (`high`: run_command, MCP tools without read-only/idempotent hints). */
  toolApproval?: { threshold?: ApprovalThreshold; allowLauncherToApprove?: boolean; timeout?: { policy: ApprovalTimeoutPolicy; afterMs?: number } };
  stagnation?: Partial<StagnationPolicy>;
  contextWindow?: ContextWindowPolicy;
}

/** A launch's retry fields: a schedule, or the older exponential form. */
export interface RetryInput {
  delaysMs?: number[];
  maxDelayMs?: number;
  maxAttempts?: number;
  baseDelayMs?: number;
}

export interface LaunchContext {
  runId: string;
  launchedBy: string;
  now: Date;
  provider: string;
  defaultModel: string;
  /** Policies recorded when the input leaves them out (the API and CLI pass PRODUCT_LAUNCH_DEFAULTS). */
  defaults?: LaunchPolicyDefaults;
  /**
   * Resolves a role's allow-list to tool names (the process's registry, MCP tools included);
   * the built-in tools alone when not given.
   */
  resolveTools?: (role: RoleName, allowList?: readonly string[]) => string[];
  /** The project the run is a task of (launched by the project reactor), recorded in RunLaunched. */
  project?: RunProjectLink;
  /** The serving process the run was placed on (RunSupervisor.place), recorded in RunLaunched's metadata. */
  placedOn?: string;
  /** The process's sandbox: recorded with each role's network allow-list (its own, else `defaultNetwork`). */
  sandbox?: { mode: 'bubblewrap' | 'off'; defaultNetwork: readonly string[] };
  /**
   * The launching process's providers and endpoints (its default and the others it is set up for),
   * the models each serves (`catalogueOf`; undefined: any name) and a role's model on each when
   * its config names none (`defaultModelOf`): a provider or a model it does not serve is refused,
   * and the run is pinned to them (RunLaunched `pin`).
   */
  models?: { here: ProcessModel; catalogueOf?: (provider: string) => ModelCatalogue | undefined; defaultModelOf?: (provider: string) => string };
}

/** A launch that cannot be accepted as given (beyond DTO shape checks). Maps to 400. */
export class InvalidLaunchError extends InvalidRequestError {
  override readonly name = 'InvalidLaunchError';
}

/** Applies the launch defaults and checks what a DTO cannot: tool policy per role. */
export function buildRunLaunched(input: LaunchRunInput, ctx: LaunchContext): RunLaunchedData {
  const team = {} as Record<RoleName, RoleConfig>;
  const network: RunSandbox['network'] = {};
  for (const role of ROLES) {
    const cfg = input.team?.[role] ?? {};
    if (cfg.network !== undefined) {
      const parsed = Array.isArray(cfg.network) && cfg.network.every((h) => typeof h === 'string') ? parseNetworkAllowList(cfg.network, `team.${role}.network`) : { problem: `team.${role}.network must be a list of host names` };
      if ('problem' in parsed) throw new InvalidLaunchError(parsed.problem);
      if (parsed.normalised.length > 0) network[role] = parsed.normalised;
    } else if (ctx.sandbox && ctx.sandbox.defaultNetwork.length > 0) network[role] = [...ctx.sandbox.defaultNetwork];
    let tools: string[];
    try {
      tools = (ctx.resolveTools ?? resolveRoleTools)(role, cfg.tools);
    } catch (err) {
      if (err instanceof ToolPolicyError) throw new InvalidLaunchError(err.message);
      throw err;
    }
    const maxTokens = input.budget?.perRole?.[role];
    // The DTO validates a nested list element by element: only an object naming a strategy is a loop setting.
    if (cfg.loop != null && (typeof cfg.loop !== 'object' || Array.isArray(cfg.loop) || !LOOP_STRATEGIES.includes(cfg.loop.strategy))) {
      throw new InvalidLaunchError(`team.${role}.loop must be an object whose strategy is one of ${LOOP_STRATEGIES.join(', ')}`);
    }
    const loop = cfg.loop ? loopSettingsOf(defined(cfg.loop) as LoopInput) : undefined;
    const maxTurns = cfg.maxTurns ?? DEFAULT_MAX_TURNS[role];
    const problem = loop && loopSettingsProblem(role, loop, maxTurns);
    if (problem) throw new InvalidLaunchError(problem);
    const provider = roleProvider(role, cfg.provider, ctx);
    team[role] = {
      model: cfg.model ?? (provider !== undefined && ctx.models?.defaultModelOf ? ctx.models.defaultModelOf(provider) : ctx.defaultModel),
      ...(provider !== undefined ? { provider } : {}),
      maxTurns,
      tools,
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      ...(cfg.systemPrompt ? { systemPrompt: cfg.systemPrompt } : {}),
      ...(cfg.thinking ? { thinking: { budgetTokens: cfg.thinking.budgetTokens } } : {}),
      // react (the default) records nothing: the launch reads as it did before strategies existed.
      ...(loop ? { loop } : {}),
    };
  }
  // A plain copy: the input may be a validated DTO instance, and events hold plain JSON only.
  const given = input.reviewPolicy?.timeout;
  const timeout: ReviewPolicy['timeout'] = given
    ? { policy: given.policy, ...(given.afterMs !== undefined ? { afterMs: given.afterMs } : {}) }
    : { policy: 'wait' };
  if (timeout.policy !== 'wait' && !(typeof timeout.afterMs === 'number' && timeout.afterMs > 0)) {
    throw new InvalidLaunchError(`review timeout policy '${timeout.policy}' needs afterMs > 0`);
  }
  const reviewPolicy: ReviewPolicy = {
    humanGate: input.reviewPolicy?.humanGate ?? true,
    allowLauncherToReview: input.reviewPolicy?.allowLauncherToReview ?? false,
    timeout,
  };
  const criteria = input.acceptanceCriteria.map((c) => c.trim());
  if (criteria.some((c) => !hasVisibleText(c))) throw new InvalidLaunchError('acceptance criteria must not be blank');
  const policies = resiliencePolicies(input, ctx.defaults ?? {});
  const models = ctx.models;
  const catalogueOf = models?.catalogueOf;
  const providerOf = (role: RoleName) => team[role].provider ?? models!.here.provider;
  const unserved = catalogueOf && unservedModel(team, policies.contextWindow?.summaryModel, (role) => catalogueOf(providerOf(role)));
  if (unserved) {
    const served = servedBy(models.here, providerOf(unserved.role))!;
    throw new InvalidLaunchError(
      `${unserved.field}: '${unserved.model}' is not served here; this server's provider ${served.provider} at ${served.endpoint} serves ${catalogueOf(served.provider)!.accepts}`,
    );
  }
  return {
    runId: ctx.runId,
    goal: input.goal.trim(),
    acceptanceCriteria: criteria,
    team,
    maxIterations: input.maxIterations ?? DEFAULT_MAX_ITERATIONS,
    timeoutMs: input.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    budget: { totalTokens: input.budget?.totalTokens ?? DEFAULT_TOKEN_BUDGET },
    reviewPolicy,
    launchedBy: ctx.launchedBy,
    launchedAt: ctx.now.toISOString(),
    provider: ctx.provider,
    ...(input.idempotencyKey ? { idempotencyKey: input.idempotencyKey } : {}),
    ...policies,
    ...(ctx.project ? { project: { ...ctx.project } } : {}),
    ...(ctx.sandbox ? { sandbox: { mode: ctx.sandbox.mode, network } } : {}),
    ...(models ? { pin: launchPin(team, models.here) } : {}),
  };
}

/**
 * The provider a role's config names, checked against the launching process's (undefined: none
 * named, the process's default). A name the process is not set up for is refused, saying which it has.
 */
function roleProvider(role: RoleName, given: unknown, ctx: LaunchContext): string | undefined {
  if (given === undefined || given === null) return undefined;
  if (typeof given !== 'string' || !/^[a-z][a-z0-9-]{0,31}$/.test(given)) throw new InvalidLaunchError(`team.${role}.provider must be a provider name such as anthropic, openai or offline`);
  const here = ctx.models?.here;
  // A process that does not say what it serves (a test double) records the name as given.
  if (!here) return given;
  if (!servedBy(here, given)) {
    const served = [here, ...(here.also ?? [])].map((m) => m.provider).join(', ');
    throw new InvalidLaunchError(`team.${role}.provider: '${given}' is not set up here; this server's providers are ${served}`);
  }
  return given;
}

/** The resilience policies to record: the input's (completed with the defaults), else the context's defaults. */
function resiliencePolicies(input: LaunchRunInput, defaults: LaunchPolicyDefaults): Partial<RunLaunchedData> {
  const out: Partial<RunLaunchedData> = {};
  const retry = input.retry ? retryPolicyOf(defined(input.retry), defaults.retry ?? DEFAULT_RETRY_POLICY) : defaults.retry;
  if (retry) out.retry = 'delaysMs' in retry ? { ...retry, delaysMs: [...retry.delaysMs] } : { ...retry };
  const approval: ToolApprovalPolicy | undefined = input.toolApproval
    ? {
        threshold: input.toolApproval.threshold ?? DEFAULT_TOOL_APPROVAL.threshold,
        allowLauncherToApprove: input.toolApproval.allowLauncherToApprove ?? DEFAULT_TOOL_APPROVAL.allowLauncherToApprove,
        timeout: input.toolApproval.timeout ? (defined(input.toolApproval.timeout) as ToolApprovalPolicy['timeout']) : { ...DEFAULT_TOOL_APPROVAL.timeout },
      }
    : defaults.toolApproval;
  if (approval) {
    const t = approval.timeout;
    if (t.policy !== 'wait' && !(typeof t.afterMs === 'number' && t.afterMs > 0)) {
      throw new InvalidLaunchError(`tool approval timeout policy '${t.policy}' needs afterMs > 0`);
    }
    out.toolApproval = { ...approval, timeout: { ...t } };
  }
  const stagnation: StagnationPolicy | undefined = input.stagnation ? { ...DEFAULT_STAGNATION_POLICY, ...defined(input.stagnation) } : defaults.stagnation;
  if (stagnation) {
    if (stagnation.minCalls > stagnation.windowSize) throw new InvalidLaunchError('stagnation.minCalls must not exceed stagnation.windowSize');
    out.stagnation = { ...stagnation };
  }
  const contextWindow = input.contextWindow ? defined(input.contextWindow) : defaults.contextWindow;
  if (contextWindow && Object.keys(contextWindow).length > 0) out.contextWindow = { ...contextWindow };
  return out;
}

/** The retry policy a launch asks for, completed from the defaults; either form, never both. */
function retryPolicyOf(given: RetryInput, defaults: RetryPolicy): RetryPolicy {
  if (given.maxAttempts !== undefined || given.baseDelayMs !== undefined) {
    if (given.delaysMs !== undefined) throw new InvalidLaunchError('retry.delaysMs cannot be combined with retry.maxAttempts or retry.baseDelayMs');
    const retry: ExponentialRetryPolicy = { ...EXPONENTIAL_RETRY_DEFAULTS, ...(defined(given) as Partial<ExponentialRetryPolicy>) };
    if (retry.baseDelayMs > retry.maxDelayMs) throw new InvalidLaunchError('retry.baseDelayMs must not exceed retry.maxDelayMs');
    return retry;
  }
  const delays = given.delaysMs ?? (isRetrySchedule(defaults) ? defaults.delaysMs : DEFAULT_RETRY_POLICY.delaysMs);
  const retry = retrySchedule(delays, given.maxDelayMs);
  if (delays.some((d) => d > retry.maxDelayMs)) throw new InvalidLaunchError('retry.delaysMs must not exceed retry.maxDelayMs');
  return retry;
}

/** A plain copy without the keys whose value is undefined (DTO instances have them). */
function defined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export interface LaunchResult {
  runId: string;
  acceptedAt: string;
  /** false when an idempotent retry found the run already launched. */
  created: boolean;
}

/**
 * Appends RunLaunched to a new run stream, as `runDecider` decides it: an idempotent retry (the
 * same launcher, key and request: the same `ctx.runId`, see `launchRunId`) finds the run launched
 * already and returns it; the same key with another request is a conflict.
 */
export async function launchRun(path: CommandPath, input: LaunchRunInput, ctx: LaunchContext, built?: RunLaunchedData): Promise<LaunchResult> {
  const { runId } = ctx;
  // `built`: what the caller built from the same input and context to refuse bad input early.
  const launched = built ?? buildRunLaunched(input, ctx);
  // Only RunLaunched matters to this decision: an idempotent retry reads that one event, not the run.
  const stream = { ...runStream(path.store, runId), load: async () => foldRun(await path.store.readStream(toRunStreamId(runId), { maxCount: 1 })) };
  // Type arguments given: inferring them from the spread stream model is costly for the checker.
  const { state, events } = await path.handle<RunState, TeamRunEvent>(
    stream,
    (s) => runDecider.decide({ type: 'LaunchRun', launched }, s),
    { ...runContext(runId, ctx.launchedBy), ...(ctx.placedOn !== undefined ? { placedOn: ctx.placedOn } : {}) },
    { assumeNew: true, maxAttempts: 2 },
  );
  return { runId, acceptedAt: state.launched!.launchedAt, created: events.length > 0 };
}
