import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { AssistantBlock, ChatMessage, ModelRequest, ModelResponse, StopReason, ToolSpec, Usage } from './model.port';
import { isRecord, malformed, sortedKeys } from './provider-failures';
import { toMachineText } from '../../shared/text';
import { schemaCopy } from './schema-copy';

/**
 * The pure half of the OpenAI-compatible provider: the Chat Completions request built from the
 * port's request, and the streamed chunks folded back into the port's response. The port's shapes
 * are the Messages API's; here they become Chat Completions': the system prompt a `system` message,
 * a tool result a `tool` message, a tool use a `tool_calls` entry whose arguments are JSON text.
 */

/** Which field carries the output allowance: OpenAI's own API wants `max_completion_tokens`, most compatible servers `max_tokens`. */
export type MaxTokensField = 'max_tokens' | 'max_completion_tokens';

/**
 * The request body; a pure function of the request (tools in name order, tool arguments with their
 * keys sorted), so a resumed run sends byte for byte what an uninterrupted one sends. Extended
 * thinking is Anthropic's and is not sent; thinking blocks in the history are left out.
 */
export function toChatParams(request: ModelRequest, options: { maxTokensField?: MaxTokensField } = {}): ChatCompletionCreateParamsStreaming {
  const messages: ChatCompletionMessageParam[] = [];
  if (request.system) messages.push({ role: 'system', content: request.system });
  for (const message of request.messages) messages.push(...toChatMessages(message));
  const params: ChatCompletionCreateParamsStreaming = {
    model: request.model,
    messages,
    stream: true,
    // The usage comes in a last chunk of its own only when asked for.
    stream_options: { include_usage: true },
  };
  params[options.maxTokensField ?? 'max_tokens'] = request.maxTokens;
  if (request.tools.length > 0 && request.purpose !== 'summary') params.tools = toChatTools(request.tools);
  return params;
}

function toChatTools(tools: readonly ToolSpec[]): ChatCompletionFunctionTool[] {
  const sorted = [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sorted.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: schemaCopy(tool.input_schema) },
  }));
}

/** One port message as Chat Completions messages: a user turn's tool results first (each its own `tool` message), then its text. */
function toChatMessages(message: ChatMessage): ChatCompletionMessageParam[] {
  if (typeof message.content === 'string') return [{ role: message.role, content: message.content }];
  if (message.role === 'assistant') {
    const text = message.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
    const calls = message.content.flatMap((b) =>
      b.type === 'tool_use' ? [{ id: b.id, type: 'function' as const, function: { name: b.name, arguments: JSON.stringify(sortedKeys(b.input)) } }] : [],
    );
    return [{ role: 'assistant', content: text === '' && calls.length > 0 ? null : text, ...(calls.length > 0 ? { tool_calls: calls } : {}) }];
  }
  const out: ChatCompletionMessageParam[] = [];
  for (const block of message.content) {
    // Chat Completions has no error flag on a tool result: the model reads it in the text.
    if (block.type === 'tool_result') out.push({ role: 'tool', tool_call_id: block.tool_use_id, content: block.is_error ? `Error: ${block.content}` : block.content });
  }
  const text = message.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n\n');
  if (text !== '' || out.length === 0) out.push({ role: 'user', content: text });
  return out;
}

const FINISH_REASONS: Record<string, StopReason> = {
  stop: 'end_turn',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  length: 'max_tokens',
  content_filter: 'refusal',
};

interface OpenCall {
  id: string;
  name: string;
  json: string;
}

/**
 * Folds streamed chunks into the final response, strictly: a stream that ends before a finish
 * reason is half an answer, a malformed one. Usage comes from the last chunk (`include_usage`);
 * `prompt_tokens` counts cached tokens too, so the full-rate input is the rest (as the port's
 * `inputTokens` are on every provider) and the cached ones are `cacheReadTokens`.
 */
export class ChatStreamAccumulator {
  private model: string;
  private text = '';
  private readonly calls = new Map<number, OpenCall>();
  private finishReason: string | null = null;
  private usage: Usage = { inputTokens: 0, outputTokens: 0 };
  /** The response's `x-request-id` header. */
  requestId?: string;

  constructor(
    requestedModel: string,
    private readonly onTextDelta?: (text: string) => void,
  ) {
    this.model = requestedModel;
  }

