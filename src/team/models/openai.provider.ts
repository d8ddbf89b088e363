import { randomUUID } from 'node:crypto';
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, OpenAIError } from 'openai';
import { ModelError, type ModelFailureKind, type ModelProvider, type ModelRequest, type ModelResponse } from './model.port';
import { ChatStreamAccumulator, toChatParams, type MaxTokensField } from './openai-chat';
import { CONTEXT_TOO_LONG, describeCause, isAbortError, isNetworkError, isRecord, malformed, redact, retryAfter, StreamDeadline } from './provider-failures';
import { endpointOf } from '../domain/model-pin';
import { priceOf } from '../domain/pricing';
import { encodeMachineText } from '../../shared/text';

/** OpenAI's own API: what the SDK sends to when no base URL is given. */
export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

export interface OpenAIProviderOptions {
  /** Absent: no `Authorization` header is sent (a local server such as Ollama or llama.cpp needs none). */
  apiKey?: string;
  /** Any Chat-Completions-compatible server (`http://127.0.0.1:11434/v1` for Ollama); default OpenAI's. */
  baseURL?: string;
  /** Longest wait, in ms, for the response headers and then for each next chunk (an idle timeout). Default 5 minutes. */
  timeoutMs?: number;
  /** Default: `max_completion_tokens` on OpenAI's own API (its reasoning models refuse `max_tokens`), `max_tokens` elsewhere. */
  maxTokensField?: MaxTokensField;
  /** Told once per model that answers without a row in the price table (its calls count as costing 0). */
  logger?: { warn(message: string): void };
}

const DEFAULT_TIMEOUT_MS = 300_000;

/**
 * Chat Completions behind the model port, with the official `openai` SDK: streaming, tool calls,
 * usage (cached prompt tokens included where the server reports them), and every SDK failure
 * narrowed to a `ModelError` here, as the Anthropic provider does. The SDK's own retries are off
 * (`maxRetries: 0`): the agent loop retries and records each attempt as an event.
 */
export class OpenAIModelProvider implements ModelProvider {
  readonly name = 'openai';
  /** The scheme, host and port of the base URL the client sends to (the run's pin names it). */
  readonly endpoint: string;
  private readonly client: OpenAI;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly maxTokensField: MaxTokensField;
  private readonly unpriced = new Set<string>();

  constructor(private readonly options: OpenAIProviderOptions = {}) {
    if (options.apiKey !== undefined && options.apiKey.trim() === '') throw new TypeError('OpenAIModelProvider: an apiKey, when given, must not be blank');
    this.apiKey = options.apiKey ?? '';
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const baseURL = options.baseURL ?? OPENAI_BASE_URL;
    this.client = new OpenAI({
      // The SDK wants a key; without one the header is removed below (a keyless local server).
      apiKey: options.apiKey ?? 'unused',
      baseURL,
      maxRetries: 0,
      timeout: this.timeoutMs,
      // The SDK logs unparseable stream data to the console; we report it as a ModelError instead.
      logLevel: 'off',
      ...(options.apiKey === undefined ? { defaultHeaders: { Authorization: null } } : {}),
    });
    this.endpoint = endpointOf(this.client.baseURL) ?? this.client.baseURL;
    this.maxTokensField = options.maxTokensField ?? (this.endpoint === 'https://api.openai.com:443' ? 'max_completion_tokens' : 'max_tokens');
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    if (request.signal?.aborted) throw new ModelError('aborted', 'model request aborted before it was sent');

    const deadline = new StreamDeadline(request.signal, this.timeoutMs);
    const accumulator = new ChatStreamAccumulator(request.model, request.onTextDelta);
    try {
      deadline.touch();
      const { data: stream, request_id: requestId } = await this.client.chat.completions
        .create(toChatParams(request, { maxTokensField: this.maxTokensField }), { signal: deadline.signal, timeout: this.timeoutMs })
        .withResponse();
      if (requestId) accumulator.requestId = requestId;
      for await (const chunk of stream) {
        deadline.touch();
        accumulator.add(chunk);
      }
      deadline.throwIfCut();
      const response = accumulator.finish(() => `call_${randomUUID()}`);
      this.warnIfUnpriced(response.model);
      return response;
    } catch (error) {
      throw this.toModelError(error, { aborted: request.signal?.aborted === true, timedOut: deadline.timedOut });
    } finally {
      deadline.dispose();
    }
  }

