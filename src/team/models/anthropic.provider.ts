// One file over 400 lines on purpose: the adapter and the pure request builder sit together so the
// cache breakpoints, thinking blocks and tool order a request carries are read next to how the
// stream's answer and every SDK failure are narrowed back to the model port.
import Anthropic, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  AnthropicError,
} from '@anthropic-ai/sdk';
import type {
  CacheControlEphemeral,
  MessageCountTokensParams,
  MessageCreateParamsStreaming,
  RawMessageStreamEvent,
  Tool,
} from '@anthropic-ai/sdk/resources/messages';
import {
  ModelError,
  type AssistantBlock,
  type ChatMessage,
  type ModelFailureKind,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type StopReason,
  type TokenCountRequest,
  type ToolSpec,
  type Usage,
} from './model.port';
import { endpointOf } from '../domain/model-pin';
import { CONTEXT_TOO_LONG, describeCause, isAbortError, isNetworkError, isRecord, malformed, redact, retryAfter, sortedKeys, StreamDeadline } from './provider-failures';

export { retryAfter } from './provider-failures';
import { decodeMachineText, encodeMachineText, toMachineText } from '../../shared/text';
import { schemaCopy } from './schema-copy';

export interface AnthropicProviderOptions {
  apiKey: string;
  /** Messages-API-compatible server; when omitted the SDK reads `ANTHROPIC_BASE_URL`, then uses Anthropic's. */
  baseURL?: string;
  /**
   * Longest wait, in ms, for the response headers and then for each next stream event (an idle
   * timeout, so long generations that keep streaming are not cut off). Default 5 minutes (TRIAD_MODEL_IDLE_TIMEOUT_MS).
   */
  timeoutMs?: number;
  /** Prompt caching breakpoints on tools, system prompt and conversation (default true). */
  promptCaching?: boolean;
  /** Longest wait, in ms, for a token count (default 10 s): the run falls back to its estimate after it. */
  countTimeoutMs?: number;
}

const DEFAULT_COUNT_TIMEOUT_MS = 10_000;

const DEFAULT_TIMEOUT_MS = 300_000;

/**
 * The Anthropic Messages API behind the model port: streaming, tool use, and every SDK failure
 * narrowed to a `ModelError` here, at the adapter boundary. The SDK's own retries are off
 * (`maxRetries: 0`) because the agent loop retries and records each attempt as an event.
 */
export class AnthropicModelProvider implements ModelProvider {
  readonly name = 'anthropic';
  /** The scheme, host and port of the base URL the client sends to (the run's pin names it). */
  readonly endpoint: string;
  private readonly client: Anthropic;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly promptCaching: boolean;
  private readonly countTimeoutMs: number;

  constructor(options: AnthropicProviderOptions) {
    if (!options.apiKey) throw new TypeError('AnthropicModelProvider needs an apiKey');
    this.apiKey = options.apiKey;
    this.promptCaching = options.promptCaching ?? true;
    this.countTimeoutMs = options.countTimeoutMs ?? DEFAULT_COUNT_TIMEOUT_MS;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.client = new Anthropic({
      apiKey: options.apiKey,
      ...(options.baseURL ? { baseURL: options.baseURL } : {}),
      maxRetries: 0,
      timeout: this.timeoutMs,
      // The SDK logs unparseable stream data to the console; we report it as a ModelError instead.
      logLevel: 'off',
    });
    this.endpoint = endpointOf(this.client.baseURL) ?? this.client.baseURL;
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    if (request.signal?.aborted) throw new ModelError('aborted', 'model request aborted before it was sent');

    const deadline = new StreamDeadline(request.signal, this.timeoutMs);
    const accumulator = new StreamAccumulator(request.model, request.onTextDelta);
    try {
      deadline.touch();
      const { data: stream, request_id: requestId } = await this.client.messages
        .create(toParams(request, { cache: this.promptCaching }), { signal: deadline.signal, timeout: this.timeoutMs })
        .withResponse();
      if (requestId) accumulator.requestId = requestId;
      for await (const event of stream) {
        deadline.touch();
        accumulator.add(event);
      }
      deadline.throwIfCut();
      return accumulator.finish();
    } catch (error) {
      throw this.toModelError(error, { aborted: request.signal?.aborted === true, timedOut: deadline.timedOut });
    } finally {
      deadline.dispose();
    }
  }

