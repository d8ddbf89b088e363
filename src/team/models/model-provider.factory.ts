import type { TriadConfig } from '../../config/config';
import type { ModelCatalogue } from '../domain/model-pin';
import { usePriceTable } from '../domain/pricing';
import type { ModelProvider } from './model.port';
import { ModelRoster } from './model-roster';
import { OFFLINE_MODEL_ID, OfflineModelProvider } from './offline.model';

/** Default Claude model per role when a team config names none. */
export const DEFAULT_CLAUDE_MODEL = 'claude-sonnet-4-6';

/** Default model of a role on the OpenAI-compatible provider when its team config names none (a local server's is named in the team). */
export const DEFAULT_OPENAI_MODEL = 'gpt-4.1-mini';

/** The model provider configuration picked, and the model a role uses when its team config names none. */
export interface ModelSelection {
  provider: ModelProvider;
  defaultModel: string;
}

type ModelConfig = Pick<TriadConfig, 'model' | 'anthropicApiKey' | 'anthropicBaseUrl'> &
  Partial<Pick<TriadConfig, 'offlineLatencyMs' | 'modelIdleTimeoutMs' | 'openaiApiKey' | 'openaiBaseUrl' | 'modelPrices'>>;

/**
 * The one place where configuration picks the model providers: the default one (TRIAD_MODEL, or
 * Anthropic when its key is set, else the offline model), and beside it each other provider the
 * process is set up for (Anthropic with its key, the OpenAI-compatible one with a key or a base
 * URL), which a role may name (`team.<role>.provider`); and the price table those calls are priced by. With more than one, the process's provider
 * is a ModelRoster. An SDK is loaded only when its provider is set up: a process on the offline
 * model (the CLI, tests, demos) starts without them.
 */
export async function createModelProvider(config: ModelConfig, logger?: { warn(message: string): void }): Promise<ModelSelection> {
  // The operator's price rows (TRIAD_MODEL_PRICES) join the table before any call is priced.
  usePriceTable(config.modelPrices ?? {});
  const fallback = await providerOf(config.model, config, logger);
  const others: ModelProvider[] = [];
  if (config.model !== 'anthropic' && config.anthropicApiKey) others.push(await providerOf('anthropic', config, logger));
  if (config.model !== 'openai' && (config.openaiApiKey || config.openaiBaseUrl)) others.push(await providerOf('openai', config, logger));
  return { provider: others.length > 0 ? new ModelRoster(fallback, others) : fallback, defaultModel: defaultModelOf(config.model) };
}

async function providerOf(kind: TriadConfig['model'], config: ModelConfig, logger?: { warn(message: string): void }): Promise<ModelProvider> {
  switch (kind) {
    case 'anthropic': {
      const { AnthropicModelProvider } = await import('./anthropic.provider');
      return new AnthropicModelProvider({ apiKey: config.anthropicApiKey!, baseURL: config.anthropicBaseUrl, timeoutMs: config.modelIdleTimeoutMs });
    }
    case 'openai': {
      const { OpenAIModelProvider } = await import('./openai.provider');
      return new OpenAIModelProvider({
        ...(config.openaiApiKey ? { apiKey: config.openaiApiKey } : {}),
        ...(config.openaiBaseUrl ? { baseURL: config.openaiBaseUrl } : {}),
        timeoutMs: config.modelIdleTimeoutMs,
        ...(logger ? { logger } : {}),
      });
    }
    case 'offline':
      return new OfflineModelProvider({ latencyMs: config.offlineLatencyMs });
  }
}

/** The model a role on `provider` uses when its team config names none. */
export function defaultModelOf(provider: string): string {
  if (provider === 'anthropic') return DEFAULT_CLAUDE_MODEL;
  if (provider === 'openai') return DEFAULT_OPENAI_MODEL;
  return OFFLINE_MODEL_ID;
}

/** Claude model ids and aliases (`claude-sonnet-4-6`, `claude-opus-4-1-20250805`). */
const CLAUDE_MODEL = /^claude-[a-z0-9][a-z0-9.-]*$/;

/**
 * The models a provider serves, as far as triad knows its names: Claude's for `anthropic`, its own
 * for the offline model (which never answers for another). Undefined for a provider whose names
 * triad does not know: `openai` (a compatible server names its models as it likes: `llama3.2:3b`)
 * and the scripted test double; any name passes.
 */
export function catalogueOf(provider: string): ModelCatalogue | undefined {
  if (provider === 'anthropic') return { serves: (model) => CLAUDE_MODEL.test(model), accepts: 'Claude models (claude-...)' };
  if (provider === 'offline') return { serves: (model) => model === OFFLINE_MODEL_ID, accepts: `the offline model ${OFFLINE_MODEL_ID}` };
  return undefined;
}
