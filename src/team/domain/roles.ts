import type { RoleName } from '../models/model.port';

export const ROLES: readonly RoleName[] = ['architect', 'executor', 'reviewer'];

export const SUBMIT_TOOL_OF_ROLE: Record<RoleName, 'submit_plan' | 'submit_work' | 'submit_verdict'> = {
  architect: 'submit_plan',
  executor: 'submit_work',
  reviewer: 'submit_verdict',
};

export const ROLE_OF_PHASE = { planning: 'architect', executing: 'executor', reviewing: 'reviewer' } as const;

/** Launch defaults. */
export const DEFAULT_MAX_TURNS: Record<RoleName, number> = { architect: 15, executor: 30, reviewer: 15 };
export const DEFAULT_MAX_ITERATIONS = 3;
export const DEFAULT_TIMEOUT_MS = 30 * 60 * 1000;
export const DEFAULT_TOKEN_BUDGET = 500_000;
