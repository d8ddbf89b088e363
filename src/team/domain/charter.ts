import { hashOf } from '../../shared/canonical-json';
import type { RoleConfig } from './run-events';

/** The executor's charter version: a hash of its role prompt and its model config. */
export function charterVersion(rolePrompt: string, config: RoleConfig): string {
  return `sha256:${hashOf({ rolePrompt, model: config.model, maxTurns: config.maxTurns, tools: [...config.tools].sort(), maxTokens: config.maxTokens ?? null })}`;
}