  add(chunk: ChatCompletionChunk): void {
    if (!isRecord(chunk)) throw malformed('a stream chunk is not a JSON object');
    if (typeof chunk.model === 'string' && chunk.model !== '') this.model = chunk.model;
    if (chunk.usage) this.applyUsage(chunk.usage);
    if (!Array.isArray(chunk.choices)) return;
    for (const choice of chunk.choices) {
      // One answer is asked for (no `n`): other choices are not this turn's.
      if (!isRecord(choice) || (choice.index ?? 0) !== 0) continue;
      const delta = isRecord(choice.delta) ? choice.delta : {};
      if (typeof delta.content === 'string' && delta.content !== '') {
        this.text += delta.content;
        this.emitText(delta.content);
      }
      if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) this.addToolCall(call);
      if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
    }
  }

  private addToolCall(call: ChatCompletionChunk.Choice.Delta.ToolCall): void {
    if (!isRecord(call) || typeof call.index !== 'number') throw malformed('a tool_calls delta without an index');
    const open = this.calls.get(call.index) ?? { id: '', name: '', json: '' };
    if (typeof call.id === 'string' && call.id !== '') open.id = call.id;
    if (typeof call.function?.name === 'string') open.name += call.function.name;
    if (typeof call.function?.arguments === 'string') open.json += call.function.arguments;
    this.calls.set(call.index, open);
  }

  /** `newId`: an id for a tool call the server sent without one (some compatible servers do). */
  finish(newId: () => string): ModelResponse {
    if (this.finishReason === null) throw malformed('stream ended before a finish_reason');
    const content: AssistantBlock[] = [];
    if (this.text !== '') content.push({ type: 'text', text: this.text });
    const seen = new Set<string>();
    for (const index of [...this.calls.keys()].sort((a, b) => a - b)) {
      const call = this.calls.get(index)!;
      if (call.name === '') throw malformed(`tool call ${index} has no function name`);
      let input: unknown = {};
      if (call.json.trim() !== '') {
        try {
          input = JSON.parse(call.json);
        } catch {
          throw malformed(`tool call '${call.name}' arguments are not valid JSON`);
        }
      }
      if (!isRecord(input)) throw malformed(`tool call '${call.name}' arguments are not a JSON object`);
      const id = call.id !== '' && !seen.has(call.id) ? call.id : newId();
      seen.add(id);
      content.push({ type: 'tool_use', id, name: call.name, input });
    }
    // Some servers finish a turn that calls tools with `stop`: the calls decide.
    const stopReason = this.calls.size > 0 ? 'tool_use' : (FINISH_REASONS[this.finishReason] ?? this.finishReason);
    // Model text enters the domain as machine text (NUL and lone surrogates escaped, losslessly).
    const response = toMachineText({ model: this.model, content, stopReason, usage: { ...this.usage } });
    // A header the server chose: kept only when it looks like an id (it is recorded in the run's events).
    return this.requestId !== undefined && /^[\x21-\x7e]{1,200}$/.test(this.requestId) ? { ...response, requestId: this.requestId } : response;
  }

  private applyUsage(usage: NonNullable<ChatCompletionChunk['usage']>): void {
    // Each must be a count: a negative or non-numeric one would lower the run's budget and cost.
    const count = (value: unknown, field: string): number | undefined => {
      if (value == null) return undefined;
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw malformed(`usage ${field} is not a count of tokens`);
      return value;
    };
    const prompt = count(usage.prompt_tokens, 'prompt_tokens') ?? 0;
    const cached = count(usage.prompt_tokens_details?.cached_tokens, 'prompt_tokens_details.cached_tokens');
    if (cached !== undefined && cached > prompt) throw malformed('usage counts more cached tokens than prompt tokens');
    this.usage = {
      inputTokens: prompt - (cached ?? 0),
      outputTokens: count(usage.completion_tokens, 'completion_tokens') ?? 0,
      ...(cached !== undefined ? { cacheReadTokens: cached } : {}),
    };
  }

  private emitText(text: string): void {
    try {
      this.onTextDelta?.(text);
    } catch {
      // Live streaming is best effort: a failing listener must not fail the model turn.
    }
  }
}
