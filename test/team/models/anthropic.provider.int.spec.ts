import { AnthropicModelProvider } from '../../../src/team/models/anthropic.provider';
import { ModelError, type ModelRequest } from '../../../src/team/models/model.port';
import { apiKeyOf, FakeMessagesApi, httpErrorStep, startFakeMessagesApi, textStep, toolUseStep } from '../../support/fake-messages-api';
import { waitFor } from '../../support/wait-for';
import { failureOf, modelProviderContract, type ModelProviderHarness } from './model-provider.contract';

// The real SDK, over real HTTP, against the loopback fake of the Messages API.

const API_KEY = 'sk-ant-test-0123456789abcdef';

/** How this suite builds the adapter: against the fake server, with a timeout no test reaches. */
const makeAdapter = (baseURL: string, timeoutMs = 60_000) => new AnthropicModelProvider({ apiKey: API_KEY, baseURL, timeoutMs });

modelProviderContract('anthropic', async (): Promise<ModelProviderHarness> => {
  const api = await startFakeMessagesApi({ apiKey: API_KEY });
  // Each turn starts from an empty script, so a turn arranged but never sent leaves nothing behind.
  const turn = (...steps: Parameters<FakeMessagesApi['enqueue']>) => {
    api.reset().enqueue(...steps);
    return { provider: makeAdapter(api.url), request: request({ messages: conversation() }) };
  };
  return {
    textTurn: () => ({
      ...turn(textStep('Hello there, this is a streamed answer.', { chunkSize: 5, usage: { input_tokens: 42, output_tokens: 9 } })),
      expectedContent: [{ type: 'text', text: 'Hello there, this is a streamed answer.' }],
    }),
    toolTurn: () => ({
      ...turn(toolUseStep('write_file', { path: 'a.txt', content: 'Hello\n' }, { id: 'toolu_01', text: 'Writing the file.', chunkSize: 4 })),
      expectedContent: [
        { type: 'text', text: 'Writing the file.' },
        { type: 'tool_use', id: 'toolu_01', name: 'write_file', input: { path: 'a.txt', content: 'Hello\n' } },
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

/** A turn in the middle of a conversation: a tool call and its result are in the history. */
function conversation(): ModelRequest['messages'] {
  return [
    { role: 'user', content: 'Goal:\nSay hello' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'write_file', input: { path: 'a' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'no such file', is_error: true }] },
  ];
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    runId: 'run-1',
    role: 'executor',
    model: 'claude-sonnet-4-6',
    system: 'You are the Executor.',
    messages: [{ role: 'user', content: 'Goal:\nSay hello' }],
    tools: [{ name: 'write_file', description: 'Write a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }],
    maxTokens: 1024,
    ...overrides,
  };
}

const failure = (promise: Promise<unknown>): Promise<ModelError> => failureOf(promise, API_KEY);

describe('AnthropicModelProvider against the fake Messages API', () => {
  let api: FakeMessagesApi;
  let provider: AnthropicModelProvider;

  beforeAll(async () => {
    api = await startFakeMessagesApi({ apiKey: API_KEY });
  });
  afterAll(() => api.stop());
  beforeEach(() => {
    api.reset();
    provider = new AnthropicModelProvider({ apiKey: API_KEY, baseURL: api.url, timeoutMs: 2000 });
  });

  it('streams text deltas in order and assembles the text', async () => {
    api.enqueue(textStep('Hello there, this is a streamed answer.', { chunkSize: 5, usage: { input_tokens: 42, output_tokens: 9 } }));
    const deltas: string[] = [];
    const response = await provider.complete(request({ onTextDelta: (t) => deltas.push(t) }));

    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe('Hello there, this is a streamed answer.');
    expect(response.content).toEqual([{ type: 'text', text: 'Hello there, this is a streamed answer.' }]);
    expect(response.stopReason).toBe('end_turn');
    expect(response.model).toBe('claude-sonnet-4-6');
    expect(response.usage).toEqual({ inputTokens: 42, outputTokens: 9, cacheReadTokens: 0, cacheWriteTokens: 0 });
  });

  it('assembles tool_use input from streamed input_json_delta chunks, with usage including the cache', async () => {
    const input = { path: 'src/hello.ts', content: 'export const hello = "world";\n', nested: { list: [1, 2, 3] } };
    api.enqueue(
      toolUseStep('write_file', input, {
        id: 'toolu_01',
        text: 'Writing the file.',
        chunkSize: 4,
        usage: { input_tokens: 100, output_tokens: 30, cache_read_input_tokens: 80, cache_creation_input_tokens: 20 },
        model: 'claude-sonnet-4-5-20250929',
      }),
    );
    const response = await provider.complete(request());

    expect(response.content).toEqual([
      { type: 'text', text: 'Writing the file.' },
      { type: 'tool_use', id: 'toolu_01', name: 'write_file', input },
    ]);
    expect(response.stopReason).toBe('tool_use');
    expect(response.model).toBe('claude-sonnet-4-5-20250929');
    expect(response.usage).toEqual({ inputTokens: 100, outputTokens: 30, cacheReadTokens: 80, cacheWriteTokens: 20 });
  });

  it('sends the API key (as a bearer token, the SDK 1.x way) and the conversation as given, without changing the caller request', async () => {
    api.enqueue(textStep('ok'));
    const req = request({
      messages: [
        { role: 'user', content: 'Goal:\nSay hello' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'write_file', input: { path: 'a' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'no such file', is_error: true }] },
      ],
      signal: new AbortController().signal,
      onTextDelta: () => undefined,
    });
    const before = JSON.stringify(req);
    await provider.complete(req);

    expect(JSON.stringify(req)).toBe(before);
    expect(api.requests).toHaveLength(1);
    const sent = api.requests[0];
    // SDK 1.x sends `apiKey` as a bearer token (its ClientOptions docs say so), not in x-api-key.
    expect(sent.headers['authorization']).toBe(`Bearer ${API_KEY}`);
    expect(sent.headers['x-api-key']).toBeUndefined();
    expect(apiKeyOf(sent)).toBe(API_KEY);
    expect(sent.headers['anthropic-version']).toBeDefined();
    // As given, plus the prompt-cache breakpoints (test/team/models/anthropic-request.unit.spec.ts).
    const ephemeral = { cache_control: { type: 'ephemeral' } };
    expect(sent.body).toEqual({
      model: 'claude-sonnet-4-6',
      max_tokens: 1024,
      stream: true,
      system: [{ type: 'text', text: 'You are the Executor.', ...ephemeral }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Goal:\nSay hello', ...ephemeral }] },
        req.messages[1],
        { role: 'user', content: [{ ...(req.messages[2].content[0] as object), ...ephemeral }] },
      ],
      tools: [{ name: 'write_file', description: 'Write a file', input_schema: req.tools[0].input_schema, ...ephemeral }],
    });
  });

  it('maps 429 with retry-after to rate_limited with retryAfterMs', async () => {
    api.enqueue(httpErrorStep(429, { headers: { 'retry-after': '7' } }));
    const error = await failure(provider.complete(request()));
    expect(error.kind).toBe('rate_limited');
    expect(error.details).toMatchObject({ status: 429, retryAfterMs: 7000 });
    expect(error.details.requestId).toMatch(/^req_fake_/);
    expect(error.transient).toBe(true);
    expect(api.requests).toHaveLength(1); // the SDK did not retry
  });

  it('prefers retry-after-ms', async () => {
    api.enqueue(httpErrorStep(429, { headers: { 'retry-after-ms': '1500', 'retry-after': '9' } }));
    expect((await failure(provider.complete(request()))).details.retryAfterMs).toBe(1500);
  });

  it.each([
    [529, 'overloaded'],
    [500, 'server'],
    [503, 'server'],
    [401, 'authentication'],
    [403, 'permission'],
    [404, 'not_found'],
    [422, 'invalid_request'],
  ])('maps HTTP %i to %s', async (status, kind) => {
    api.enqueue(httpErrorStep(status));
    const error = await failure(provider.complete(request()));
    expect(error.kind).toBe(kind);
    expect(error.details.status).toBe(status);
  });

  it('maps a 400 prompt-too-long to context_too_long and other 400s to invalid_request', async () => {
    api.enqueue(httpErrorStep(400, { message: 'prompt is too long: 215034 tokens > 200000 maximum' }));
    expect((await failure(provider.complete(request()))).kind).toBe('context_too_long');
    api.enqueue(httpErrorStep(400, { message: 'messages.1.content.0.tool_use.input: Field required' }));
    const invalid = await failure(provider.complete(request()));
    expect(invalid.kind).toBe('invalid_request');
    expect(invalid.transient).toBe(false);
  });

  it('maps a wrong API key (401 from the server) without echoing the key', async () => {
    const wrong = new AnthropicModelProvider({ apiKey: 'sk-ant-wrong-key-zzzzzzzz', baseURL: api.url, timeoutMs: 2000 });
    const error = await failure(wrong.complete(request()));
    expect(error.kind).toBe('authentication');
    expect(error.message).not.toContain('sk-ant-wrong-key-zzzzzzzz');
  });

  it('maps an error event inside the stream by its error type', async () => {
    api.enqueue({ kind: 'stream_error', errorType: 'overloaded_error', afterEvents: 4 });
    const overloaded = await failure(provider.complete(request()));
    expect(overloaded.kind).toBe('overloaded');
    expect(overloaded.details.status).toBeUndefined();

    api.enqueue({ kind: 'stream_error', errorType: 'api_error' });
    expect((await failure(provider.complete(request()))).kind).toBe('server');
  });

  // Observed: the SDK's Stream throws the raw SyntaxError from JSON.parse for a bad data line.
  it('maps unparseable SSE data to malformed_response', async () => {
    api.enqueue({ kind: 'malformed', afterEvents: 3 });
    const error = await failure(provider.complete(request()));
    expect(error.kind).toBe('malformed_response');
  });

  // Observed: the SDK's raw stream just ends; it is the adapter that notices message_stop is missing.
  it('maps a stream that ends without message_stop to malformed_response', async () => {
    api.enqueue({ kind: 'truncated', afterEvents: 5 });
    expect((await failure(provider.complete(request()))).kind).toBe('malformed_response');
  });

  it('maps a tool input that is not valid JSON to malformed_response', async () => {
    api.enqueue({ kind: 'response', content: [{ type: 'tool_use', name: 'write_file', input: {}, rawInputJson: '{"path": "x", ' }] });
    expect((await failure(provider.complete(request()))).kind).toBe('malformed_response');
  });

  // Observed with SDK 1.12.0 on Node 20: a reset mid-stream surfaces from the stream iterator as a
  // bare `TypeError: terminated` (cause: undici SocketError UND_ERR_SOCKET), not an SDK error class.
  it('maps a connection reset mid-stream to connection', async () => {
    api.enqueue({ kind: 'reset', afterEvents: 4 });
    const deltas: string[] = [];
    const error = await failure(provider.complete(request({ onTextDelta: (t) => deltas.push(t) })));
    expect(error.kind).toBe('connection');
    expect(deltas.length).toBeGreaterThan(0); // it failed mid-stream, after text had arrived
    expect(error.transient).toBe(true);
  });

  it('maps a reset right after the headers to connection', async () => {
    api.enqueue({ kind: 'reset', afterEvents: 0 });
    expect((await failure(provider.complete(request()))).kind).toBe('connection');
  });

  it('maps a reset before the headers (the SDK throws APIConnectionError) to connection', async () => {
    api.enqueue({ kind: 'reset', beforeHeaders: true });
    expect((await failure(provider.complete(request()))).kind).toBe('connection');
  });

  it('maps an already-aborted signal to aborted without a request', async () => {
    const controller = new AbortController();
    controller.abort();
    expect((await failure(provider.complete(request({ signal: controller.signal })))).kind).toBe('aborted');
    expect(api.requests).toHaveLength(0);
  });

  // Observed: the SDK's `timeout` only covers the wait for the response headers; a stream that
  // stalls afterwards hangs forever unless the adapter's idle timer aborts it.
  it('times out a stream that stops sending (idle timeout)', async () => {
    const quick = new AnthropicModelProvider({ apiKey: API_KEY, baseURL: api.url, timeoutMs: 200 });
    api.enqueue({ kind: 'hang', afterEvents: 1 });
    const error = await failure(quick.complete(request()));
    expect(error.kind).toBe('timeout');
    expect(error.transient).toBe(true);
  });

  it('times out a server that never sends headers', async () => {
    const quick = new AnthropicModelProvider({ apiKey: API_KEY, baseURL: api.url, timeoutMs: 200 });
    api.enqueue({ kind: 'hang', beforeHeaders: true });
    expect((await failure(quick.complete(request()))).kind).toBe('timeout');
  });

  it('keeps a long stream alive while events keep coming', async () => {
    // The whole answer takes longer than the idle timeout, each gap a tenth of it: a loaded machine
    // (this process serves the stream too) stretches gaps, so the margin is wide.
    const quick = new AnthropicModelProvider({ apiKey: API_KEY, baseURL: api.url, timeoutMs: 1000 });
    api.enqueue(textStep('a slow but steady answer', { chunkSize: 2, eventDelayMs: 100 })); // ~16 events, ~1.6 s total
    const response = await quick.complete(request());
    expect(response.content).toEqual([{ type: 'text', text: 'a slow but steady answer' }]);
  });

  it('maps a refused connection to connection', async () => {
    const closed = await startFakeMessagesApi();
    const url = closed.url;
    await closed.stop();
    const offline = new AnthropicModelProvider({ apiKey: API_KEY, baseURL: url, timeoutMs: 2000 });
    expect((await failure(offline.complete(request()))).kind).toBe('connection');
  });
});
