import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoopbackServer } from './loopback-server';

/**
 * A loopback stand-in for Anthropic's Messages API (`POST /v1/messages`), for tests that drive the
 * real SDK over real HTTP. It answers from a script — a queue of steps, each a response or a fault —
 * and streams Server-Sent Events the way the API does: `message_start`, `ping`, per block
 * `content_block_start` / `content_block_delta` (text and tool input split into several chunks) /
 * `content_block_stop`, then `message_delta` (stop reason, usage) and `message_stop`.
 *
 * Every request it receives is recorded (headers and parsed body), so tests can assert what the
 * client sent — including that the API key went in `x-api-key`.
 *
 * With `promptCache`, it honours `cache_control` breakpoints the way the API bills them: the prompt
 * (tools, system, message blocks, in that order) is cut into blocks with a token count each
 * (`fakeTokens`: a quarter of the block's JSON length); a breakpoint writes its prefix to the cache,
 * and a later request reads the longest cached prefix that ends at one of its breakpoints or up to
 * 20 blocks before one. `POST /v1/messages/count_tokens` answers with the same count. Thinking
 * blocks it sends carry the signature `fakeSignature(thinking)`, and a request that sends one back
 * changed gets the API's 400.
 */

export interface FakeUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

export type FakeContentBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; /** Default: fakeSignature(thinking). */ signature?: string }
  | { type: 'redacted_thinking'; data: string }
  | {
      type: 'tool_use';
      id?: string;
      name: string;
      input: Record<string, unknown>;
      /** Streamed instead of JSON.stringify(input), to send broken tool input. */
      rawInputJson?: string;
    };

/** A successful answer. Streamed when the request asks for `stream: true`, JSON otherwise. */
export interface FakeResponse {
  kind: 'response';
  content: FakeContentBlock[];
  /** Default: `tool_use` when a tool_use block is present, else `end_turn`. */
  stopReason?: string;
  usage?: FakeUsage;
  /** Default: the model the request named. */
  model?: string;
  id?: string;
  /** Characters per text_delta / input_json_delta chunk (default 7). */
  chunkSize?: number;
  /** Pause between SSE events, to make streaming observable (default 0). */
  eventDelayMs?: number;
  /** Extra response headers. */
  headers?: Record<string, string>;
}

/** An HTTP error answer with the API's error body `{type:'error', error:{type, message}}`. */
export interface FakeHttpError {
  kind: 'http_error';
  status: number;
  /** Default derived from the status (`rate_limit_error`, `overloaded_error`, ...). */
  errorType?: string;
  message?: string;
  headers?: Record<string, string>;
  /** Replaces the whole JSON body (or sends this text as is when a string). */
  body?: unknown;
}

/** Faults that happen while streaming `response` (default: a short text answer). */
interface StreamFaultBase {
  response?: Omit<FakeResponse, 'kind'>;
  /** How many SSE events of `response` are sent before the fault (default 3). */
  afterEvents?: number;
}

/** Destroys the socket mid-stream (a connection reset as the client sees it). */
export interface FakeReset extends StreamFaultBase {
  kind: 'reset';
  /** Destroy the socket before any response bytes, headers included. */
  beforeHeaders?: boolean;
}

/**
 * Sends headers and `afterEvents` events (default 1), then nothing, ever: the client must time out
 * or abort. With `beforeHeaders`, not even the headers are sent.
 */
export interface FakeHang extends StreamFaultBase {
  kind: 'hang';
  beforeHeaders?: boolean;
}

/** Sends a data line that is not JSON, then ends the response. */
export interface FakeMalformed extends StreamFaultBase {
  kind: 'malformed';
  /** The garbage `data:` payload (default `{this is not json`). */
  data?: string;
}

/** Sends an `event: error` SSE event (as the API does for mid-stream overloads), then ends. */
export interface FakeStreamError extends StreamFaultBase {
  kind: 'stream_error';
  errorType: string;
  message?: string;
}

/** Ends the response cleanly after `afterEvents` events, without `message_stop`. */
export interface FakeTruncated extends StreamFaultBase {
  kind: 'truncated';
}

export type FakeStep = FakeResponse | FakeHttpError | FakeReset | FakeHang | FakeMalformed | FakeStreamError | FakeTruncated;

