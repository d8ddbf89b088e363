import type { AssistantBlock, ContentBlock, RoleName, StopReason, ThinkingSettings, Usage } from '../models/model.port';
import type { ApprovalThreshold, ContextWindowPolicy, RetryPolicy, StagnationPolicy, ToolApprovalPolicy, ToolRisk } from './resilience/policies';
import type { Attestation } from '../../attestation/attestation';
import type { PersonalSignature } from '../../attestation/personal-signature';
import type { RunPin } from './model-pin';

/**
 * The events of one team run, all in the stream `run-<runId>`. Together they rebuild every role's
 * conversation exactly: a model call records only the user content that is not recorded elsewhere
 * (tool results are referenced by id from their ToolCallCompleted events), so bytes per turn stay
 * flat however long the conversation grows. Catalogue: docs/EVENTS.md.
 *
 * One file over 400 lines on purpose: it is the catalogue of a run's events, declarations only,
 * looked up in one place (as docs/EVENTS.md points here); split by area, each event's data would
 * sit apart from the union and the type list that name it.
 */

/** One path's change, as recorded on ToolCallCompleted.files. Paths are workspace-relative with '/' separators. */
export type FileEffect =
  | { path: string; sha256: string; size: number; executable?: true }
  | { path: string; deleted: true }
  | { path: string; unrecorded: string; sha256?: string; size?: number };

export type Phase = 'planning' | 'executing' | 'reviewing';
export type Verdict = 'APPROVE' | 'REQUEST_CHANGES' | 'BLOCK';

export type TerminationReason =
  | 'COMPLETED'
  | 'REJECTED'
  | 'BLOCKED'
  | 'MAX_ITERATIONS'
  | 'MAX_TURNS'
  | 'BUDGET_EXHAUSTED'
  | 'TIMEOUT'
  | 'CANCELLED'
  | 'STAGNATION'
  | 'SHUTDOWN'
  | 'ERROR';

export type RunStatus =
  | 'queued'
  | 'planning'
  | 'executing'
  | 'reviewing'
  | 'awaiting_review'
  | 'awaiting_approval'
  | 'completed'
  | 'failed'
  | 'blocked'
  | 'cancelled'
  | 'suspended';

/** Every run status, in the order a run meets them (the values `status` filters accept). */
export const RUN_STATUSES: readonly RunStatus[] = ['queued', 'planning', 'executing', 'reviewing', 'awaiting_review', 'awaiting_approval', 'completed', 'failed', 'blocked', 'cancelled', 'suspended'];

export const TERMINAL_STATUSES: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'blocked', 'cancelled']);

export interface RoleConfig {
  model: string;
  /**
   * The provider the launch named for this role (`anthropic`, `openai`, `offline`); absent: the
   * launching process's default. The run's pin records where each role's calls go either way.
   */
  provider?: string;
  maxTurns: number;
  /** Tool names the role may use (its submit tool is always available). */
  tools: string[];
  /** Token budget of this role, if any (input + output tokens). */
  maxTokens?: number;
  /** Replaces the built-in role prompt. */
  systemPrompt?: string;
  /** Extended thinking on each of the role's calls (Anthropic): up to `budgetTokens` of reasoning. */
  thinking?: ThinkingSettings;
  /** How the role's phases run (domain/loop-strategy.ts); absent: `react`, the plain agent loop. */
  loop?: LoopSettings;
}

export type ReviewTimeoutPolicy = 'wait' | 'auto_approve' | 'auto_deny' | 'escalate';

export interface ReviewPolicy {
  /** false waives the human gate: an APPROVE verdict completes the run, and the waiver is recorded. */
  humanGate: boolean;
  /** By default the person who launched a run may not decide its review. */
  allowLauncherToReview: boolean;
  timeout: { policy: ReviewTimeoutPolicy; afterMs?: number };
}

