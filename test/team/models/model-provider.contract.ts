import { ModelError, type AssistantBlock, type ModelProvider, type ModelRequest, type ModelResponse, type ToolUseBlock } from '../../../src/team/models/model.port';

/**
 * The model provider contract: every adapter runs this same suite.
 *
 * Adapters answer from different sources (a script, the offline model's own rules, a Messages API
 * server), so the harness arranges each kind of turn and hands back the provider and the request
 * to send; the contract checks what the port promises whatever the source: the response's shape
 * (content blocks, stop reason, usage) as the domain stores it, tool calls with ids and inputs,
 * streamed text, the caller's request left as it was, and an abort ending the call with the port's
 * typed error.
 */
export interface ModelTurn {
  provider: ModelProvider;
  request: ModelRequest;
  /** The blocks the adapter was told to answer with, when it can be told (a script, the server). */
  expectedContent?: AssistantBlock[];
}

export interface HangingTurn extends ModelTurn {
  /** Resolves once the call is under way (the request sent, the wait begun). */
  underWay(): Promise<void>;
}

export interface ModelProviderHarness {
  /** A turn the adapter answers with text only. */
  textTurn(): ModelTurn;
  /** A turn the adapter answers with a tool call (text may come first). */
  toolTurn(): ModelTurn;
  /** A turn whose answer does not come for longer than any test runs: only an abort ends it. */
  hangingTurn(): HangingTurn;
  cleanup(): Promise<void>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (n: unknown) => typeof n === 'number' && Number.isInteger(n) && n >= 0;
const textOf = (content: AssistantBlock[]) => content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');

/** What every response must be: the port's shape, and plain JSON (the domain stores it in events). */
function expectPortShape(response: ModelResponse): void {
  expect(typeof response.model).toBe('string');
  expect(response.model).not.toBe('');
  expect(Array.isArray(response.content)).toBe(true);
  for (const block of response.content) {
    expect(['text', 'tool_use']).toContain(block.type);
    if (block.type === 'text') expect(typeof block.text).toBe('string');
  }
  expect(typeof response.stopReason).toBe('string');
  expect(isCount(response.usage.inputTokens)).toBe(true);
  expect(isCount(response.usage.outputTokens)).toBe(true);
  for (const extra of [response.usage.cacheReadTokens, response.usage.cacheWriteTokens]) {
    if (extra !== undefined) expect(isCount(extra)).toBe(true);
  }
  expect(JSON.parse(JSON.stringify(response))).toEqual(response);
}

/** The call fails with the port's typed error of this kind. */
async function expectModelError(call: Promise<unknown>, kind: ModelError['kind']): Promise<ModelError> {
  const error = await call.then(
    (response) => {
      throw new Error(`expected a ModelError '${kind}', got a response: ${JSON.stringify(response)}`);
    },
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ModelError);
  expect(error).toMatchObject({ name: 'ModelError', kind });
  return error as ModelError;
}

export function modelProviderContract(name: string, makeHarness: () => Promise<ModelProviderHarness>): void {
  describe(`model provider contract: ${name}`, () => {
    let harness: ModelProviderHarness;

    beforeAll(async () => {
      harness = await makeHarness();
    });

    afterAll(async () => {
      await harness?.cleanup();
    });

    it('has a name to show users what produced the output', () => {
      const { provider } = harness.textTurn();
      expect(typeof provider.name).toBe('string');
      expect(provider.name).not.toBe('');
    });

    describe('complete', () => {
      it('given a text turn, then the response is text blocks, stop reason end_turn, with usage', async () => {
        const { provider, request, expectedContent } = harness.textTurn();
        const response = await provider.complete(request);
        expectPortShape(response);
        expect(response.content.length).toBeGreaterThan(0);
        expect(response.content.every((b) => b.type === 'text' && b.text !== '')).toBe(true);
        expect(response.stopReason).toBe('end_turn');
        if (expectedContent) expect(response.content).toEqual(expectedContent);
      });

      it("given a tool turn, then tool_use blocks carry unique ids, one of the request's tools and an object input; stop reason tool_use", async () => {
        const { provider, request, expectedContent } = harness.toolTurn();
        const response = await provider.complete(request);
        expectPortShape(response);
        const calls = response.content.filter((b): b is ToolUseBlock => b.type === 'tool_use');
        expect(calls.length).toBeGreaterThan(0);
        const offered = request.tools.map((t) => t.name);
        for (const call of calls) {
          expect(typeof call.id).toBe('string');
          expect(call.id).not.toBe('');
          expect(offered).toContain(call.name);
          expect(isRecord(call.input)).toBe(true);
        }
        expect(new Set(calls.map((c) => c.id)).size).toBe(calls.length);
        expect(response.stopReason).toBe('tool_use');
        if (expectedContent) expect(response.content).toEqual(expectedContent);
      });

      it.each([
        ['text', (h: ModelProviderHarness) => h.textTurn()],
        ['tool', (h: ModelProviderHarness) => h.toolTurn()],
      ])("given a %s turn, then the request the caller passed is left as it was", async (_, turnOf) => {
        const { provider, request } = turnOf(harness);
        const before = JSON.stringify(request);
        await provider.complete(request);
        expect(JSON.stringify(request)).toBe(before);
      });
    });

    describe('streaming', () => {
      it.each([
        ['text', (h: ModelProviderHarness) => h.textTurn()],
        ['tool', (h: ModelProviderHarness) => h.toolTurn()],
      ])('given a %s turn with a listener, then the streamed deltas add up to the text of the response', async (_, turnOf) => {
        const { provider, request } = turnOf(harness);
        const deltas: string[] = [];
        const response = await provider.complete({ ...request, onTextDelta: (t) => deltas.push(t) });
        expect(deltas.every((d) => typeof d === 'string')).toBe(true);
        expect(deltas.join('')).toBe(textOf(response.content));
        if (textOf(response.content) !== '') expect(deltas.length).toBeGreaterThan(0);
      });

      it('given a listener that throws, then the turn still completes (live text is best effort)', async () => {
        const { provider, request, expectedContent } = harness.textTurn();
        const response = await provider.complete({
          ...request,
          onTextDelta: () => {
            throw new Error('listener failed');
          },
        });
        expectPortShape(response);
        if (expectedContent) expect(response.content).toEqual(expectedContent);
      });
    });

    describe('abort', () => {
      it('given a signal already aborted, then the call fails with ModelError aborted', async () => {
        const { provider, request } = harness.textTurn();
        const controller = new AbortController();
        controller.abort();
        const error = await expectModelError(provider.complete({ ...request, signal: controller.signal }), 'aborted');
        expect(error.transient).toBe(false);
      });

      it('given a call under way that would not end, when its signal aborts, then it ends with ModelError aborted', async () => {
        const { provider, request, underWay } = harness.hangingTurn();
        const controller = new AbortController();
        const call = provider.complete({ ...request, signal: controller.signal });
        const failed = expectModelError(call, 'aborted');
        try {
          await underWay();
        } finally {
          controller.abort();
        }
        await failed;
      });
    });
  });
}

/** The ModelError a call fails with, checked to hold no trace of `secret` (the provider's key) in its message or its JSON. */
export async function failureOf(promise: Promise<unknown>, secret: string): Promise<ModelError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ModelError);
    expect(String((error as Error).message)).not.toContain(secret);
    expect(JSON.stringify(error)).not.toContain(secret);
    return error as ModelError;
  }
  throw new Error('expected the model call to fail');
}
