/**
 * The resilience policies of a run: how model calls are retried, when stagnation stops a run, how
 * the context window is kept under the model's limit, and which tool calls wait for a human. Each
 * is recorded in RunLaunched when the run is launched, so a resumed or replayed run decides with
 * the policy it was launched with. A RunLaunched without a policy (runs launched before it existed,
 * or launches that leave it out) keeps the behaviour it had: no stagnation stop, no approval gate,
 * the driver's retry policy. Retry policies recorded in the older exponential form are honoured as
 * recorded, so such runs replay and resume as they were launched.
 */

/**
 * Retries of a transient model fault: the wait before each retry, in order, so a call gets one
 * attempt more than there are delays. The default waits 10 s, 30 s, then 90 s — long enough for an
 * overloaded or rate-limited provider to recover, as users of agent systems expect — and a
 * `retry-after` from the server stretches a wait up to `maxDelayMs`.
 */
export interface RetrySchedule {
  delaysMs: number[];
  /** The longest wait, a server's `retry-after` included. */
  maxDelayMs: number;
}

/**
 * The form runs were launched with before schedules, still accepted on launch and honoured when
 * recorded: `maxAttempts` in all, waits doubling from `baseDelayMs` with jitter (half to all of it).
 */
export interface ExponentialRetryPolicy {
  /** Attempts of one model call, the first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export type RetryPolicy = RetrySchedule | ExponentialRetryPolicy;

export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = Object.freeze([10_000, 30_000, 90_000]);
/** Five minutes: a longer `retry-after` is cut to this (a provider asking for more is better failed and relaunched). */
export const DEFAULT_RETRY_MAX_DELAY_MS = 300_000;
export const DEFAULT_RETRY_POLICY: RetrySchedule = Object.freeze({ delaysMs: [...DEFAULT_RETRY_DELAYS_MS], maxDelayMs: DEFAULT_RETRY_MAX_DELAY_MS });
/** What a launch naming only some of the older fields gets for the others (the old defaults). */
export const EXPONENTIAL_RETRY_DEFAULTS: ExponentialRetryPolicy = Object.freeze({ maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 30_000 });
/** Scheduled waits are jittered up to this share later, so runs that failed together do not retry together. */
export const RETRY_JITTER = 0.1;

/** A schedule of these delays, its cap at least the longest of them. */
export function retrySchedule(delaysMs: readonly number[], maxDelayMs?: number): RetrySchedule {
  return { delaysMs: [...delaysMs], maxDelayMs: maxDelayMs ?? Math.max(DEFAULT_RETRY_MAX_DELAY_MS, ...delaysMs) };
}

export function isRetrySchedule(policy: RetryPolicy): policy is RetrySchedule {
  return Array.isArray((policy as RetrySchedule).delaysMs);
}

/** Attempts of one model call the policy allows, the first included. */
export function maxAttemptsOf(policy: RetryPolicy): number {
  return isRetrySchedule(policy) ? policy.delaysMs.length + 1 : policy.maxAttempts;
}

/**
 * The wait before retrying after failed attempt number `attempt` (1 = the first call), or
 * undefined when the policy has no retry left. Never longer than `maxDelayMs`; never shorter than
 * the server's `retry-after` unless that is longer than `maxDelayMs`. `random` is in [0, 1).
 */
export function retryDelayMs(policy: RetryPolicy, attempt: number, retryAfterMs?: number, random: () => number = Math.random): number | undefined {
  if (attempt >= maxAttemptsOf(policy)) return undefined;
  let scheduled: number;
  if (isRetrySchedule(policy)) {
    const delay = policy.delaysMs[attempt - 1];
    scheduled = Math.round(delay + random() * delay * RETRY_JITTER);
  } else {
    const exp = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
    scheduled = Math.round(exp / 2 + random() * (exp / 2));
  }
  return Math.min(policy.maxDelayMs, Math.max(scheduled, retryAfterMs ?? 0));
}

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

/** The product's defaults with the retry schedule this process is configured with. */
export function productLaunchDefaults(retry: RetryPolicy = DEFAULT_RETRY_POLICY): LaunchPolicyDefaults {
  return { ...PRODUCT_LAUNCH_DEFAULTS, retry };
}