  /** Anthropic's token-counting endpoint (`POST /v1/messages/count_tokens`); failures are ModelErrors. */
  async countTokens(request: TokenCountRequest): Promise<number> {
    try {
      const counted = await this.client.messages.countTokens(toCountParams(request), { signal: request.signal, timeout: this.countTimeoutMs });
      if (typeof counted?.input_tokens !== 'number' || !Number.isFinite(counted.input_tokens)) throw malformed('token count without input_tokens');
      return counted.input_tokens;
    } catch (error) {
      throw this.toModelError(error, { aborted: request.signal?.aborted === true, timedOut: false }, this.countTimeoutMs);
    }
  }

  /** `timeoutMs`: the timeout the failed request had (a message names it when the request timed out). */
  private toModelError(error: unknown, state: { aborted: boolean; timedOut: boolean }, timeoutMs = this.timeoutMs): ModelError {
    const mapped = mapError(error, state, timeoutMs);
    // An error's text comes from the server: machine text, like its answers.
    const message = encodeMachineText(redact(mapped.message, this.apiKey));
    if (message === mapped.message) return mapped;
    return new ModelError(mapped.kind, message, mapped.details);
  }
}

/**
 * Builds the request body from the port's request without touching (or sharing) the caller's objects.
 * Exported for unit tests; the whole body is a pure function of the request, so a resumed run sends
 * byte for byte what an uninterrupted one sends.
 *
 * Prompt caching (`cache: true`): tools go in name order (the prefix stays the same whatever order the
 * registry lists them in) and at most four `cache_control` breakpoints (the API's limit) mark, in
 * prefix order: the last tool, the system prompt, the last block of the previous user message (what
 * the previous request cached, so it is read even when a turn adds more than the API's 20-block
 * lookback) and the last block of the conversation (written for the next request).
 */
export function toParams(request: ModelRequest, options: { cache?: boolean } = {}): MessageCreateParamsStreaming {
  // A summary request is made once: writing it to the cache would only cost more.
  const cache = (options.cache ?? true) && request.purpose !== 'summary';
  const messages = request.messages.map(toApiMessage);
  const thinking = request.purpose === 'summary' ? undefined : request.thinking;
  const params: MessageCreateParamsStreaming = {
    model: request.model,
    // Thinking counts toward max_tokens and must stay below it: the role's output allowance comes on top.
    max_tokens: thinking ? request.maxTokens + thinking.budgetTokens : request.maxTokens,
    messages,
    stream: true,
  };
  if (request.system) params.system = cache ? [{ type: 'text', text: request.system, cache_control: EPHEMERAL() }] : request.system;
  if (request.tools.length > 0) params.tools = toApiTools(request.tools, cache);
  if (thinking) params.thinking = { type: 'enabled', budget_tokens: thinking.budgetTokens };
  if (cache) markConversation(messages);
  return params;
}

/** The token-counting request for the same prompt (no breakpoints: they do not change the count). */
export function toCountParams(request: TokenCountRequest): MessageCountTokensParams {
  const params: MessageCountTokensParams = { model: request.model, messages: request.messages.map(toApiMessage) };
  if (request.system) params.system = request.system;
  if (request.tools.length > 0) params.tools = toApiTools(request.tools, false);
  if (request.thinking) params.thinking = { type: 'enabled', budget_tokens: request.thinking.budgetTokens };
  return params;
}

const EPHEMERAL = (): CacheControlEphemeral => ({ type: 'ephemeral' });

