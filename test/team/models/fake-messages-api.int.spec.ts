import Anthropic from '@anthropic-ai/sdk';
import { apiKeyOf, sseEvents, startFakeMessagesApi, textStep, toolUseStep, type FakeMessagesApi } from '../../support/fake-messages-api';

// The fake itself, through the real SDK: what later retry tests rely on.

describe('fake Messages API', () => {
  let api: FakeMessagesApi;
  let client: Anthropic;
  const params = { model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user' as const, content: 'hi' }] };

  beforeAll(async () => {
    api = await startFakeMessagesApi();
    client = new Anthropic({ apiKey: 'sk-ant-fake-key', baseURL: api.url, maxRetries: 0, logLevel: 'off' });
  });
  afterAll(() => api.stop());
  beforeEach(() => api.reset());

  it('answers non-streaming requests with a JSON Message', async () => {
    api.enqueue(toolUseStep('read_file', { path: 'a.txt' }, { id: 'toolu_x', text: 'Reading.', usage: { input_tokens: 7, output_tokens: 3 } }));
    const message = await client.messages.create(params);
    expect(message).toMatchObject({
      role: 'assistant',
      model: 'claude-haiku-4-5',
      stop_reason: 'tool_use',
      content: [{ type: 'text', text: 'Reading.' }, { type: 'tool_use', id: 'toolu_x', name: 'read_file', input: { path: 'a.txt' } }],
      usage: { input_tokens: 7, output_tokens: 3 },
    });
    expect(apiKeyOf(api.requests[0])).toBe('sk-ant-fake-key');
    expect(api.requests[0].body).toMatchObject(params);
  });

  it('checks tool blocks as the API does: tools defined (any), every tool_use answered next, no stray tool_result', async () => {
    const history = [
      { role: 'user' as const, content: 'write it' },
      { role: 'assistant' as const, content: [{ type: 'tool_use' as const, id: 'toolu_w', name: 'write_file', input: { path: 'a.txt' } }] },
    ];
    const answered = { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: 'toolu_w', content: 'ok' }, { type: 'text' as const, text: 'now plan' }] };
    const planOnly = [{ name: 'submit_steps', input_schema: { type: 'object' as const } }];
    const status = (body: Parameters<typeof client.messages.create>[0]) =>
      client.messages.create(body).then(
        () => 200,
        (err: { status?: number }) => err.status,
      );
    // Earlier tool calls of tools not offered now are fine.
    api.enqueue(textStep('ok'));
    expect(await status({ ...params, messages: [...history, answered], tools: planOnly })).toBe(200);
    expect(await status({ ...params, messages: [...history, answered] })).toBe(400);
    expect(await status({ ...params, messages: [...history, { role: 'user', content: 'no result' }], tools: planOnly })).toBe(400);
    expect(await status({ ...params, messages: [...history, { role: 'user', content: [{ type: 'text', text: 'x' }, answered.content[0]] }], tools: planOnly })).toBe(400);
    expect(await status({ ...params, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_none', content: 'x' }] }], tools: planOnly })).toBe(400);
  });

  it('streams the event sequence of the real API, with pings and split deltas', async () => {
    api.enqueue(textStep('abcdefghijklmnop', { chunkSize: 4 }));
    const stream = await client.messages.create({ ...params, stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types).toEqual([
      'message_start',
      'content_block_start',
      ...Array(4).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    // The SDK drops pings; the wire has them.
    expect(sseEvents(textStep('x'), params).filter((e) => e.startsWith('event: ping'))).toHaveLength(2);
  });

  it('falls back to a function when the queue is empty, and to a 500 without one', async () => {
    const scripted = await startFakeMessagesApi({ fallback: (_req, index) => textStep(`answer ${index}`) });
    const c = new Anthropic({ apiKey: 'k', baseURL: scripted.url, maxRetries: 0, logLevel: 'off' });
    try {
      const first = await c.messages.create(params);
      const second = await c.messages.create(params);
      expect([first.content[0], second.content[0]]).toEqual([
        { type: 'text', text: 'answer 0' },
        { type: 'text', text: 'answer 1' },
      ]);
    } finally {
      await scripted.stop();
    }
    await expect(client.messages.create(params)).rejects.toMatchObject({ status: 500 });
  });

  it('lets the SDK retry through a scripted 529 and honours retry-after-ms', async () => {
    const retrying = new Anthropic({ apiKey: 'k', baseURL: api.url, maxRetries: 1, logLevel: 'off' });
    api.enqueue({ kind: 'http_error', status: 529, headers: { 'retry-after-ms': '10' } }, textStep('second time lucky'));
    const message = await retrying.messages.create(params);
    expect(message.content).toEqual([{ type: 'text', text: 'second time lucky' }]);
    expect(api.requests.map((r) => r.headers['x-stainless-retry-count'])).toEqual(['0', '1']);
    expect(api.pending).toBe(0);
  });
});
