import type { RoleName } from '../../src/team/models/model.port';
import type { TeamRunEvent } from '../../src/team/domain/run-events';

export function contextCompacted(role: RoleName, turn: number, fromIndex: number, toIndex: number): TeamRunEvent {
  return {
    type: 'ContextCompacted',
    data: { role, turn, fromIndex, toIndex, summary: 'what happened so far', method: 'model', reason: 'over_budget', tokensBefore: 1000, tokensAfter: 200, budgetTokens: 900, at: '2025-01-01T00:00:09.000Z' },
  };
}
