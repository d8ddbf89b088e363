/**
 * The human roles and what each may do: the one table the routes are guarded by (admin may do
 * everything). Agents act under their own identities (`agent:<role>:<runId>`) and are never
 * given a human role.
 */
export const HUMAN_ROLES = ['operator', 'reviewer', 'auditor', 'admin'] as const;
export type HumanRole = (typeof HUMAN_ROLES)[number];

export type GuardedAction = 'operateRuns' | 'review' | 'decideToolCalls' | 'audit' | 'manageWebhooks';

/** Who may: anything not named here needs only a valid key (reading runs, their events and context). */
export const MAY: Readonly<Record<GuardedAction, readonly HumanRole[]>> = {
  /** Launch, cancel, resume and fork runs. */
  operateRuns: ['operator'],
  /** List and decide reviews at the gate. */
  review: ['reviewer'],
  /** List and decide tool calls waiting for approval. */
  decideToolCalls: ['reviewer', 'operator'],
  /** Read, export and verify the decision log. */
  audit: ['auditor'],
  /** Add, list and remove outbound webhooks and read their deliveries: admins only (an endpoint receives what every run does). */
  manageWebhooks: ['admin'],
};