/** A Messages API request body as received (fields the fake reads, plus whatever else was sent). */
export interface RequestBody {
  model?: unknown;
  max_tokens?: unknown;
  messages?: unknown;
  stream?: unknown;
  [field: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** Parsed JSON body (undefined when it was not a JSON object). */
  body: RequestBody | undefined;
  rawBody: string;
}

export interface FakeMessagesApiOptions {
  /**
   * When set, requests that do not carry this key get a 401 authentication_error. The key is
   * accepted in `x-api-key` or as `Authorization: Bearer <key>` (what SDK 1.x sends for `apiKey`).
   */
  apiKey?: string;
  /** Answers requests when the queue is empty (default: a 500 saying the script ran out). */
  fallback?: (request: RecordedRequest, index: number) => FakeStep;
  /** Bill cache writes and reads by the request's breakpoints (overrides the steps' input usage). */
  promptCache?: boolean;
  /** Wait this long (ms) before answering each messages request, as a remote model thinks (default 0). */
  latencyMs?: number;
  /**
   * Keep every request in `requests` / `countRequests` (default true). A benchmark sending thousands
   * turns it off and reads the tallies in `received` instead.
   */
  record?: boolean;
}

/** A request value less the prompt-cache breakpoints (`cache_control`), to compare with a stored conversation. */
export function withoutCacheControl<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (key, v: unknown) => (key === 'cache_control' ? undefined : v))) as T;
}

/** The signature the fake gives a thinking text (and checks when it comes back). */
export function fakeSignature(thinking: string): string {
  return `sig_${createHash('sha256').update(thinking).digest('base64')}`;
}

/** The fake's token count of a JSON value: a quarter of its length, rounded up. */
export function fakeTokens(value: unknown): number {
  return Math.ceil(JSON.stringify(value).length / 4);
}

/** The prompt's blocks in cache order (tools, system, message blocks), each without its cache_control. */
export function promptBlocks(body: RequestBody): Array<{ block: unknown; breakpoint: boolean }> {
  const out: Array<{ block: unknown; breakpoint: boolean }> = [];
  const add = (role: string | undefined, value: unknown) => {
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const { cache_control, ...rest } = value as Record<string, unknown>;
      out.push({ block: role ? { role, ...rest } : rest, breakpoint: cache_control !== undefined && cache_control !== null });
    } else out.push({ block: role ? { role, value } : value, breakpoint: false });
  };
  if (Array.isArray(body.tools)) for (const tool of body.tools) add(undefined, tool);
  if (typeof body.system === 'string') add(undefined, { system: body.system });
  else if (Array.isArray(body.system)) for (const block of body.system) add(undefined, block);
  if (Array.isArray(body.messages)) {
    for (const message of body.messages as Array<{ role?: string; content?: unknown }>) {
      if (Array.isArray(message.content)) for (const block of message.content) add(message.role, block);
      else add(message.role, { type: 'text', text: message.content });
    }
  }
  return out;
}

/** The prompt's input tokens as the fake counts them (what count_tokens answers). */
export function fakePromptTokens(body: RequestBody): number {
  let total = 0;
  for (const { block } of promptBlocks(body)) total += fakeTokens(block);
  return total;
}

const DEFAULT_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

export class FakeMessagesApi {
  readonly requests: RecordedRequest[] = [];
  /** Token-counting requests (`POST /v1/messages/count_tokens`), kept apart from `requests`. */
  readonly countRequests: RecordedRequest[] = [];
  /** Billed usage per answered messages request, in order (with `promptCache`). */
  readonly billed: Array<{ input_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number }> = [];
  /** Requests received, recorded or not (messages requests and token counts), and the connections they came on. */
  readonly received = { messages: 0, countTokens: 0, connections: 0 };
  /** When set, `count_tokens` requests get this HTTP error (to test the fallback). */
  countTokensFault: FakeHttpError | undefined;
  private readonly queue: FakeStep[] = [];
  /** Cached prefixes by hash (model + blocks up to a breakpoint). */
  private readonly cache = new Set<string>();
  private server: LoopbackServer | undefined;
  private port = 0;
  private counter = 0;

  constructor(private readonly options: FakeMessagesApiOptions = {}) {}

  /** Base URL to give the SDK (`baseURL`), e.g. `http://127.0.0.1:41234`. */
  get url(): string {
    if (!this.server) throw new Error('FakeMessagesApi is not started');
    return `http://127.0.0.1:${this.port}`;
  }