export interface RunLaunchedData {
  runId: string;
  goal: string;
  acceptanceCriteria: string[];
  team: Record<RoleName, RoleConfig>;
  maxIterations: number;
  timeoutMs: number;
  budget: { totalTokens: number };
  reviewPolicy: ReviewPolicy;
  /** `user:<name>` of the launcher. */
  launchedBy: string;
  launchedAt: string;
  provider: string;
  idempotencyKey?: string;
  /** Set when the run was forked from another: its history up to `revision` is the parent's. */
  forkedFrom?: { runId: string; revision: number; turn: number };
  /** Model-call retries of this run; absent: the driver's policy. */
  retry?: RetryPolicy;
  /** Which tool calls wait for a human; absent: none. */
  toolApproval?: ToolApprovalPolicy;
  /** When repeated tool calls or findings end the run STAGNATION; absent: never. */
  stagnation?: StagnationPolicy;
  /** Context window limits; absent: the defaults per model. */
  contextWindow?: ContextWindowPolicy;
  /** Set when the run is a task of a project (src/projects/): the project, the task and its attempt. */
  project?: RunProjectLink;
  /**
   * The OS sandbox its tools' processes run in, as the launching process had it: `bubblewrap`, or
   * `off` (TRIAD_SANDBOX=off: commands ran as the server). `network`: the hosts each role's
   * commands may reach (a role absent: none). Absent on runs launched before the sandbox existed.
   */
  sandbox?: RunSandbox;
  /**
   * Per role, the provider, model and endpoint its calls go to (domain/model-pin.ts): only a process
   * with that provider and endpoint drives the run. Absent on runs launched before pins existed:
   * they are pinned to `provider` at any endpoint (`pinOf`).
   */
  pin?: RunPin;
}

export interface RunSandbox {
  mode: 'bubblewrap' | 'off';
  network: Partial<Record<RoleName, string[]>>;
}

/** A task run's link to its project. */
export interface RunProjectLink {
  projectId: string;
  taskKey: string;
  attempt: number;
}

export interface PhaseStartedData {
  phase: Phase;
  role: RoleName;
  iteration: number;
  /** The agent's identity for this phase: `agent:<role>:<runId>`. */
  agent: string;
  system: string;
  tools: string[];
  maxTurns: number;
  at: string;
}

export interface IterationStartedData {
  iteration: number;
  reason: 'changes_requested' | 'human_rejected';
  findings: string[];
  feedback?: string;
  at: string;
}

export interface ModelCallStartedData {
  role: RoleName;
  /** 1-based turn within the current phase. */
  turn: number;
  callId: string;
  model: string;
  /** Tool results (by tool_use id, from ToolCallCompleted) that open the new user message. */
  toolResultIds: string[];
  /** Other user content of the new message: the task message, feedback, reminders. */
  content: ContentBlock[];
  at: string;
}

/**
 * Where a model call went, on the events that record one (absent on events recorded before):
 * the provider, its endpoint (see RolePin), the model the request named (`model` is the one the
 * response named) and the provider's id of the request (Anthropic's `request-id`; absent for the
 * offline model and providers that give none).
 */
export interface ModelCallOrigin {
  provider?: string;
  endpoint?: string;
  requestedModel?: string;
  requestId?: string;
}

export interface ModelCallCompletedData extends ModelCallOrigin {
  role: RoleName;
  turn: number;
  callId: string;
  /** The model the response named. */
  model: string;
  content: AssistantBlock[];
  stopReason: StopReason;
  usage: Usage;
  costUsd: number;
  durationMs: number;
}

export interface ModelCallFailedData {
  role: RoleName;
  turn: number;
  callId: string;
  attempt: number;
  kind: string;
  message: string;
  /** HTTP status of the failure, when there was one (part of the error signature). */
  status?: number;
  /** Set when the call will be retried after this delay. */
  retryInMs?: number;
  /** The context was too long: the conversation is compacted (ContextCompacted), then the call retried. */
  compactBeforeRetry?: boolean;
}

export interface ToolCallRequestedData {
  role: RoleName;
  turn: number;
  toolUseId: string;
  name: string;
  input: Record<string, unknown>;
  at: string;
}

