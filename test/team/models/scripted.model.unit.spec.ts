import { ModelError, type ModelRequest } from '../../../src/team/models/model.port';
import { ScriptedModelProvider, ScriptExhaustedError, textResponse, toolUseResponse, type ScriptedModelOptions, type ScriptStep } from '../../../src/team/models/scripted.model';
import { modelProviderContract } from './model-provider.contract';

/** How this suite builds the adapter. */
const makeAdapter = (script: ScriptStep[], options?: ScriptedModelOptions) => new ScriptedModelProvider(script, options);

function request(text: string, overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { runId: 'r', role: 'executor', model: 'scripted', system: 'sys', messages: [{ role: 'user', content: text }], tools: [], maxTokens: 10, ...overrides };
}

/** A turn in the middle of a conversation: a tool call and its result are in the history. */
function contractRequest(): ModelRequest {
  return request('Goal:\nSay hello', {
    messages: [
      { role: 'user', content: 'Goal:\nSay hello' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_0', name: 'read_file', input: { path: 'a.txt' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_0', content: 'no such file', is_error: true }] },
    ],
    tools: [
      { name: 'read_file', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } },
      { name: 'write_file', description: 'Write a file', input_schema: { type: 'object' } },
    ],
  });
}

modelProviderContract('scripted', async () => ({
  textTurn: () => {
    const answer = textResponse('Hello there, in several words of text.');
    return { provider: makeAdapter([answer]), request: contractRequest(), expectedContent: answer.content };
  },
  toolTurn: () => {
    const answer = toolUseResponse('write_file', { path: 'a.txt', content: 'Hello\n' }, { id: 'toolu_1', text: 'Writing the file.' });
    return { provider: makeAdapter([answer]), request: contractRequest(), expectedContent: answer.content };
  },
  hangingTurn: () => {
    const provider = makeAdapter([textResponse('never')], { latencyMs: 10 * 60_000 });
    // The wait begins inside complete(), before its first await.
    return { provider, request: contractRequest(), underWay: async () => undefined };
  },
  cleanup: async () => undefined,
}));

describe('ScriptedModelProvider', () => {
  it('answers in script order and records a plain copy of each request', async () => {
    const model = new ScriptedModelProvider([textResponse('first'), toolUseResponse('read_file', { path: 'a' }, { id: 'toolu_1' }), textResponse('third')]);
    const controller = new AbortController();
    const first = await model.complete(request('one', { signal: controller.signal, onTextDelta: () => undefined }));
    const second = await model.complete(request('two'));
    const third = await model.complete(request('three'));

    expect(first.content).toEqual([{ type: 'text', text: 'first' }]);
    expect(second).toMatchObject({ stopReason: 'tool_use', content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a' } }] });
    expect(third.content).toEqual([{ type: 'text', text: 'third' }]);
    expect(model.name).toBe('scripted');
    expect(model.remaining).toBe(0);
    expect(model.calls.map((c) => c.messages[0].content)).toEqual(['one', 'two', 'three']);
    expect(model.calls[0]).not.toHaveProperty('signal');
    expect(model.calls[0]).not.toHaveProperty('onTextDelta');
    await expect(model.complete(request('four'))).rejects.toBeInstanceOf(ScriptExhaustedError);
  });

  it('throws scripted errors', async () => {
    const model = new ScriptedModelProvider([new ModelError('rate_limited', 'slow down', { status: 429, retryAfterMs: 5 }), textResponse('ok')]);
    await expect(model.complete(request('a'))).rejects.toMatchObject({ name: 'ModelError', kind: 'rate_limited', details: { retryAfterMs: 5 } });
    await expect(model.complete(request('b'))).resolves.toMatchObject({ content: [{ text: 'ok' }] });
  });

  it('takes a function of the request and the call index', async () => {
    const model = new ScriptedModelProvider(async (req, index) => textResponse(`${index}:${req.messages[0].content as string}`));
    expect((await model.complete(request('x'))).content).toEqual([{ type: 'text', text: '0:x' }]);
    expect((await model.complete(request('y'))).content).toEqual([{ type: 'text', text: '1:y' }]);
    expect(model.remaining).toBeUndefined();
  });

  it('streams text in word-sized pieces, as a streaming model would', async () => {
    const model = new ScriptedModelProvider([textResponse('several words of text')]);
    const deltas: string[] = [];
    await model.complete(request('a', { onTextDelta: (t) => deltas.push(t) }));
    expect(deltas).toEqual(['several ', 'words ', 'of ', 'text']);
  });

  it('does not share response objects between the script and its callers', async () => {
    const scripted = textResponse('original');
    const model = new ScriptedModelProvider(() => scripted);
    const response = await model.complete(request('a'));
    (response.content[0] as { text: string }).text = 'changed';
    expect((await model.complete(request('b'))).content).toEqual([{ type: 'text', text: 'original' }]);
  });

  it('waits latencyMs before answering', async () => {
    const model = new ScriptedModelProvider([textResponse('slow')], { latencyMs: 60 });
    const started = Date.now();
    await model.complete(request('a'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(50);
  });
});