function toApiTools(tools: readonly ToolSpec[], cache: boolean): Tool[] {
  const sorted = [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sorted.map((tool, i) => ({
    name: tool.name,
    description: tool.description,
    input_schema: schemaCopy(tool.input_schema) as Tool.InputSchema,
    ...(cache && i === sorted.length - 1 ? { cache_control: EPHEMERAL() } : {}),
  }));
}

type ApiMessage = MessageCreateParamsStreaming['messages'][number];
type ApiBlock = Exclude<ApiMessage['content'], string>[number];

/** The conversation's two breakpoints: its last block, and the last block of the user message before the last reply. */
function markConversation(messages: ApiMessage[]): void {
  const last = messages.length - 1;
  if (last < 0) return;
  markMessage(messages[last]);
  for (let i = last - 1; i >= 0; i--) {
    if (messages[i].role === 'user' && messages[i + 1]?.role === 'assistant' && i + 1 < last) {
      markMessage(messages[i]);
      return;
    }
  }
}

/** Puts a breakpoint on the message's last block that can hold one (not thinking, not empty text). */
function markMessage(message: ApiMessage): void {
  if (typeof message.content === 'string') {
    if (message.content === '') return;
    message.content = [{ type: 'text', text: message.content, cache_control: EPHEMERAL() }];
    return;
  }
  for (let i = message.content.length - 1; i >= 0; i--) {
    const block = message.content[i] as ApiBlock & { cache_control?: CacheControlEphemeral };
    if (block.type === 'thinking' || block.type === 'redacted_thinking') continue;
    if (block.type === 'text' && block.text === '') continue;
    block.cache_control = EPHEMERAL();
    return;
  }
}

function toApiMessage(message: ChatMessage): ApiMessage {
  if (typeof message.content === 'string') return { role: message.role, content: message.content };
  return {
    role: message.role,
    content: message.content.map((block): ApiBlock => {
      switch (block.type) {
        case 'text':
          return { type: 'text' as const, text: block.text };
        case 'tool_use':
          // Keys in sorted order, as the store keeps them: a resumed run sends the bytes a live one sends.
          return { type: 'tool_use' as const, id: block.id, name: block.name, input: sortedKeys(block.input) as Record<string, unknown> };
        case 'tool_result':
          return {
            type: 'tool_result' as const,
            tool_use_id: block.tool_use_id,
            content: block.content,
            ...(block.is_error !== undefined ? { is_error: block.is_error } : {}),
          };
        // Thinking goes back exactly as the model sent it (its stored form decoded): the signature covers it.
        case 'thinking':
          return { type: 'thinking' as const, thinking: decodeMachineText(block.thinking), signature: block.signature };
        case 'redacted_thinking':
          return { type: 'redacted_thinking' as const, data: block.data };
      }
    }),
  };
}

interface OpenBlock {
  type: 'text' | 'tool_use' | 'thinking' | 'redacted_thinking' | 'other';
  text: string;
  signature: string;
  id: string;
  name: string;
  json: string;
  input: Record<string, unknown>;
  closed: boolean;
}

/** Folds raw stream events into the final response, strictly: half a message is a malformed one. */
class StreamAccumulator {
  private model: string;
  private started = false;
  private stopped = false;
  private stopReason: StopReason | null = null;
  private readonly usage: Usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  private readonly blocks = new Map<number, OpenBlock>();
  /** The response's `request-id` header. */
  requestId?: string;

  constructor(
    requestedModel: string,
    private readonly onTextDelta?: (text: string) => void,
  ) {
    this.model = requestedModel;
  }

  add(event: RawMessageStreamEvent): void {
    if (this.stopped) throw malformed(`stream event '${event.type}' after message_stop`);
    if (!this.started && event.type !== 'message_start') throw malformed(`stream began with '${event.type}' instead of message_start`);
    switch (event.type) {
      case 'message_start': {
        if (this.started) throw malformed('a second message_start in one stream');
        this.started = true;
        this.model = event.message.model || this.model;
        this.applyUsage(event.message.usage);
        return;
      }
      case 'content_block_start': {
        const block = event.content_block;
        const open: OpenBlock = { type: 'other', text: '', signature: '', id: '', name: '', json: '', input: {}, closed: false };
        if (block.type === 'thinking') {
          open.type = 'thinking';
          open.text = block.thinking ?? '';
          open.signature = block.signature ?? '';
        } else if (block.type === 'redacted_thinking') {
          open.type = 'redacted_thinking';
          open.text = block.data;
        } else if (block.type === 'text') {
          open.type = 'text';
          open.text = block.text ?? '';
        } else if (block.type === 'tool_use') {
          open.type = 'tool_use';
          open.id = block.id;
          open.name = block.name;
          open.input = isRecord(block.input) ? block.input : {};
        }
        this.blocks.set(event.index, open);
        if (open.type === 'text' && open.text) this.emitText(open.text);
        return;
      }
      case 'content_block_delta': {
        const open = this.blocks.get(event.index);
        if (!open || open.closed) throw malformed(`content_block_delta for block ${event.index} that is not open`);
        if (event.delta.type === 'text_delta' && open.type === 'text') {
          open.text += event.delta.text;
          this.emitText(event.delta.text);
        } else if (event.delta.type === 'input_json_delta' && open.type === 'tool_use') {
          open.json += event.delta.partial_json;
        } else if (event.delta.type === 'thinking_delta' && open.type === 'thinking') {
          open.text += event.delta.thinking;
        } else if (event.delta.type === 'signature_delta' && open.type === 'thinking') {
          open.signature += event.delta.signature;
        }
        return;
      }
      case 'content_block_stop': {
        const open = this.blocks.get(event.index);
        if (!open || open.closed) throw malformed(`content_block_stop for block ${event.index} that is not open`);
        open.closed = true;
        if (open.type === 'tool_use' && open.json.trim() !== '') {
          let input: unknown;
          try {
            input = JSON.parse(open.json);
          } catch {
            throw malformed(`tool_use '${open.name}' input is not valid JSON`);
          }
          if (!isRecord(input)) throw malformed(`tool_use '${open.name}' input is not a JSON object`);
          open.input = input;
        }
        return;
      }
      case 'message_delta': {
        this.stopReason = event.delta.stop_reason ?? this.stopReason;
        this.applyUsage(event.usage);
        return;
      }
      case 'message_stop':
        this.stopped = true;
        return;
      default:
        // Event types newer than this adapter are skipped, as the API's versioning policy asks.
        return;
    }
  }

  finish(): ModelResponse {
    if (!this.stopped) throw malformed('stream ended before message_stop');
    const content: AssistantBlock[] = [];
    for (const index of [...this.blocks.keys()].sort((a, b) => a - b)) {
      const block = this.blocks.get(index)!;
      if (!block.closed) throw malformed(`content block ${index} was never closed`);
      // The API refuses empty text blocks when the conversation is sent back, so none are kept.
      if (block.type === 'text' && block.text !== '') content.push({ type: 'text', text: block.text });
      if (block.type === 'tool_use') content.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input });
      // Kept whole and in place, even when empty: they go back to the API exactly as they came.
      if (block.type === 'thinking') content.push({ type: 'thinking', thinking: block.text, signature: block.signature });
      if (block.type === 'redacted_thinking') content.push({ type: 'redacted_thinking', data: block.text });
    }
    // Model text enters the domain as machine text (NUL and lone surrogates escaped, losslessly).
    const response = toMachineText({ model: this.model, content, stopReason: this.stopReason ?? 'end_turn', usage: { ...this.usage } });
    // A header the server chose: kept only when it looks like an id (it is recorded in the run's events).
    return this.requestId !== undefined && /^[\x21-\x7e]{1,200}$/.test(this.requestId) ? { ...response, requestId: this.requestId } : response;
  }

  private applyUsage(usage: {
    input_tokens?: number | null;
    output_tokens?: number | null;
    cache_read_input_tokens?: number | null;
    cache_creation_input_tokens?: number | null;
  }): void {
    // Counters are whole-message totals that the API may repeat or omit; overwrite, never add.
    // Each must be a count: a negative or non-numeric one would lower the run's budget and cost.
    const count = (value: number | null | undefined, field: string): number | undefined => {
      if (value == null) return undefined;
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw malformed(`usage ${field} is not a count of tokens`);
      return value;
    };
    this.usage.inputTokens = count(usage.input_tokens, 'input_tokens') ?? this.usage.inputTokens;
    this.usage.outputTokens = count(usage.output_tokens, 'output_tokens') ?? this.usage.outputTokens;
    this.usage.cacheReadTokens = count(usage.cache_read_input_tokens, 'cache_read_input_tokens') ?? this.usage.cacheReadTokens;
    this.usage.cacheWriteTokens = count(usage.cache_creation_input_tokens, 'cache_creation_input_tokens') ?? this.usage.cacheWriteTokens;
  }

  private emitText(text: string): void {
    try {
      this.onTextDelta?.(text);
    } catch {
      // Live streaming is best effort: a failing listener must not fail the model turn.
    }
  }
}

