import type { TriadConfig } from '../../config/config';
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