export interface ToolCallCompletedData {
  role: RoleName;
  turn: number;
  toolUseId: string;
  name: string;
  output: string;
  isError: boolean;
  durationMs: number;
  /** Set when the outcome could not be observed (a crash during a non-idempotent tool). */
  outcomeUnknown?: boolean;
  /**
   * What the call changed in the workspace, for tools that may change it (empty: nothing); absent
   * for read-only tools, calls that did not run, and runs recorded before effects were. See
   * src/team/workspace/workspace-effects.ts.
   */
  files?: FileEffect[];
}

export interface PlanSubmittedData {
  toolUseId: string;
  plan: string;
  steps: string[];
  at: string;
}

export interface WorkSubmittedData {
  toolUseId: string;
  iteration: number;
  summary: string;
  files: string[];
  at: string;
}

export interface VerdictSubmittedData {
  toolUseId: string;
  iteration: number;
  verdict: Verdict;
  findings: string[];
  summary: string;
  at: string;
}

export interface BudgetExceededData {
  scope: 'total' | RoleName;
  usedTokens: number;
  limitTokens: number;
  at: string;
}

export interface ReviewOpenedData {
  reviewId: string;
  iteration: number;
  executor: string;
  artifactHash: string;
  /** Hash of the executor's role prompt and model config: the "charter" the work was done under. */
  charterVersion: string;
  /** When the timeout policy acts (absent for `wait`): a durable timer, fired by whichever process is alive. */
  timeout?: { policy: Exclude<ReviewTimeoutPolicy, 'wait'>; dueAt: string };
  at: string;
}

export type DecisionOutcome = 'approved' | 'rejected' | 'escalated' | 'waived';

/** A decision at the review gate: a human's, or the system's when a timeout policy acts. */
export interface ReviewDecidedData {
  decisionId: string;
  reviewId: string;
  iteration: number;
  outcome: DecisionOutcome;
  reason: string;
  /** For a rejection: whether the executor gets another iteration. */
  rework?: boolean;
  executor: string;
  decider: string;
  deciderKind: 'human' | 'system';
  /** Set when a timeout policy decided. */
  policy?: ReviewTimeoutPolicy;
  acceptanceCriteria: string[];
  artifactHash: string;
  charterVersion: string;
  at: string;
  /** How the server knew the human decider (absent: a system decision, or one recorded before this was). */
  authenticatedBy?: DecisionCredential;
  /** The decider's own signature on the decision's statement (attestation/personal-signature.ts). */
  signature?: PersonalSignature;
  /** The writing server's signature on this data (attestation/attestation.ts). */
  attestation?: Attestation;
}

/** How a human decider proved who they are: their API key, a console session, or their own signature. */
export type DecisionCredential = 'api_key' | 'console_session' | 'signature';

/**
 * The agent repeats tool calls without progress: a corrective user message is sent with its next
 * call (in that ModelCallStarted's content) and the stagnation window starts over. If it persists,
 * the run ends STAGNATION.
 */
export interface StagnationWarnedData {
  role: RoleName;
  /** The last completed turn. */
  turn: number;
  signal: 'repetition' | 'cycle';
  /** For `repetition`: share of repeated calls in the window. */
  ratio?: number;
  /** For `cycle`: turns per cycle. */
  cycleLength?: number;
  /** Tool-call fingerprints (`name:sha256[:16]`) that repeat. */
  fingerprints: string[];
  /** The corrective message, exactly as the agent gets it. */
  message: string;
  at: string;
}

/**
 * Older messages of a role's conversation were archived into a summary: the fold replaces
 * messages[fromIndex, toIndex) of the conversation with one user message holding `summary`, so
 * replay rebuilds the compacted conversation exactly.
 */
