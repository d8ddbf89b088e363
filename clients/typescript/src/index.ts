/** @triad/client: a typed client of triad's HTTP API (README.md). */
export { createTriadClient } from './client';
export type {
  ApprovalResult,
  CancelResult,
  DecisionResult,
  FollowOptions,
  LaunchAccepted,
  LaunchRunRequest,
  PendingApprovalItem,
  PendingReview,
  RecordedEvent,
  RunStatus,
  RunStreamMessage,
  RunSummary,
  TextDelta,
  TriadClient,
  TriadClientOptions,
  WaitAnswer,
} from './client';
export { TriadApiError, type ApiErrorBody } from './errors';
export { sseFrames, type SseFrame } from './sse';
export type { components, operations, paths } from './schema';
