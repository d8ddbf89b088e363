import type { TriadConfig } from '../../config/config';
import type { ModelCatalogue } from '../domain/model-pin';
import type { ModelProvider } from './model.port';
import { OFFLINE_MODEL_ID, OfflineModelProvider } from './offline.model';

/** Default Claude model per role when a team config names none. */
export const DEFAULT_CLAUDE_MODEL = 'claude-sonnet-4-6';

/** The model provider configuration picked, and the model a role uses when its team config names none. */
export interface ModelSelection {
  provider: ModelProvider;
  defaultModel: string;
}

/**
 * The one place where configuration picks the model provider. The Anthropic SDK is loaded only
 * when it is picked: a process on the offline model (the CLI, tests, demos) starts without it.
 */
export async function createModelProvider(
  config: Pick<TriadConfig, 'model' | 'anthropicApiKey' | 'anthropicBaseUrl'> & Partial<Pick<TriadConfig, 'offlineLatencyMs' | 'modelIdleTimeoutMs'>>,
): Promise<ModelSelection> {
  if (config.model === 'anthropic') {
    const { AnthropicModelProvider } = await import('./anthropic.provider');
    return {
      provider: new AnthropicModelProvider({ apiKey: config.anthropicApiKey!, baseURL: config.anthropicBaseUrl, timeoutMs: config.modelIdleTimeoutMs }),
      defaultModel: DEFAULT_CLAUDE_MODEL,
    };
  }
  return { provider: new OfflineModelProvider({ latencyMs: config.offlineLatencyMs }), defaultModel: OFFLINE_MODEL_ID };
}

/** Claude model ids and aliases (`claude-sonnet-4-6`, `claude-opus-4-1-20250805`). */
const CLAUDE_MODEL = /^claude-[a-z0-9][a-z0-9.-]*$/;

/**
 * The models a provider serves, as far as triad knows its names: Claude's for `anthropic`, its own
 * for the offline model (which never answers for another). Undefined for a provider whose names
 * triad does not know (the scripted test double): any name passes.
 */
export function catalogueOf(provider: string): ModelCatalogue | undefined {
  if (provider === 'anthropic') return { serves: (model) => CLAUDE_MODEL.test(model), accepts: 'Claude models (claude-...)' };
  if (provider === 'offline') return { serves: (model) => model === OFFLINE_MODEL_ID, accepts: `the offline model ${OFFLINE_MODEL_ID}` };
  return undefined;
}
