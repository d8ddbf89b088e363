import { createModelProvider } from '../../../src/team/models/model-provider.factory';
import { ModelRoster, roleRoute } from '../../../src/team/models/model-roster';
import { ModelError, type ModelProvider, type ModelRequest } from '../../../src/team/models/model.port';
import { processModelOf } from '../../../src/team/domain/model-pin';
import { estimateRequestTokens } from '../../../src/team/models/token-count';
import { providerLine } from '../../../src/cli/format';

// One process, several providers: each call goes where the request's pin says.

const answering = (name: string, endpoint?: string, counts?: number): ModelProvider & { asked: ModelRequest[] } => {
  const asked: ModelRequest[] = [];
  return {
    name,
    ...(endpoint ? { endpoint } : {}),
    asked,
    complete: async (request) => {
      asked.push(request);
      return { model: request.model, content: [{ type: 'text', text: name }], stopReason: 'end_turn', usage: { inputTokens: 1, outputTokens: 1 } };
    },
    ...(counts !== undefined ? { countTokens: async () => counts } : {}),
  };
};

const request = (provider?: string): ModelRequest => ({
  runId: 'run-1',
  role: 'executor',
  model: 'm',
  system: 'sys',
  messages: [{ role: 'user', content: 'hello' }],
  tools: [],
  maxTokens: 10,
  ...(provider ? { provider } : {}),
});

describe('a model roster', () => {
  const claude = answering('anthropic', 'https://api.anthropic.com:443', 4242);
  const local = answering('openai', 'http://127.0.0.1:11434');
  const roster = new ModelRoster(claude, [local]);

  it('given a request naming a provider, then it goes to that one; naming none, to the default', async () => {
    expect((await roster.complete(request('openai'))).content).toEqual([{ type: 'text', text: 'openai' }]);
    expect((await roster.complete(request())).content).toEqual([{ type: 'text', text: 'anthropic' }]);
    await expect(roster.complete(request('offline'))).rejects.toThrow(new ModelError('invalid_request', 'no offline provider is set up in this process'));
  });

  it('is the default by name and endpoint, and says what else it serves', () => {
    expect(processModelOf(roster)).toEqual({ provider: 'anthropic', endpoint: 'https://api.anthropic.com:443', also: [{ provider: 'openai', endpoint: 'http://127.0.0.1:11434' }] });
  });

  it("counts tokens with the provider's counter, and by the local estimate for one without", async () => {
    expect(await roster.countTokens!({ ...request('anthropic') })).toBe(4242);
    expect(await roster.countTokens!({ ...request('openai') })).toBe(estimateRequestTokens(request()));
  });

  it('is said at start with the others a role may name', () => {
    expect(providerLine(roster)).toBe('model: anthropic; also openai at http://127.0.0.1:11434 for the roles that name it');
    expect(providerLine(claude)).toBe('model: anthropic');
  });

  it("routes a role to its pin's provider on a roster, and adds nothing to the request on a single provider", () => {
    expect(roleRoute(roster, 'openai')).toEqual({ provider: local, request: { provider: 'openai' } });
    expect(roleRoute(claude, 'anthropic')).toEqual({ provider: claude, request: {} });
  });
});

describe('the providers configuration sets up', () => {
  it('given the offline default and an OpenAI-compatible base URL, then the process has both', async () => {
    const { provider, defaultModel } = await createModelProvider({ model: 'offline', openaiBaseUrl: 'http://127.0.0.1:11434/v1' });
    expect(defaultModel).toBe('triad-offline-1');
    expect(processModelOf(provider)).toEqual({ provider: 'offline', endpoint: 'offline:', also: [{ provider: 'openai', endpoint: 'http://127.0.0.1:11434' }] });
  });

  it('given TRIAD_MODEL=openai alone, then its one provider is OpenAI\'s own API', async () => {
    const { provider, defaultModel } = await createModelProvider({ model: 'openai', openaiApiKey: 'sk-openai-0123456789' });
    expect(defaultModel).toBe('gpt-4.1-mini');
    expect(processModelOf(provider)).toEqual({ provider: 'openai', endpoint: 'https://api.openai.com:443' });
  });
});
