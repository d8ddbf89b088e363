export const DEFAULT_MODEL = Symbol('DEFAULT_MODEL');
/** The resilience policies API and CLI launches record when the request leaves them out. */
export const LAUNCH_POLICY_DEFAULTS = Symbol('LAUNCH_POLICY_DEFAULTS');
