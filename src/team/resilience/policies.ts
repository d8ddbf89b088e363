/**
 * The resilience policies of a run: how model calls are retried, when stagnation stops a run, how
 * the context window is kept under the model's limit, and which tool calls wait for a human. Each
 * is recorded in RunLaunched when the run is launched, so a resumed or replayed run decides with
 * the policy it was launched with. A RunLaunched without a policy (runs launched before it existed,
 * or launches that leave it out) keeps the behaviour it had: no stagnation stop, no approval gate,
 * the driver's retry policy.
 */

export interface RetryPolicy {
  /** Attempts of one model call, the first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 30_000 };

export type ToolRisk = 'low' | 'high';
/** `high`: tools of risk `high` wait for a human; `none`: nothing waits. */
export type ApprovalThreshold = 'high' | 'none';
export type ApprovalTimeoutPolicy = 'wait' | 'auto_approve' | 'auto_deny';

export interface ToolApprovalPolicy {
  threshold: ApprovalThreshold;
  /** Like the review gate: by default the person who launched the run may not approve its tool calls. */
  allowLauncherToApprove: boolean;
  timeout: { policy: ApprovalTimeoutPolicy; afterMs?: number };
}

export const DEFAULT_TOOL_APPROVAL: ToolApprovalPolicy = { threshold: 'high', allowLauncherToApprove: false, timeout: { policy: 'wait' } };

/** Whether a tool of this risk waits for a human under the run's policy. */
export function requiresApproval(risk: ToolRisk, policy: ToolApprovalPolicy | undefined): boolean {
  return policy !== undefined && policy.threshold === 'high' && risk === 'high';
}

export interface StagnationPolicy {
  enabled: boolean;
  /** Tool calls (and tool-bearing turns, for cycles) looked at. */
  windowSize: number;
  /** Share of the window's calls that repeat an earlier call of the window: (calls − distinct) / calls. */
  repetitionThreshold: number;
  /** Calls in the window before the repetition ratio counts. */
  minCalls: number;
  /** A→B→A→B (any cycle of 2 to windowSize/2 turns) counts as stagnation. */
  cycleDetection: boolean;
  /** Corrective messages before the run ends STAGNATION. */
  maxWarnings: number;
  /** A REQUEST_CHANGES whose findings repeat the previous round's ends the run STAGNATION. */
  repeatedFindings: boolean;
}

export const DEFAULT_STAGNATION_POLICY: StagnationPolicy = {
  enabled: true,
  windowSize: 10,
  repetitionThreshold: 0.6,
  minCalls: 6,
  cycleDetection: true,
  maxWarnings: 1,
  repeatedFindings: true,
};

export interface ContextWindowPolicy {
  /** The model's context limit in tokens; default from the model's name (200,000 for Claude models). */
  limitTokens?: number;
  /** Kept free below the limit, beyond the system prompt. Default 20,000. */
  marginTokens?: number;
  /** Messages never archived, counted from the end. Default 4. */
  keepRecentMessages?: number;
  /**
   * How far a compaction goes: the messages kept (the summary aside) fit this share of the budget.
   * Default 50: the next compaction is half a context away, not one message away. 100 keeps as
   * much as fits (and compacts again soon after).
   */
  compactToPercent?: number;
  /** Model that writes summaries; default claude-haiku-4-5 for Claude models, else the role's own model. */
  summaryModel?: string;
}

/**
 * Policies recorded when a launch leaves them out. The API and the CLI launch with these
 * (`LaunchRunHandler`); code that calls `launchRun` directly chooses its own.
 */
export interface LaunchPolicyDefaults {
  retry?: RetryPolicy;
  toolApproval?: ToolApprovalPolicy;
  stagnation?: StagnationPolicy;
  contextWindow?: ContextWindowPolicy;
}

export const PRODUCT_LAUNCH_DEFAULTS: LaunchPolicyDefaults = Object.freeze({
  retry: DEFAULT_RETRY_POLICY,
  toolApproval: DEFAULT_TOOL_APPROVAL,
  stagnation: DEFAULT_STAGNATION_POLICY,
});