  /** Steps not consumed yet. */
  get pending(): number {
    return this.queue.length;
  }

  async start(): Promise<this> {
    if (this.server) return this;
    this.server = await LoopbackServer.listen(
      (req, res) => void this.handle(req, res),
      () => (this.received.connections += 1),
    );
    this.port = this.server.port;
    return this;
  }

  /** Closes the server, dropping hung and kept-alive connections. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await server?.stop();
  }

  enqueue(...steps: FakeStep[]): this {
    this.queue.push(...steps);
    return this;
  }

  /** Forgets queued steps, recorded requests and the prompt cache. */
  reset(): this {
    this.queue.length = 0;
    this.requests.length = 0;
    this.countRequests.length = 0;
    this.billed.length = 0;
    this.cache.clear();
    this.countTokensFault = undefined;
    this.counter = 0;
    this.received.messages = 0;
    this.received.countTokens = 0;
    this.received.connections = 0;
    return this;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    let body: RequestBody | undefined;
    try {
      const parsed: unknown = rawBody ? JSON.parse(rawBody) : undefined;
      body = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as RequestBody) : undefined;
    } catch {
      body = undefined;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
    }
    const recorded: RecordedRequest = { method: req.method ?? '', path: (req.url ?? '').split('?')[0], headers, body, rawBody };
    if (recorded.method === 'POST' && recorded.path === '/v1/messages/count_tokens') {
      const index = this.received.countTokens++;
      if (this.options.record !== false) this.countRequests.push(recorded);
      if (this.options.apiKey !== undefined && apiKeyOf(recorded) !== this.options.apiKey) {
        return sendError(res, { kind: 'http_error', status: 401, message: 'invalid x-api-key' });
      }
      if (this.countTokensFault) return sendError(res, this.countTokensFault);
      if (!body || typeof body.model !== 'string' || !Array.isArray(body.messages)) return sendError(res, { kind: 'http_error', status: 400, message: 'model and messages are required' });
      return sendJson(res, 200, { input_tokens: fakePromptTokens(body) }, { 'request-id': `req_fake_count_${index + 1}` });
    }
    const index = this.received.messages++;
    if (this.options.record !== false) this.requests.push(recorded);
    if (recorded.method !== 'POST' || recorded.path !== '/v1/messages') {
      return sendError(res, { kind: 'http_error', status: 404, message: `Not found: ${recorded.method} ${recorded.path}` });
    }
    if (this.options.apiKey !== undefined && apiKeyOf(recorded) !== this.options.apiKey) {
      return sendError(res, { kind: 'http_error', status: 401, message: 'invalid x-api-key' });
    }
    const invalid = validateBody(body);
    if (invalid !== undefined || body === undefined) return sendError(res, { kind: 'http_error', status: 400, message: invalid ?? 'invalid body' });

    let step: FakeStep =
      this.queue.shift() ??
      this.options.fallback?.(recorded, index) ?? { kind: 'http_error', status: 500, message: `fake Messages API: no scripted step for request #${index + 1}` };
    if (this.options.promptCache && step.kind === 'response') {
      const billed = this.bill(body);
      this.billed.push(billed);
      step = { ...step, usage: { ...step.usage, ...billed } };
    }
    const requestId = `req_fake_${++this.counter}`;
    const stream = body.stream === true;
    if (this.options.latencyMs) await sleep(this.options.latencyMs);

