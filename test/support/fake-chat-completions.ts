import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoopbackServer } from './loopback-server';

/**
 * A loopback stand-in for a Chat Completions server (`POST /v1/chat/completions`: OpenAI's, or the
 * compatible ones of Ollama, vLLM, llama.cpp, LM Studio), for tests that drive the real `openai` SDK
 * over real HTTP. It answers from a script — a queue of steps, each an answer or a fault — and
 * streams Server-Sent Events the way the API does: chunks of `choices[0].delta` (text split into
 * several `content` pieces, tool calls as `tool_calls` deltas whose `arguments` come in pieces),
 * a chunk with the `finish_reason`, then, when the request asks for `stream_options.include_usage`,
 * a chunk with `choices: []` and the `usage`, then `data: [DONE]`.
 *
 * Every request it receives is recorded (headers and parsed body), so tests can assert what the
 * client sent. With `apiKey`, a request without `Authorization: Bearer <it>` gets OpenAI's 401.
 */

export interface FakeChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** Reported as `prompt_tokens_details.cached_tokens` (OpenAI's cache hits; some servers report none). */
  cached_tokens?: number;
}

export interface FakeToolCall {
  /** Default `call_<n>`; `null` sends none (some compatible servers do not). */
  id?: string | null;
  name: string;
  arguments: Record<string, unknown>;
  /** Streamed instead of JSON.stringify(arguments), to send broken arguments. */
  rawArguments?: string;
}

/** A successful answer, streamed (the fake only streams: triad always asks for a stream). */
export interface FakeChatAnswer {
  kind: 'answer';
  text?: string;
  toolCalls?: FakeToolCall[];
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: string;
  /** Default: 10 prompt and 5 completion tokens. */
  usage?: FakeChatUsage;
  /** Default: the model the request named. */
  model?: string;
  /** Characters per content / arguments piece (default 6). */
  chunkSize?: number;
  /** Pause between SSE events (default 0). */
  eventDelayMs?: number;
}

/** An HTTP error with OpenAI's body `{error: {message, type, code}}`. */
export interface FakeChatHttpError {
  kind: 'http_error';
  status: number;
  code?: string;
  type?: string;
  message?: string;
  headers?: Record<string, string>;
}

/** Faults while streaming `answer` (default: a short text) after `afterEvents` events (default 2; `hang`: 1). */
export interface FakeChatFault {
  kind: 'reset' | 'hang' | 'malformed' | 'truncated' | 'stream_error';
  answer?: Omit<FakeChatAnswer, 'kind'>;
  afterEvents?: number;
  /** `reset` / `hang`: before any response byte, headers included. */
  beforeHeaders?: boolean;
  /** `stream_error`: the error object sent as `data: {"error": …}`. */
  error?: { message: string; type?: string; code?: string };
}

export type FakeChatStep = FakeChatAnswer | FakeChatHttpError | FakeChatFault;

export interface RecordedChatRequest {
  method: string;
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  body: Record<string, unknown> | undefined;
}

export interface FakeChatCompletionsOptions {
  apiKey?: string;
  /** Answers requests when the queue is empty (default: a 500 saying the script ran out). */
  fallback?: (request: RecordedChatRequest, index: number) => FakeChatStep;
}

/** A text answer. */
export const chatText = (text: string, extra: Omit<FakeChatAnswer, 'kind' | 'text'> = {}): FakeChatAnswer => ({ kind: 'answer', text, ...extra });

/** An answer calling one tool (text may come first). */
export const chatToolCall = (name: string, args: Record<string, unknown>, extra: Omit<FakeChatAnswer, 'kind' | 'toolCalls'> & { id?: string | null } = {}): FakeChatAnswer => {
  const { id, ...rest } = extra;
  return { kind: 'answer', toolCalls: [{ name, arguments: args, ...(id !== undefined ? { id } : {}) }], ...rest };
};

export const chatHttpError = (status: number, extra: Omit<FakeChatHttpError, 'kind' | 'status'> = {}): FakeChatHttpError => ({ kind: 'http_error', status, ...extra });

const DEFAULT_CODES: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
  500: { type: 'server_error', code: null },
};

export class FakeChatCompletions {
  readonly requests: RecordedChatRequest[] = [];
  private readonly queue: FakeChatStep[] = [];
  private server: LoopbackServer | undefined;
  private port = 0;
  private counter = 0;

  constructor(private readonly options: FakeChatCompletionsOptions = {}) {}

  /** The base URL to give the SDK, e.g. `http://127.0.0.1:41234/v1`. */
  get url(): string {
    if (!this.server) throw new Error('FakeChatCompletions is not started');
    return `http://127.0.0.1:${this.port}/v1`;
  }