export interface ContextCompactedData extends ModelCallOrigin {
  role: RoleName;
  /** The turn the compaction was made for (the next call, or the call in flight). */
  turn: number;
  fromIndex: number;
  toIndex: number;
  summary: string;
  /** `model`: a model wrote the summary; `truncate`: summarising failed, each message was cut to 150 characters. */
  method: 'model' | 'truncate';
  reason: 'over_budget' | 'context_too_long';
  /** The summarising model and its usage (counted in the role's usage and budget). */
  model?: string;
  usage?: Usage;
  costUsd?: number;
  /** Why summarising failed (method `truncate`). */
  error?: string;
  tokensBefore: number;
  tokensAfter: number;
  budgetTokens: number;
  /** The provider's token count of the request that did not fit (absent: the estimate decided). */
  countedTokens?: number;
  at: string;
}

/** A tool call above the run's risk threshold waits for a human (status `awaiting_approval`). */
export interface ToolApprovalRequestedData {
  /** `apr_<runId>.<toolUseId>` */
  approvalId: string;
  role: RoleName;
  turn: number;
  toolUseId: string;
  name: string;
  input: Record<string, unknown>;
  risk: ToolRisk;
  threshold: ApprovalThreshold;
  /** When the timeout policy acts (absent for `wait`): a durable timer, fired by whichever process is alive. */
  timeout?: { policy: 'auto_approve' | 'auto_deny'; dueAt: string };
  at: string;
}

/** A human's decision on a tool call, or the system's when the timeout policy acts. */
export interface ToolApprovalDecidedData {
  approvalId: string;
  role: RoleName;
  turn: number;
  toolUseId: string;
  name: string;
  outcome: 'approved' | 'rejected';
  reason: string;
  decider: string;
  deciderKind: 'human' | 'system';
  /** Set when a timeout policy decided. */
  policy?: 'auto_approve' | 'auto_deny';
  /** `sha256:<hex>` of the canonical JSON of the call's input, and its risk (for the decision log; absent in older events). */
  inputHash?: string;
  risk?: ToolRisk;
  at: string;
  authenticatedBy?: DecisionCredential;
  signature?: PersonalSignature;
  attestation?: Attestation;
}

export interface RunEndedData {
  status: RunStatus;
  reason: TerminationReason;
  message?: string;
  at: string;
}

/**
 * A process that was to drive the run could not rebuild its workspace from the events (a file over
 * the recorded-size cap, a blob missing from the store, a change recorded before file effects
 * were): the run ends (RunEnded, ERROR) rather than carry on in a workspace that is not its own.
 */
export interface WorkspaceUnrecoverableData {
  /** What cannot be rebuilt: a path ('.' for the workspace as a whole) and why. */
  paths: { path: string; reason: string }[];
  /** The process that tried. */
  owner: string;
  at: string;
}

/** SIGTERM: the process stopped driving the run; it resumes on the next start (status `suspended`). */
export interface RunSuspendedData {
  reason: 'SHUTDOWN';
  owner: string;
  at: string;
}

export interface RunResumedData {
  by: string;
  at: string;
}

/**
 * An operator changed the run's pin (`triad resume --model/--endpoint`, POST /v1/runs/:id/resume
 * with overrides): from now on its calls go to `to`, and only a process matching it drives the run.
 */
export interface RunRepinnedData {
  by: string;
  from: RunPin;
  to: RunPin;
  at: string;
}

/**
 * A process took over driving the run. Appended at the run's expected revision, it fences the
 * previous driver: that driver's next append fails, it folds this event and stops.
 */
export interface DriverClaimedData {
  owner: string;
  at: string;
}

export interface ForkOverrides {
  team?: Partial<Record<RoleName, { model?: string; systemPrompt?: string }>>;
}

/**
 * The first event of a forked run. Its history up to `parent.revision` is the parent's events,
 * read from the parent's stream (linked, not copied, not re-executed); this run's own events follow.
 */
export interface RunForkedData {
  runId: string;
  parent: { runId: string; revision: number; turn: number };
  overrides: ForkOverrides;
  forkedBy: string;
  at: string;
  /**
   * For read models that fold one stream at a time: the launch config in force after the
   * overrides, and the team machine's persisted snapshot at the fork point. The run's own fold
   * ignores these and reads the parent's events. `stepLoop` / `chosenStrategy`: where the phase's
   * plan stands at the fork point, when it runs one (absent in forks recorded before loop strategies).
   */
  view: { launched: RunLaunchedData; team: unknown; stepLoop?: unknown; chosenStrategy?: ChosenStrategy };
}