    switch (step.kind) {
      case 'response':
        return stream ? this.stream(res, step, body, requestId) : sendJson(res, 200, toMessage(step, body, requestId), { 'request-id': requestId, ...step.headers });
      case 'http_error':
        return sendError(res, step, requestId);
      case 'reset':
      case 'hang':
      case 'malformed':
      case 'stream_error':
      case 'truncated':
        if (!stream) return this.nonStreamingFault(req, res, step, requestId);
        return this.streamFault(req, res, step, body, requestId);
      default: {
        const never: never = step;
        throw new Error(`unknown step ${JSON.stringify(never)}`);
      }
    }
  }

  /** Input usage of a request under the cache: reads the longest cached prefix, writes up to the last breakpoint. */
  private bill(body: RequestBody): { input_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number } {
    const blocks = promptBlocks(body);
    const hashes: string[] = [];
    const cumulative: number[] = [];
    let hash = createHash('sha256').update(String(body.model)).digest('hex');
    let sum = 0;
    for (const { block } of blocks) {
      hash = createHash('sha256').update(hash).update(JSON.stringify(block)).digest('hex');
      sum += fakeTokens(block);
      hashes.push(hash);
      cumulative.push(sum);
    }
    const breakpoints = blocks.flatMap((b, i) => (b.breakpoint ? [i] : []));
    let read = 0;
    for (const bp of breakpoints) {
      for (let j = bp; j >= Math.max(0, bp - 20); j--) {
        if (this.cache.has(hashes[j])) {
          read = Math.max(read, cumulative[j]);
          break;
        }
      }
    }
    const last = breakpoints.length > 0 ? cumulative[breakpoints[breakpoints.length - 1]] : 0;
    const write = Math.max(0, last - read);
    for (const bp of breakpoints) this.cache.add(hashes[bp]);
    return { input_tokens: sum - read - write, cache_creation_input_tokens: write, cache_read_input_tokens: read };
  }

  private async stream(res: ServerResponse, step: FakeResponse, body: RequestBody, requestId: string): Promise<void> {
    startSse(res, requestId, step.headers);
    for (const event of sseEvents(step, body, requestId)) {
      if (res.destroyed) return;
      res.write(event);
      if (step.eventDelayMs) await sleep(step.eventDelayMs);
    }
    res.end();
  }

  private async streamFault(
    req: IncomingMessage,
    res: ServerResponse,
    step: FakeReset | FakeHang | FakeMalformed | FakeStreamError | FakeTruncated,
    body: RequestBody,
    requestId: string,
  ): Promise<void> {
    if (step.kind === 'hang' && step.beforeHeaders) return; // never answer; stop() destroys the socket
    if (step.kind === 'reset' && step.beforeHeaders) {
      req.socket.destroy();
      return;
    }
    const response: FakeResponse = { kind: 'response', content: [{ type: 'text', text: 'Hello from the fake Messages API.' }], ...step.response };
    const events = sseEvents(response, body, requestId);
    const count = Math.min(step.afterEvents ?? (step.kind === 'hang' ? 1 : 3), events.length);
    startSse(res, requestId, response.headers);
    for (const event of events.slice(0, count)) {
      res.write(event);
      if (response.eventDelayMs) await sleep(response.eventDelayMs);
    }
    switch (step.kind) {
      case 'reset':
        // Let the written events reach the client before the reset, so it fails mid-stream.
        await sleep(20);
        req.socket.destroy();
        return;
      case 'hang':
        return;
      case 'malformed':
        res.write(`event: content_block_delta\ndata: ${step.data ?? '{this is not json'}\n\n`);
        res.end();
        return;
      case 'stream_error':
        res.write(sse('error', { type: 'error', error: { type: step.errorType, message: step.message ?? defaultMessage(step.errorType) } }));
        res.end();
        return;
      case 'truncated':
        res.end();
        return;
    }
  }

  private nonStreamingFault(
    req: IncomingMessage,
    res: ServerResponse,
    step: FakeReset | FakeHang | FakeMalformed | FakeStreamError | FakeTruncated,
    requestId: string,
  ): void {
    switch (step.kind) {
      case 'reset':
        req.socket.destroy();
        return;
      case 'hang':
        if (!step.beforeHeaders) res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId });
        return;
      case 'malformed':
      case 'truncated':
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId });
        res.end(step.kind === 'malformed' ? (step.data ?? '{this is not json') : '{"id": "msg_');
        return;
      case 'stream_error':
        return sendError(res, { kind: 'http_error', status: statusForErrorType(step.errorType), errorType: step.errorType, message: step.message }, requestId);
    }
  }
}

/** The API key a request carried: `x-api-key`, else the bearer token of `Authorization`. */
export function apiKeyOf(request: RecordedRequest): string | undefined {
  const bearer = /^Bearer\s+(.+)$/i.exec(request.headers['authorization'] ?? '');
  return request.headers['x-api-key'] ?? bearer?.[1];
}

/** Starts a fake server (call `stop()` when done). */
export async function startFakeMessagesApi(options: FakeMessagesApiOptions = {}): Promise<FakeMessagesApi> {
  return new FakeMessagesApi(options).start();
}

// Step builders, so tests read as a script.