const ERROR_TYPE_KINDS: Record<string, ModelFailureKind> = {
  rate_limit_error: 'rate_limited',
  overloaded_error: 'overloaded',
  api_error: 'server',
  timeout_error: 'timeout',
  authentication_error: 'authentication',
  permission_error: 'permission',
  billing_error: 'permission',
  not_found_error: 'not_found',
  invalid_request_error: 'invalid_request',
  request_too_large: 'context_too_long',
};

/** Exported for unit tests: the whole SDK-error → ModelError table. */
export function mapError(error: unknown, state: { aborted: boolean; timedOut: boolean }, timeoutMs: number): ModelError {
  if (error instanceof ModelError) return error;
  // Our signals first: the SDK reports both an abort and our idle timeout as a user abort.
  if (state.aborted) return new ModelError('aborted', 'model request aborted');
  if (state.timedOut) return new ModelError('timeout', `no data from the model for ${timeoutMs} ms`);
  if (error instanceof APIUserAbortError || isAbortError(error)) return new ModelError('aborted', 'model request aborted');
  if (error instanceof APIConnectionTimeoutError) return new ModelError('timeout', `model request timed out after ${timeoutMs} ms`);
  if (error instanceof APIConnectionError) return new ModelError('connection', `cannot reach the model API: ${describeCause(error)}`);
  if (error instanceof APIError) return fromApiError(error);
  if (error instanceof SyntaxError) return malformed(`stream data is not valid JSON (${error.message})`);
  if (isNetworkError(error)) return new ModelError('connection', `connection to the model API failed mid-response: ${describeCause(error)}`);
  if (error instanceof AnthropicError) return malformed(error.message);
  const message = error instanceof Error ? error.message : String(error);
  return malformed(`unexpected failure while reading the response: ${message}`);
}