// A role's loop strategy (its rules and the fold of its plan: domain/loop-strategy.ts)

export const LOOP_STRATEGIES = ['react', 'plan_execute', 'hybrid', 'auto'] as const;
export type LoopStrategy = (typeof LOOP_STRATEGIES)[number];
/** What a phase runs: `auto` is resolved to one of these when the phase starts. */
export type ChosenStrategy = Exclude<LoopStrategy, 'auto'>;
export type StepStrategy = Exclude<ChosenStrategy, 'react'>;
export type Complexity = 'simple' | 'medium' | 'complex';

/** A role's loop settings as recorded in RunLaunched (numbers completed from the defaults at launch). */
export interface LoopSettings {
  strategy: LoopStrategy;
  /** The model of plan calls; absent: the role's model. */
  plannerModel?: string;
  /** The model of step and closing turns; absent: the role's model. */
  executorModel?: string;
  maxReplans: number;
  maxPlanSteps: number;
  /** hybrid: turns per step before the step fails. */
  maxTurnsPerStep: number;
}

/** `auto` chose the strategy of a role's phase, when the phase started (domain/loop-strategy.ts). */
export interface LoopStrategyChosenData {
  role: RoleName;
  phase: Phase;
  iteration: number;
  strategy: ChosenStrategy;
  complexity: Complexity;
  /** Share of the run's token budget used when the choice was made, in percent (rounded down). */
  budgetUsedPercent: number;
  /** `hybrid` was the choice by complexity, `plan_execute` taken because the budget was ≥ 80% used. */
  downgraded: boolean;
  at: string;
}

/** The role's plan, from its `submit_steps` call (the first plan of a phase). */
export interface LoopPlanRecordedData {
  role: RoleName;
  toolUseId: string;
  steps: string[];
  at: string;
}

/** A new plan for the remaining work after a failed step (`replan`: 1 for the first replan). */
export interface LoopReplannedData {
  role: RoleName;
  toolUseId: string;
  replan: number;
  steps: string[];
  at: string;
}

/** A step of the current plan begins (`index`: 1-based within the plan of `of` steps). */
export interface LoopStepStartedData {
  role: RoleName;
  index: number;
  of: number;
  text: string;
  at: string;
}

/** The role called `complete_step`: its summary, and the progress of the phase so far. */
export interface LoopStepCompletedData {
  role: RoleName;
  index: number;
  toolUseId: string;
  summary: string;
  /** Every step completed in this phase so far, one line each (what the next step is told). */
  progress: string;
  at: string;
}

/** The role called `fail_step` (`cause: fail_step`), or a hybrid step used up its turns (`turn_limit`). */
export interface LoopStepFailedData {
  role: RoleName;
  index: number;
  cause: 'fail_step' | 'turn_limit';
  reason: string;
  toolUseId?: string;
  at: string;
}

