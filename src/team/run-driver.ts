/**
 * The run driver's public face. The driver lives in ./driver/ (the loop, the model turn, the tool
 * dispatch, compaction); the events of its steps in ./domain/run-steps.ts.
 */
export { RunDriver, DEFAULT_CHECKPOINT_EVERY_TURNS } from './driver/run-driver';
export type { RunDriverDeps, RunObserver } from './driver/step-context';
export { rejectionMessage, UNKNOWN_OUTCOME_MESSAGE } from './domain/run-steps';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './domain/resilience/policies';
export { ROLE_OF_PHASE } from './domain/roles';
export { loadRunState } from './run-stream';
