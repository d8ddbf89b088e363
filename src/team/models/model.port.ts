/**
 * The model port: one completion of an agent turn. Shapes follow the Messages API because every
 * provider triad speaks maps onto it; the domain stores these blocks verbatim in its events.
 */

export type RoleName = 'architect' | 'executor' | 'reviewer';

export interface TextBlock {
  type: 'text';
  text: string;
}

export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
}

export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error?: boolean;
}

/**
 * Extended thinking. Stored exactly as the model sent it (the signature included) and sent back
 * unchanged on later turns: the API checks the signature, and requires the blocks with tool use.
 */
export interface ThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
}

/** Thinking the API returns encrypted (`data`); sent back unchanged like `thinking`. */
export interface RedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
}

export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock;
export type AssistantBlock = TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock;

export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string | ContentBlock[];
}

export interface ToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  /** MCP tools: the hints their server gave (providers that do not take them leave them out). */
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean };
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'pause_turn' | 'refusal' | string;

export interface ModelRequest {
  runId: string;
  role: RoleName;
  model: string;
  system: string;
  messages: ChatMessage[];
  tools: readonly ToolSpec[];
  maxTokens: number;
  signal?: AbortSignal;
  /** Streamed text as it arrives (published live; not stored — the completed response is). */
  onTextDelta?: (text: string) => void;
  /** `summary`: compacting a conversation (no tools; the answer is the summary text). Default: an agent turn. */
  purpose?: 'turn' | 'summary';
  /** Extended thinking for this call (the role's setting); providers without it ignore it. */
  thinking?: ThinkingSettings;
  /** Set when a sub-agent of `role` (the phase agent) makes the call: its own role and path. */
  subAgent?: { role: string; path: string };
  /**
   * The provider the run's pin names for the role: a process with several (model-roster.ts) sends
   * the call there. Absent: the process's default provider.
   */
  provider?: string;
}

/** A role's extended thinking: up to `budgetTokens` tokens of reasoning per call, on top of `maxTokens`. */
export interface ThinkingSettings {
  budgetTokens: number;
}

/** The parts of a request that a token count depends on. */
export type TokenCountRequest = Pick<ModelRequest, 'model' | 'system' | 'messages' | 'tools' | 'thinking' | 'provider'> & { signal?: AbortSignal };

export interface ModelResponse {
  /** The model that answered (may differ from the requested alias). */
  model: string;
  content: AssistantBlock[];
  stopReason: StopReason;
  usage: Usage;
  /** The provider's id of the request (Anthropic's `request-id` header), when it gives one. */
  requestId?: string;
}

export interface ModelProvider {
  /** `anthropic`, `offline`, `scripted`... Printed and served so users know what produced output. */
  readonly name: string;
  /**
   * Where its calls go: the scheme, host and port of its base URL (domain/model-pin.ts endpointOf).
   * Absent: `<name>:`, a provider with no network (see `processModelOf`).
   */
  readonly endpoint?: string;
  /**
   * A process with several providers (model-roster.ts): each of them by name, the default one
   * included. Absent: this provider is the process's only one.
   */
  readonly providers?: ReadonlyMap<string, ModelProvider>;
  complete(request: ModelRequest): Promise<ModelResponse>;
  /**
   * The input tokens the request would use, counted by the provider (Anthropic's token-counting
   * endpoint). Optional: without it (or when it fails) the driver estimates.
   */
  countTokens?(request: TokenCountRequest): Promise<number>;
}

/** Failure classes the agent loop decides on (retry, compact, stop). */
export type ModelFailureKind =
  | 'rate_limited'
  | 'overloaded'
  | 'server'
  | 'timeout'
  | 'connection'
  | 'invalid_request'
  | 'context_too_long'
  | 'authentication'
  | 'permission'
  | 'not_found'
  | 'malformed_response'
  | 'aborted';

export const TRANSIENT_MODEL_FAILURES: ReadonlySet<ModelFailureKind> = new Set([
  'rate_limited',
  'overloaded',
  'server',
  'timeout',
  'connection',
  'malformed_response',
]);

export class ModelError extends Error {
  override readonly name = 'ModelError';
  constructor(
    readonly kind: ModelFailureKind,
    message: string,
    readonly details: { status?: number; retryAfterMs?: number; requestId?: string } = {},
  ) {
    super(message);
  }

  get transient(): boolean {
    return TRANSIENT_MODEL_FAILURES.has(this.kind);
  }
}

export const MODEL_PROVIDER = Symbol('MODEL_PROVIDER');