  /** A model outside the price table costs 0 in the run's usage: said once per model, not on every call. */
  private warnIfUnpriced(model: string): void {
    if (priceOf(model) !== undefined || this.unpriced.has(model)) return;
    this.unpriced.add(model);
    this.options.logger?.warn(`model '${model}' at ${this.endpoint} has no row in the price table: its calls count as costing 0 USD`);
  }

  private toModelError(error: unknown, state: { aborted: boolean; timedOut: boolean }): ModelError {
    const mapped = mapOpenAIError(error, state, this.timeoutMs);
    // An error's text comes from the server: machine text, like its answers.
    const message = encodeMachineText(redact(mapped.message, this.apiKey));
    if (message === mapped.message) return mapped;
    return new ModelError(mapped.kind, message, mapped.details);
  }
}

/** Exported for unit tests: the whole SDK-error → ModelError table. */
export function mapOpenAIError(error: unknown, state: { aborted: boolean; timedOut: boolean }, timeoutMs: number): ModelError {
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
  if (error instanceof OpenAIError) return malformed(error.message);
  const message = error instanceof Error ? error.message : String(error);
  return malformed(`unexpected failure while reading the response: ${message}`);
}

const OVERLOADED = /overloaded|server is busy|capacity/i;

/** The error's `code` and `type` as OpenAI's body gives them (`{error: {message, type, code}}`), or a compatible server's. */
function fromApiError(error: APIError): ModelError {
  const status = error.status;
  const body = isRecord(error.error) ? error.error : {};
  const code = error.code ?? (typeof body.code === 'string' ? body.code : undefined);
  const type = error.type ?? (typeof body.type === 'string' ? body.type : undefined);
  const apiMessage = typeof body.message === 'string' ? body.message : '';
  const details: ModelError['details'] = {};
  if (status !== undefined) details.status = status;
  if (error.requestID) details.requestId = error.requestID;
  const where = status !== undefined ? `HTTP ${status}` : 'error in the stream';
  const text = `Chat Completions API ${where}${code ? ` ${code}` : type ? ` ${type}` : ''}${apiMessage ? `: ${apiMessage}` : ''}`;

  let kind: ModelFailureKind;
  // Out of credit is a 429 too, but waiting does not end it.
  if (code === 'insufficient_quota') kind = 'permission';
  else if (status === 429 || code === 'rate_limit_exceeded' || type === 'rate_limit_error' || type === 'requests' || type === 'tokens') kind = 'rate_limited';
  else if (status === 529 || ((status === 503 || status === undefined) && OVERLOADED.test(apiMessage))) kind = 'overloaded';
  else if (code === 'context_length_exceeded' || status === 413 || ((status === 400 || status === 422 || status === undefined) && CONTEXT_TOO_LONG.test(apiMessage))) kind = 'context_too_long';
  else if (status === 400 || status === 422) kind = 'invalid_request';
  else if (status === 401) kind = 'authentication';
  else if (status === 402 || status === 403) kind = 'permission';
  else if (status === 404) kind = 'not_found';
  else if (status === 408 || status === 504) kind = 'timeout';
  else if (status !== undefined && status >= 500) kind = 'server';
  else if (status !== undefined) kind = 'invalid_request';
  else kind = type === 'invalid_request_error' ? 'invalid_request' : 'server';

  if (kind === 'rate_limited' || kind === 'overloaded') {
    const retryAfterMs = retryAfter(error.headers);
    if (retryAfterMs !== undefined) details.retryAfterMs = retryAfterMs;
  }
  return new ModelError(kind, text, details);
}