function fromApiError(error: APIError): ModelError {
  const status = error.status;
  const type = error.type ?? bodyErrorType(error.error);
  const apiMessage = error.apiMessage ?? bodyErrorMessage(error.error) ?? '';
  const details: ModelError['details'] = {};
  if (status !== undefined) details.status = status;
  if (error.requestID) details.requestId = error.requestID;
  const where = status !== undefined ? `HTTP ${status}` : 'error event in the stream';
  const text = `Anthropic API ${where}${type ? ` ${type}` : ''}${apiMessage ? `: ${apiMessage}` : ''}`;

  let kind: ModelFailureKind;
  if (status === 429 || type === 'rate_limit_error') kind = 'rate_limited';
  else if (status === 529 || type === 'overloaded_error') kind = 'overloaded';
  else if (status === 400 || status === 413 || status === 422 || type === 'invalid_request_error' || type === 'request_too_large') {
    kind = CONTEXT_TOO_LONG.test(apiMessage) || status === 413 || type === 'request_too_large' ? 'context_too_long' : 'invalid_request';
  } else if (status === 401) kind = 'authentication';
  else if (status === 402 || status === 403) kind = 'permission';
  else if (status === 404) kind = 'not_found';
  else if (status === 408 || status === 504) kind = 'timeout';
  else if (status !== undefined && status >= 500) kind = 'server';
  else if (status !== undefined) kind = 'invalid_request';
  else kind = (type && ERROR_TYPE_KINDS[type]) || 'server';

  if (kind === 'rate_limited' || kind === 'overloaded') {
    const retryAfterMs = retryAfter(error.headers);
    if (retryAfterMs !== undefined) details.retryAfterMs = retryAfterMs;
  }
  return new ModelError(kind, text, details);
}

function bodyErrorType(body: unknown): string | null {
  const inner = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  return inner && typeof inner.type === 'string' ? inner.type : null;
}

function bodyErrorMessage(body: unknown): string | null {
  const inner = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  return inner && typeof inner.message === 'string' ? inner.message : null;
}