/** The run's own events: what its state machines see (sub-agents' events never move them). */
export type RunCoreEvent =
  | { type: 'RunLaunched'; data: RunLaunchedData }
  | { type: 'PhaseStarted'; data: PhaseStartedData }
  | { type: 'IterationStarted'; data: IterationStartedData }
  | { type: 'ModelCallStarted'; data: ModelCallStartedData }
  | { type: 'ModelCallCompleted'; data: ModelCallCompletedData }
  | { type: 'ModelCallFailed'; data: ModelCallFailedData }
  | { type: 'ToolCallRequested'; data: ToolCallRequestedData }
  | { type: 'ToolCallCompleted'; data: ToolCallCompletedData }
  | { type: 'PlanSubmitted'; data: PlanSubmittedData }
  | { type: 'WorkSubmitted'; data: WorkSubmittedData }
  | { type: 'VerdictSubmitted'; data: VerdictSubmittedData }
  | { type: 'BudgetExceeded'; data: BudgetExceededData }
  | { type: 'ReviewOpened'; data: ReviewOpenedData }
  | { type: 'ReviewDecided'; data: ReviewDecidedData }
  | { type: 'RunEnded'; data: RunEndedData }
  | { type: 'RunSuspended'; data: RunSuspendedData }
  | { type: 'RunResumed'; data: RunResumedData }
  | { type: 'RunRepinned'; data: RunRepinnedData }
  | { type: 'DriverClaimed'; data: DriverClaimedData }
  | { type: 'RunForked'; data: RunForkedData }
  | { type: 'StagnationWarned'; data: StagnationWarnedData }
  | { type: 'ContextCompacted'; data: ContextCompactedData }
  | { type: 'ToolApprovalRequested'; data: ToolApprovalRequestedData }
  | { type: 'ToolApprovalDecided'; data: ToolApprovalDecidedData }
  | { type: 'WorkspaceUnrecoverable'; data: WorkspaceUnrecoverableData }
  | { type: 'LoopStrategyChosen'; data: LoopStrategyChosenData }
  | { type: 'LoopPlanRecorded'; data: LoopPlanRecordedData }
  | { type: 'LoopReplanned'; data: LoopReplannedData }
  | { type: 'LoopStepStarted'; data: LoopStepStartedData }
  | { type: 'LoopStepCompleted'; data: LoopStepCompletedData }
  | { type: 'LoopStepFailed'; data: LoopStepFailedData };

// Sub-agents' events (their fold, spawn decision and next step: domain/sub-agents.ts)

export const SUB_AGENT_ROLES = ['researcher', 'coder', 'reviewer', 'tester', 'analyst', 'creative', 'general'] as const;
export type SubAgentRole = (typeof SUB_AGENT_ROLES)[number];

export interface SubAgentLimits {
  maxTurns: number;
  maxTokens: number;
  timeoutMs: number;
}

export interface SubAgentSpawnedData {
  path: string;
  /** Path of the spawning sub-agent; absent when the phase agent spawned it. */
  parentPath?: string;
  /** `agent:<role>:<runId>/<path>` */
  agent: string;
  /** Identity of the agent that spawned it. */
  parent: string;
  /** 1 for the phase agent's sub-agents. */
  depth: number;
  /** The spawn call (the phase agent's tool_use, or the parent sub-agent's). */
  toolUseId: string;
  role: SubAgentRole;
  task: string;
  /** Allowed tools: the requested ones that the parent has (the parent's, when none were requested). */
  tools: string[];
  limits: SubAgentLimits;
  priority: number;
  at: string;
}

export interface SubAgentAwaitingApprovalData {
  path: string;
  approvalId: string;
  at: string;
}

export interface SubAgentQueuedData {
  path: string;
  priority: number;
  at: string;
}

export interface SubAgentStartedData {
  path: string;
  at: string;
}

/** One model turn of a sub-agent: its request's new content (tool results are referenced) and the response. */
export interface SubAgentModelCalledData extends ModelCallOrigin {
  path: string;
  turn: number;
  callId: string;
  /** The model the response named. */
  model: string;
  /** Content after the tool results that open the new user message (the task, on the first turn). */
  content: ContentBlock[];
  response: AssistantBlock[];
  stopReason: StopReason;
  usage: Usage;
  costUsd: number;
  durationMs: number;
  at: string;
}

/** A tool that is not safe to repeat is recorded as started before it runs. */
export interface SubAgentToolStartedData {
  path: string;
  turn: number;
  toolUseId: string;
  name: string;
  at: string;
}

/** A sub-agent's tool call, recorded as a role's is (ToolCallCompleted, file effects included), under its path instead of a role. */
export type SubAgentToolCompletedData = Omit<ToolCallCompletedData, 'role'> & { path: string };

export interface SubAgentCompletedData {
  path: string;
  result: string;
  at: string;
}

export type SubAgentFailureReason = 'MAX_TURNS' | 'BUDGET_EXHAUSTED' | 'ERROR';

export interface SubAgentFailedData {
  path: string;
  reason: SubAgentFailureReason;
  message: string;
  at: string;
}