export function textStep(text: string, extra: Partial<Omit<FakeResponse, 'kind' | 'content'>> = {}): FakeResponse {
  return { kind: 'response', content: [{ type: 'text', text }], ...extra };
}

export function toolUseStep(
  name: string,
  input: Record<string, unknown>,
  extra: Partial<Omit<FakeResponse, 'kind' | 'content'>> & { text?: string; id?: string } = {},
): FakeResponse {
  const { text, id, ...rest } = extra;
  const content: FakeContentBlock[] = [];
  if (text) content.push({ type: 'text', text });
  content.push({ type: 'tool_use', id, name, input });
  return { kind: 'response', content, ...rest };
}

export function httpErrorStep(status: number, extra: Omit<FakeHttpError, 'kind' | 'status'> = {}): FakeHttpError {
  return { kind: 'http_error', status, ...extra };
}

/** The SSE frames of a response, in the order the API sends them. Exported for tests of parsers. */
export function sseEvents(step: FakeResponse, requestBody?: RequestBody, requestId = 'req_fake'): string[] {
  const usage = step.usage ?? {};
  const model = step.model ?? (typeof requestBody?.model === 'string' ? requestBody.model : 'claude-fake');
  const chunkSize = Math.max(1, step.chunkSize ?? 7);
  const events: string[] = [];
  events.push(
    sse('message_start', {
      type: 'message_start',
      message: {
        id: step.id ?? `msg_${requestId}`,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: usage.input_tokens ?? 10,
          output_tokens: 1,
          cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
          cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
        },
      },
    }),
  );
  events.push(sse('ping', { type: 'ping' }));
  step.content.forEach((block, index) => {
    if (block.type === 'thinking') {
      events.push(sse('content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
      for (const piece of chunks(block.thinking, chunkSize)) {
        events.push(sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: piece } }));
      }
      events.push(sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature ?? fakeSignature(block.thinking) } }));
    } else if (block.type === 'redacted_thinking') {
      events.push(sse('content_block_start', { type: 'content_block_start', index, content_block: { type: 'redacted_thinking', data: block.data } }));
    } else if (block.type === 'text') {
      events.push(sse('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }));
      for (const piece of chunks(block.text, chunkSize)) {
        events.push(sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } }));
      }
    } else {
      const id = block.id ?? `toolu_fake_${requestId}_${index}`;
      events.push(sse('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id, name: block.name, input: {} } }));
      // The API opens tool input with an empty partial_json, then sends the JSON in pieces.
      for (const piece of ['', ...chunks(block.rawInputJson ?? JSON.stringify(block.input), chunkSize)]) {
        events.push(sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } }));
      }
    }
    events.push(sse('content_block_stop', { type: 'content_block_stop', index }));
    if (index === 0) events.push(sse('ping', { type: 'ping' }));
  });
  events.push(
    sse('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReasonOf(step), stop_sequence: null },
      usage: { output_tokens: usage.output_tokens ?? 5 },
    }),
  );
  events.push(sse('message_stop', { type: 'message_stop' }));
  return events;
}

function toMessage(step: FakeResponse, body: RequestBody, requestId: string): Record<string, unknown> {
  const usage = step.usage ?? {};
  return {
    id: step.id ?? `msg_${requestId}`,
    type: 'message',
    role: 'assistant',
    model: step.model ?? (typeof body.model === 'string' ? body.model : 'claude-fake'),
    content: step.content.map((block, index) => {
      if (block.type === 'thinking') return { type: 'thinking', thinking: block.thinking, signature: block.signature ?? fakeSignature(block.thinking) };
      if (block.type === 'redacted_thinking') return block;
      return block.type === 'text' ? { type: 'text', text: block.text } : { type: 'tool_use', id: block.id ?? `toolu_fake_${requestId}_${index}`, name: block.name, input: block.input };
    }),
    stop_reason: stopReasonOf(step),
    stop_sequence: null,
    usage: {
      input_tokens: usage.input_tokens ?? 10,
      output_tokens: usage.output_tokens ?? 5,
      cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
      cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
    },
  };
}