  /** The scheme, host and port: what a run's pin records. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pending(): number {
    return this.queue.length;
  }

  async start(): Promise<this> {
    this.server = await LoopbackServer.listen((req, res) => void this.handle(req, res));
    this.port = this.server.port;
    return this;
  }

  /** Closes the server, dropping hung and kept-alive connections. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await server?.stop();
  }

  enqueue(...steps: FakeChatStep[]): this {
    this.queue.push(...steps);
    return this;
  }

  reset(): this {
    this.queue.length = 0;
    this.requests.length = 0;
    this.counter = 0;
    return this;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      body = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
    } catch {
      body = undefined;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    const recorded: RecordedChatRequest = { method: req.method ?? '', path: (req.url ?? '').split('?')[0], headers, body };
    const index = this.requests.length;
    this.requests.push(recorded);
    const requestId = `req_chat_${++this.counter}`;
    if (recorded.method !== 'POST' || recorded.path !== '/v1/chat/completions') return sendError(res, chatHttpError(404, { message: `Not found: ${recorded.method} ${recorded.path}` }), requestId);
    if (this.options.apiKey !== undefined && headers.authorization !== `Bearer ${this.options.apiKey}`) {
      return sendError(res, chatHttpError(401, { message: 'Incorrect API key provided.' }), requestId);
    }
    if (!body || typeof body.model !== 'string' || !Array.isArray(body.messages) || body.stream !== true) {
      return sendError(res, chatHttpError(400, { message: 'model, messages and stream: true are required' }), requestId);
    }
    const step = this.queue.shift() ?? this.options.fallback?.(recorded, index) ?? chatHttpError(500, { message: `fake Chat Completions: no scripted step for request #${index + 1}` });
    if (step.kind === 'http_error') return sendError(res, step, requestId);
    if ((step.kind === 'hang' || step.kind === 'reset') && step.beforeHeaders) {
      if (step.kind === 'reset') req.socket.destroy();
      return; // a hang never answers; stop() destroys the socket
    }
    const answer: FakeChatAnswer = step.kind === 'answer' ? step : { kind: 'answer', text: 'Hello from the fake Chat Completions server.', ...step.answer };
    const events = sseEvents(answer, body, requestId);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-request-id': requestId });
    res.flushHeaders();
    const count = step.kind === 'answer' ? events.length : Math.min(step.afterEvents ?? (step.kind === 'hang' ? 1 : 2), events.length);
    for (const event of events.slice(0, count)) {
      if (res.destroyed) return;
      res.write(event);
      if (answer.eventDelayMs) await sleep(answer.eventDelayMs);
    }
    switch (step.kind) {
      case 'answer':
      case 'truncated':
        return void res.end();
      case 'hang':
        return; // nothing more, ever
      case 'reset':
        await sleep(20); // the events written reach the client first: it fails mid-stream
        return void req.socket.destroy();
      case 'malformed':
        res.write('data: {this is not json\n\n');
        return void res.end();
      case 'stream_error':
        res.write(`data: ${JSON.stringify({ error: step.error ?? { message: 'The server had an error while processing your request.', type: 'server_error' } })}\n\n`);
        return void res.end();
    }
  }
}

export async function startFakeChatCompletions(options: FakeChatCompletionsOptions = {}): Promise<FakeChatCompletions> {
  return new FakeChatCompletions(options).start();
}

/** The SSE events of an answer, `[DONE]` last. */
function sseEvents(answer: FakeChatAnswer, body: Record<string, unknown>, requestId: string): string[] {
  const model = answer.model ?? String(body.model);
  const size = Math.max(1, answer.chunkSize ?? 6);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id: `chatcmpl-${requestId}`, object: 'chat.completion.chunk', created: 1_700_000_000, model, choices, ...extra })}\n\n`;
  const delta = (d: Record<string, unknown>, finish: string | null = null) => chunk([{ index: 0, delta: d, finish_reason: finish }]);
  const out = [delta({ role: 'assistant', content: '' })];
  for (const piece of pieces(answer.text ?? '', size)) out.push(delta({ content: piece }));
  (answer.toolCalls ?? []).forEach((call, i) => {
    const id = call.id === null ? undefined : (call.id ?? `call_${i + 1}`);
    out.push(delta({ tool_calls: [{ index: i, ...(id ? { id } : {}), type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of pieces(call.rawArguments ?? JSON.stringify(call.arguments), size)) out.push(delta({ tool_calls: [{ index: i, function: { arguments: piece } }] }));
  });
  out.push(delta({}, answer.finishReason ?? ((answer.toolCalls ?? []).length > 0 ? 'tool_calls' : 'stop')));
  const options = body.stream_options as { include_usage?: unknown } | undefined;
  if (options?.include_usage === true) {
    const usage = answer.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
    out.push(
      chunk([], {
        usage: {
          prompt_tokens: usage.prompt_tokens,
          completion_tokens: usage.completion_tokens,
          total_tokens: usage.prompt_tokens + usage.completion_tokens,
          ...(usage.cached_tokens !== undefined ? { prompt_tokens_details: { cached_tokens: usage.cached_tokens } } : {}),
        },
      }),
    );
  }
  out.push('data: [DONE]\n\n');
  return out;
}

function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function sendError(res: ServerResponse, step: FakeChatHttpError, requestId: string): void {
  const defaults = DEFAULT_CODES[step.status] ?? { type: step.status >= 500 ? 'server_error' : 'invalid_request_error', code: null };
  const body = { error: { message: step.message ?? `fake error ${step.status}`, type: step.type ?? defaults.type, param: null, code: step.code ?? defaults.code } };
  res.writeHead(step.status, { 'content-type': 'application/json', 'x-request-id': requestId, ...step.headers });
  res.end(JSON.stringify(body));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
