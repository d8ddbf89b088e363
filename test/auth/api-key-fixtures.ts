import { decideAddApiKey, evolveApiKeys, initialApiKeysState, type AddApiKey, type ApiKeyEvent, type ApiKeysState } from '../../src/auth/keys/api-key-events';
import { DeciderSpecification, type Decider } from '../support/decider-specification';

/** The stored API keys' decider, for `given(events).when(command).then(events)` (test/support/decider-specification.ts). */
export const apiKeyDecider: Decider<ApiKeysState, AddApiKey, ApiKeyEvent> = {
  decide: decideAddApiKey,
  evolve: (state, event, { revision }) => evolveApiKeys(state, event, revision),
  initialState: initialApiKeysState,
};

export const given = DeciderSpecification.for(apiKeyDecider);
