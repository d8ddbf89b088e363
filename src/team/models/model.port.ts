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

export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock;
export type AssistantBlock = TextBlock | ToolUseBlock;

export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string | ContentBlock[];
}

export interface ToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
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
}

export interface ModelResponse {
  /** The model that answered (may differ from the requested alias). */
  model: string;
  content: AssistantBlock[];
  stopReason: StopReason;
  usage: Usage;
}

export interface ModelProvider {
  /** `anthropic`, `offline`, `scripted`... Printed and served so users know what produced output. */
  readonly name: string;
  complete(request: ModelRequest): Promise<ModelResponse>;
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