function stopReasonOf(step: FakeResponse): string {
  return step.stopReason ?? (step.content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
}

function validateBody(body: RequestBody | undefined): string | undefined {
  if (!body || typeof body !== 'object') return 'request body must be a JSON object';
  if (typeof body.model !== 'string' || !body.model) return 'model: field required';
  if (typeof body.max_tokens !== 'number') return 'max_tokens: field required';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  let breakpoints = 0;
  for (const { block, breakpoint } of promptBlocks(body)) {
    if (breakpoint) breakpoints += 1;
    const b = block as { type?: unknown; thinking?: unknown; signature?: unknown };
    if (b.type === 'thinking' && (typeof b.thinking !== 'string' || b.signature !== fakeSignature(b.thinking))) {
      return 'messages: Invalid `signature` in `thinking` block';
    }
  }
  if (breakpoints > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`;
  const pairing = toolPairingProblem(body.messages as WireMessage[], Array.isArray(body.tools) && body.tools.length > 0);
  if (pairing) return pairing;
  const thinking = body.thinking as { type?: unknown; budget_tokens?: unknown } | undefined;
  if (thinking?.type === 'enabled' && !(typeof thinking.budget_tokens === 'number' && thinking.budget_tokens < (body.max_tokens as number))) {
    return '`max_tokens` must be greater than `thinking.budget_tokens`';
  }
  return undefined;
}

type WireMessage = { role?: unknown; content?: unknown };
type WireBlock = { type?: unknown; id?: unknown; tool_use_id?: unknown };

/**
 * The API's rules for tool blocks, as its 400s state them: a request holding tool_use or tool_result
 * blocks defines tools (any: not necessarily the ones used earlier), every tool_use of an assistant
 * message is answered by a tool_result in the next message, which holds no other tool_result and
 * puts them before its other blocks.
 */
function toolPairingProblem(messages: WireMessage[], hasTools: boolean): string | undefined {
  const blocks = (m: WireMessage | undefined): WireBlock[] => (m && Array.isArray(m.content) ? (m.content as WireBlock[]) : []);
  const hasToolBlocks = messages.some((m) => blocks(m).some((b) => b.type === 'tool_use' || b.type === 'tool_result'));
  if (hasToolBlocks && !hasTools) return 'Requests which include `tool_use` or `tool_result` blocks must define tools.';
  for (const [i, message] of messages.entries()) {
    const results = blocks(message).filter((b) => b.type === 'tool_result');
    const firstOther = blocks(message).findIndex((b) => b.type !== 'tool_result');
    if (results.length > 0 && firstOther >= 0 && firstOther < results.length) return `messages.${i}: tool_result blocks must come first in the content`;
    const asked = message.role === 'user' && i > 0 ? blocks(messages[i - 1]).filter((b) => b.type === 'tool_use').map((b) => b.id) : [];
    const stray = results.find((r) => !asked.includes(r.tool_use_id));
    if (stray) return `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(stray.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
    if (message.role !== 'assistant' || i === messages.length - 1) continue;
    const answered = blocks(messages[i + 1]).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id);
    const unanswered = blocks(message).find((b) => b.type === 'tool_use' && !answered.includes(b.id));
    if (unanswered) return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${String(unanswered.id)}`;
  }
  return undefined;
}

function startSse(res: ServerResponse, requestId: string, extra: Record<string, string> = {}): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': requestId,
    ...extra,
  });
  res.flushHeaders();
}

function sendError(res: ServerResponse, step: FakeHttpError, requestId = 'req_fake_error'): void {
  const errorType = step.errorType ?? DEFAULT_ERROR_TYPES[step.status] ?? (step.status >= 500 ? 'api_error' : 'invalid_request_error');
  const body = step.body ?? { type: 'error', error: { type: errorType, message: step.message ?? defaultMessage(errorType) }, request_id: requestId };
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(step.status, { 'content-type': 'application/json', 'request-id': requestId, ...step.headers });
  res.end(text);
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string>): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function chunks(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length > 0 ? out : [''];
}

function statusForErrorType(type: string): number {
  for (const [status, t] of Object.entries(DEFAULT_ERROR_TYPES)) if (t === type) return Number(status);
  return 500;
}

function defaultMessage(errorType: string): string {
  switch (errorType) {
    case 'overloaded_error':
      return 'Overloaded';
    case 'rate_limit_error':
      return 'Number of request tokens has exceeded your per-minute rate limit';
    case 'authentication_error':
      return 'invalid x-api-key';
    case 'api_error':
      return 'Internal server error';
    default:
      return errorType;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
