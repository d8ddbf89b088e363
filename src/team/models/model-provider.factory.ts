import type { TriadConfig } from '../../config/config';
import { AnthropicModelProvider } from './anthropic.provider';
import type { ModelProvider } from './model.port';
import { OFFLINE_MODEL_ID, OfflineModelProvider } from './offline.model';

/** Default Claude model per role when a team config names none. */
export const DEFAULT_CLAUDE_MODEL = 'claude-sonnet-4-6';

/** The one place where configuration picks the model provider. */
export function createModelProvider(config: Pick<TriadConfig, 'model' | 'anthropicApiKey' | 'anthropicBaseUrl'> & Partial<Pick<TriadConfig, 'offlineLatencyMs'>>): {
  provider: ModelProvider;
  defaultModel: string;
} {
  if (config.model === 'anthropic') {
    return {
      provider: new AnthropicModelProvider({ apiKey: config.anthropicApiKey!, baseURL: config.anthropicBaseUrl }),
      defaultModel: DEFAULT_CLAUDE_MODEL,
    };
  }
  return { provider: new OfflineModelProvider({ latencyMs: config.offlineLatencyMs }), defaultModel: OFFLINE_MODEL_ID };
}
