import { OpenAIModelProvider } from '../../../src/team/models/openai.provider';
import { ModelError, type ModelRequest } from '../../../src/team/models/model.port';
import { chatHttpError, chatText, chatToolCall, startFakeChatCompletions, type FakeChatCompletions, type FakeChatStep } from '../../support/fake-chat-completions';
import { waitFor } from '../../support/wait-for';
import { failureOf, modelProviderContract, type ModelProviderHarness } from './model-provider.contract';

// The real `openai` SDK, over real HTTP, against the loopback Chat Completions server.

const API_KEY = 'sk-openai-test-0123456789abcdef';

const makeAdapter = (baseURL: string, timeoutMs = 60_000) => new OpenAIModelProvider({ apiKey: API_KEY, baseURL, timeoutMs });

modelProviderContract('openai', async (): Promise<ModelProviderHarness> => {
  const api = await startFakeChatCompletions({ apiKey: API_KEY });
  const turn = (...steps: FakeChatStep[]) => {
    api.reset().enqueue(...steps);
    return { provider: makeAdapter(api.url), request: request({ messages: conversation() }) };
  };
  return {
    textTurn: () => ({
      ...turn(chatText('Hello there, this is a streamed answer.', { chunkSize: 5 })),
      expectedContent: [{ type: 'text', text: 'Hello there, this is a streamed answer.' }],
    }),
    toolTurn: () => ({
      ...turn(chatToolCall('write_file', { path: 'a.txt', content: 'Hello\n' }, { id: 'call_01', text: 'Writing the file.', chunkSize: 4 })),
      expectedContent: [
        { type: 'text', text: 'Writing the file.' },
        { type: 'tool_use', id: 'call_01', name: 'write_file', input: { path: 'a.txt', content: 'Hello\n' } },
      ],
    }),
    hangingTurn: () => ({
      ...turn({ kind: 'hang', afterEvents: 2 }),
      underWay: async () => {
        await waitFor('the request to reach the server', async () => api.requests.length > 0, 20_000, 10);
      },
    }),
    cleanup: () => api.stop(),
  };
});