export interface SubAgentCancelledData {
  path: string;
  reason: string;
  at: string;
}

export interface SubAgentTimedOutData {
  path: string;
  message: string;
  at: string;
}

export type SubAgentEvent =
  | { type: 'SubAgentSpawned'; data: SubAgentSpawnedData }
  | { type: 'SubAgentAwaitingApproval'; data: SubAgentAwaitingApprovalData }
  | { type: 'SubAgentQueued'; data: SubAgentQueuedData }
  | { type: 'SubAgentStarted'; data: SubAgentStartedData }
  | { type: 'SubAgentModelCalled'; data: SubAgentModelCalledData }
  | { type: 'SubAgentToolStarted'; data: SubAgentToolStartedData }
  | { type: 'SubAgentToolCompleted'; data: SubAgentToolCompletedData }
  | { type: 'SubAgentCompleted'; data: SubAgentCompletedData }
  | { type: 'SubAgentFailed'; data: SubAgentFailedData }
  | { type: 'SubAgentCancelled'; data: SubAgentCancelledData }
  | { type: 'SubAgentTimedOut'; data: SubAgentTimedOutData };

export const SUB_AGENT_EVENT_TYPES = [
  'SubAgentSpawned',
  'SubAgentAwaitingApproval',
  'SubAgentQueued',
  'SubAgentStarted',
  'SubAgentModelCalled',
  'SubAgentToolStarted',
  'SubAgentToolCompleted',
  'SubAgentCompleted',
  'SubAgentFailed',
  'SubAgentCancelled',
  'SubAgentTimedOut',
] as const satisfies readonly SubAgentEvent['type'][];

export function isSubAgentEvent(event: { type: string }): event is SubAgentEvent {
  return (SUB_AGENT_EVENT_TYPES as readonly string[]).includes(event.type);
}

/** Every event of a run's stream: its own, and its sub-agents' lifecycle and turns. */
export type TeamRunEvent = RunCoreEvent | SubAgentEvent;

export type TeamRunEventType = TeamRunEvent['type'];

/** The events of a role's loop strategy (domain/loop-strategy.ts). */
export const LOOP_EVENT_TYPES = ['LoopStrategyChosen', 'LoopPlanRecorded', 'LoopReplanned', 'LoopStepStarted', 'LoopStepCompleted', 'LoopStepFailed'] as const;

export const TEAM_RUN_EVENT_TYPES: readonly TeamRunEventType[] = [
  'RunLaunched',
  'PhaseStarted',
  'IterationStarted',
  'ModelCallStarted',
  'ModelCallCompleted',
  'ModelCallFailed',
  'ToolCallRequested',
  'ToolCallCompleted',
  'PlanSubmitted',
  'WorkSubmitted',
  'VerdictSubmitted',
  'BudgetExceeded',
  'ReviewOpened',
  'ReviewDecided',
  'RunEnded',
  'RunSuspended',
  'RunResumed',
  'RunRepinned',
  'DriverClaimed',
  'RunForked',
  'StagnationWarned',
  'ContextCompacted',
  'ToolApprovalRequested',
  'ToolApprovalDecided',
  ...SUB_AGENT_EVENT_TYPES,
  'WorkspaceUnrecoverable',
  ...LOOP_EVENT_TYPES,
];

export const RUN_STREAM_PREFIX = 'run-';
export const toRunStreamId = (runId: string): string => `${RUN_STREAM_PREFIX}${runId}`;
export const agentIdentity = (role: RoleName, runId: string): string => `agent:${role}:${runId}`;

export const STATUS_OF_REASON: Record<TerminationReason, RunStatus> = {
  COMPLETED: 'completed',
  REJECTED: 'failed',
  BLOCKED: 'blocked',
  MAX_ITERATIONS: 'failed',
  MAX_TURNS: 'failed',
  BUDGET_EXHAUSTED: 'failed',
  TIMEOUT: 'failed',
  CANCELLED: 'cancelled',
  STAGNATION: 'failed',
  SHUTDOWN: 'suspended',
  ERROR: 'failed',
};
