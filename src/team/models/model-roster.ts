import { ModelError, type ModelProvider, type ModelRequest, type ModelResponse, type TokenCountRequest } from './model.port';
import { estimateRequestTokens } from './token-count';

/**
 * The providers one process calls models with: its default (TRIAD_MODEL) and the others it is set
 * up for (Anthropic with a key, an OpenAI-compatible server with a key or a base URL), so that one
 * run's roles can each go to their own — the architect on Claude, the executor on a local model.
 * It is itself a provider: by its name and endpoint it is the default one, and each call goes to
 * the provider the request names (`request.provider`, the run's pin for the role).
 */
export class ModelRoster implements ModelProvider {
  readonly name: string;
  readonly endpoint?: string;
  readonly providers: ReadonlyMap<string, ModelProvider>;
  readonly countTokens?: (request: TokenCountRequest) => Promise<number>;

  constructor(
    private readonly fallback: ModelProvider,
    others: readonly ModelProvider[],
  ) {
    this.name = fallback.name;
    if (fallback.endpoint !== undefined) this.endpoint = fallback.endpoint;
    const providers = new Map<string, ModelProvider>([[fallback.name, fallback]]);
    for (const other of others) if (!providers.has(other.name)) providers.set(other.name, other);
    this.providers = providers;
    // A role whose provider counts no tokens is measured by the local estimate, as the driver would.
    if ([...providers.values()].some((p) => p.countTokens)) {
      this.countTokens = async (request) => {
        const provider = this.serving(request.provider);
        return provider.countTokens ? provider.countTokens(request) : estimateRequestTokens(request);
      };
    }
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    return this.serving(request.provider).complete(request);
  }

  /** The provider of that name; a name this process has no provider for is refused (its pin kept the run from being driven here). */
  private serving(name: string | undefined): ModelProvider {
    if (name === undefined) return this.fallback;
    const provider = this.providers.get(name);
    if (!provider) throw new ModelError('invalid_request', `no ${name} provider is set up in this process`);
    return provider;
  }
}

/** The provider a call to `name` goes to on a process whose model is `model` (a roster, or one provider). */
export function providerNamed(model: ModelProvider, name: string | undefined): ModelProvider {
  return (name !== undefined ? model.providers?.get(name) : undefined) ?? model;
}

/**
 * Where a role's calls go on a process whose model is `model`: on a roster, the provider the run's
 * pin names for the role (`request` carries its name for the roster to route by); otherwise the
 * one provider, with nothing added to the request.
 */
export function roleRoute(model: ModelProvider, pinnedProvider: string): { provider: ModelProvider; request: Pick<ModelRequest, 'provider'> } {
  if (!model.providers) return { provider: model, request: {} };
  return { provider: providerNamed(model, pinnedProvider), request: { provider: pinnedProvider } };
}