/** A turn in the middle of a conversation: a tool call and its failed result are in the history. */
function conversation(): ModelRequest['messages'] {
  return [
    { role: 'user', content: 'Goal:\nSay hello' },
    { role: 'assistant', content: [{ type: 'text', text: 'Looking first.' }, { type: 'tool_use', id: 'call_9', name: 'write_file', input: { path: 'a', content: 'x' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_9', content: 'no such file', is_error: true }, { type: 'text', text: 'Iteration 2' }] },
  ];
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    runId: 'run-1',
    role: 'executor',
    model: 'gpt-4.1-mini',
    system: 'You are the Executor.',
    messages: [{ role: 'user', content: 'Goal:\nSay hello' }],
    tools: [
      { name: 'write_file', description: 'Write a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } },
      { name: 'read_file', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } },
    ],
    maxTokens: 1024,
    ...overrides,
  };
}

const failure = (promise: Promise<unknown>): Promise<ModelError> => failureOf(promise, API_KEY);

describe('OpenAIModelProvider against the loopback Chat Completions server', () => {
  let api: FakeChatCompletions;
  let provider: OpenAIModelProvider;

  beforeAll(async () => {
    api = await startFakeChatCompletions({ apiKey: API_KEY });
  });
  afterAll(() => api.stop());
  beforeEach(() => {
    api.reset();
    provider = makeAdapter(api.url, 2000);
  });

  it('names its endpoint by scheme, host and port, and OpenAI\'s own when no base URL is given', () => {
    expect(provider.name).toBe('openai');
    expect(provider.endpoint).toBe(api.endpoint);
    expect(new OpenAIModelProvider({ apiKey: API_KEY }).endpoint).toBe('https://api.openai.com:443');
  });

  it('sends the key as a bearer token and the conversation in Chat Completions form, tools in name order, without changing the caller request', async () => {
    api.enqueue(chatText('ok'));
    const req = request({ messages: conversation(), signal: new AbortController().signal, onTextDelta: () => undefined });
    const before = JSON.stringify(req);
    await provider.complete(req);

    expect(JSON.stringify(req)).toBe(before);
    expect(api.requests).toHaveLength(1);
    const sent = api.requests[0];
    expect(sent.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(sent.body).toEqual({
      model: 'gpt-4.1-mini',
      max_tokens: 1024,
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: 'system', content: 'You are the Executor.' },
        { role: 'user', content: 'Goal:\nSay hello' },
        { role: 'assistant', content: 'Looking first.', tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'write_file', arguments: '{"content":"x","path":"a"}' } }] },
        { role: 'tool', tool_call_id: 'call_9', content: 'Error: no such file' },
        { role: 'user', content: 'Iteration 2' },
      ],
      tools: [
        { type: 'function', function: { name: 'read_file', description: 'Read a file', parameters: req.tools[1].input_schema } },
        { type: 'function', function: { name: 'write_file', description: 'Write a file', parameters: req.tools[0].input_schema } },
      ],
    });
  });

  it('sends no Authorization header without a key (a local server needs none)', async () => {
    const open = await startFakeChatCompletions();
    try {
      open.enqueue(chatText('hi'));
      const keyless = new OpenAIModelProvider({ baseURL: open.url, timeoutMs: 2000 });
      expect((await keyless.complete(request())).content).toEqual([{ type: 'text', text: 'hi' }]);
      expect(open.requests[0].headers.authorization).toBeUndefined();
    } finally {
      await open.stop();
    }
  });

  it('reports usage from the include_usage chunk: cached prompt tokens as cache reads, the rest full-rate', async () => {
    api.enqueue(chatToolCall('write_file', { path: 'x' }, { usage: { prompt_tokens: 120, completion_tokens: 30, cached_tokens: 100 }, model: 'gpt-4.1-mini-2025-04-14' }));
    const response = await provider.complete(request());
    expect(response.usage).toEqual({ inputTokens: 20, outputTokens: 30, cacheReadTokens: 100 });
    expect(response.model).toBe('gpt-4.1-mini-2025-04-14');
    expect(response.requestId).toBe('req_chat_1');

    api.enqueue(chatText('plain', { usage: { prompt_tokens: 7, completion_tokens: 2 } }));
    expect((await provider.complete(request())).usage).toEqual({ inputTokens: 7, outputTokens: 2 });
  });

  it('assembles several tool calls from their argument pieces; a call sent without an id gets one', async () => {
    api.enqueue({
      kind: 'answer',
      toolCalls: [
        { id: 'call_a', name: 'read_file', arguments: { path: 'a.txt' } },
        { id: null, name: 'write_file', arguments: { path: 'b.txt', nested: { list: [1, 2] } } },
      ],
      chunkSize: 3,
      // Some servers finish a turn with tool calls as `stop`.
      finishReason: 'stop',
    });
    const response = await provider.complete(request());
    expect(response.stopReason).toBe('tool_use');
    expect(response.content).toEqual([
      { type: 'tool_use', id: 'call_a', name: 'read_file', input: { path: 'a.txt' } },
      { type: 'tool_use', id: expect.stringMatching(/^call_[0-9a-f-]{36}$/), name: 'write_file', input: { path: 'b.txt', nested: { list: [1, 2] } } },
    ]);
  });

  it('maps finish reasons: length is max_tokens, content_filter a refusal', async () => {
    api.enqueue(chatText('cut', { finishReason: 'length' }), chatText('no', { finishReason: 'content_filter' }));
    expect((await provider.complete(request())).stopReason).toBe('max_tokens');
    expect((await provider.complete(request())).stopReason).toBe('refusal');
  });

  it('a summary request carries no tools', async () => {
    api.enqueue(chatText('the summary'));
    await provider.complete(request({ purpose: 'summary' }));
    expect(api.requests[0].body!.tools).toBeUndefined();
  });

  it('maps 429 with retry-after to rate_limited with retryAfterMs, and does not retry by itself', async () => {
    api.enqueue(chatHttpError(429, { headers: { 'retry-after': '7' } }));
    const error = await failure(provider.complete(request()));
    expect(error.kind).toBe('rate_limited');
    expect(error.details).toMatchObject({ status: 429, retryAfterMs: 7000, requestId: 'req_chat_1' });
    expect(error.transient).toBe(true);
    expect(api.requests).toHaveLength(1);
  });

  it('maps a 429 for an exhausted quota to permission: waiting does not end it', async () => {
    api.enqueue(chatHttpError(429, { code: 'insufficient_quota', type: 'insufficient_quota', message: 'You exceeded your current quota' }));
    const error = await failure(provider.complete(request()));
    expect(error.kind).toBe('permission');
    expect(error.transient).toBe(false);
  });

  it.each([
    [500, 'server'],
    [502, 'server'],
    [503, 'server'],
    [529, 'overloaded'],
    [401, 'authentication'],
    [403, 'permission'],
    [404, 'not_found'],
    [408, 'timeout'],
    [422, 'invalid_request'],
  ])('maps HTTP %i to %s', async (status, kind) => {
    api.enqueue(chatHttpError(status));
    const error = await failure(provider.complete(request()));
    expect(error.kind).toBe(kind);
    expect(error.details.status).toBe(status);
  });

  it('maps a 503 saying the server is overloaded to overloaded, with its retry-after', async () => {
    api.enqueue(chatHttpError(503, { message: 'The engine is currently overloaded, please try again later', headers: { 'retry-after-ms': '1500' } }));
    const error = await failure(provider.complete(request()));
    expect(error.kind).toBe('overloaded');
    expect(error.details.retryAfterMs).toBe(1500);
  });

  it('maps context-length errors (OpenAI\'s code, or a compatible server\'s words) to context_too_long, other 400s to invalid_request', async () => {
    api.enqueue(
      chatHttpError(400, { code: 'context_length_exceeded', message: "This model's maximum context length is 128000 tokens." }),
      chatHttpError(400, { message: 'the request exceeds the available context size, try increasing it' }),
      chatHttpError(400, { message: "Invalid 'messages[2].tool_call_id'" }),
    );
    expect((await failure(provider.complete(request()))).kind).toBe('context_too_long');
    expect((await failure(provider.complete(request()))).kind).toBe('context_too_long');
    const invalid = await failure(provider.complete(request()));
    expect(invalid.kind).toBe('invalid_request');
    expect(invalid.transient).toBe(false);
  });

  it('maps a wrong key (401) without echoing it', async () => {
    const wrong = new OpenAIModelProvider({ apiKey: 'sk-openai-wrong-key-zzzzzzzz', baseURL: api.url, timeoutMs: 2000 });
    const error = await failure(wrong.complete(request()));
    expect(error.kind).toBe('authentication');
    expect(error.message).not.toContain('sk-openai-wrong-key-zzzzzzzz');
  });

  it('a server that echoes the key in its error message: the error carries [redacted] instead', async () => {
    api.enqueue(chatHttpError(400, { message: `Invalid request for key ${API_KEY}` }));
    const error = await failure(provider.complete(request()));
    expect(error.message).toContain('Invalid request for key [redacted]');
  });

  it('maps an error inside the stream to server, an overloaded one to overloaded', async () => {
    api.enqueue({ kind: 'stream_error', afterEvents: 3 }, { kind: 'stream_error', error: { message: 'Model is overloaded', type: 'server_error' } });
    const server = await failure(provider.complete(request()));
    expect(server.kind).toBe('server');
    expect(server.details.status).toBeUndefined();
    expect((await failure(provider.complete(request()))).kind).toBe('overloaded');
  });

  it('maps unparseable data, a stream without a finish reason and broken tool arguments to malformed_response', async () => {
    api.enqueue(
      { kind: 'malformed', afterEvents: 3 },
      { kind: 'truncated', afterEvents: 3 },
      { kind: 'answer', toolCalls: [{ name: 'write_file', arguments: {}, rawArguments: '{"path": "x", ' }] },
    );
    for (let i = 0; i < 3; i++) expect((await failure(provider.complete(request()))).kind).toBe('malformed_response');
  });

  it('maps a connection reset mid-stream, and before the headers, to connection', async () => {
    api.enqueue({ kind: 'reset', afterEvents: 3 }, { kind: 'reset', beforeHeaders: true });
    const deltas: string[] = [];
    const mid = await failure(provider.complete(request({ onTextDelta: (t) => deltas.push(t) })));
    expect(mid.kind).toBe('connection');
    expect(mid.transient).toBe(true);
    expect(deltas.length).toBeGreaterThan(0);
    expect((await failure(provider.complete(request()))).kind).toBe('connection');
  });

  it('times out a stream that stops sending, and a server that never answers (idle timeout)', async () => {
    const quick = makeAdapter(api.url, 200);
    api.enqueue({ kind: 'hang', afterEvents: 2 }, { kind: 'hang', beforeHeaders: true });
    const idle = await failure(quick.complete(request()));
    expect(idle.kind).toBe('timeout');
    expect(idle.transient).toBe(true);
    expect((await failure(quick.complete(request()))).kind).toBe('timeout');
  });

  it('keeps a slow stream alive while chunks keep coming', async () => {
    const quick = makeAdapter(api.url, 150);
    api.enqueue(chatText('a slow but steady answer', { chunkSize: 2, eventDelayMs: 20 }));
    expect((await quick.complete(request())).content).toEqual([{ type: 'text', text: 'a slow but steady answer' }]);
  });

  it('maps a refused connection to connection', async () => {
    const closed = await startFakeChatCompletions();
    const url = closed.url;
    await closed.stop();
    expect((await failure(makeAdapter(url, 2000).complete(request()))).kind).toBe('connection');
  });

  it('says once per model that a model without a price row costs 0', async () => {
    const warnings: string[] = [];
    const local = new OpenAIModelProvider({ apiKey: API_KEY, baseURL: api.url, timeoutMs: 2000, logger: { warn: (m) => warnings.push(m) } });
    api.enqueue(chatText('a', { model: 'llama3.2:3b' }), chatText('b', { model: 'llama3.2:3b' }), chatText('c', { model: 'gpt-4.1-mini' }));
    for (let i = 0; i < 3; i++) await local.complete(request());
    expect(warnings).toEqual([`model 'llama3.2:3b' at ${api.endpoint} has no row in the price table: its calls count as costing 0 USD`]);
  });
});
