/**
 * The bodies of the HTTP API as TypeScript types, in one module the web console imports
 * (type-only: `import type`), so the page and the server cannot disagree on a field unnoticed.
 * Nothing here exists at run time.
 */
import type { RecordedEvent } from '../events/event-store/event-store.port';
import type { RunSummary, PendingApproval } from '../team/runs/run-summary';
import type { LaunchRunInput } from '../team/commands/launch';
import type { RunStatus, TeamRunEvent, TeamRunEventType, TerminationReason, ForkOverrides } from '../team/domain/run-events';
import type { ChatMessage, ContentBlock, RoleName } from '../team/models/model.port';
import type { RunContext, Completeness } from '../session-replay/replay';
import type { ForkResult } from '../session-replay/fork-run';
import type { WorkspaceView } from '../session-replay/workspace-view';
import type { WorkspaceChanges, WorkspaceFileEntry } from '../session-replay/workspace-diff';
import type { ReviewView, ReviewIteration, MayDecide } from '../review-gate/review-view';
import type { WorkspaceFile } from '../session-replay/workspace-history';
import type { DecisionResult } from '../review-gate/decide-review';
import type { ApprovalResult } from '../team/approvals/commands/decide-approval.command';
import type { DecisionRecord, DecisionLogHead } from '../review-gate/decision-log/decision-record';
import type { DecisionLogVerification } from '../review-gate/decision-log/decision-log';
import type { SessionView, SignedInView } from '../auth/console-sessions';
import type { PasskeyView } from '../auth/passkeys/passkeys.controller';
import type { Identity } from '../auth/identity';
import type { GuardedAction, HumanRole } from '../auth/roles';
import type { ProjectView } from '../projects/domain/project-decider';
import type { ProjectStatus, TaskState } from '../projects/domain/project-events';
import type { SubAgentSummary } from '../team/runs/run-summary';
import type { ListedWebhook } from '../webhooks/webhooks.service';
import type { DeliveryRecord as WebhookDelivery } from '../webhooks/store/webhook-store.port';

export type {
  RecordedEvent,
  RunSummary,
  PendingApproval,
  LaunchRunInput,
  RunStatus,
  TeamRunEvent,
  TeamRunEventType,
  TerminationReason,
  ForkOverrides,
  ChatMessage,
  ContentBlock,
  RoleName,
  RunContext,
  Completeness,
  ForkResult,
  WorkspaceView,
  WorkspaceFile,
  WorkspaceChanges,
  WorkspaceFileEntry,
  ReviewView,
  ReviewIteration,
  MayDecide,
  DecisionResult,
  ApprovalResult,
  DecisionRecord,
  DecisionLogHead,
  DecisionLogVerification,
  SessionView,
  SignedInView,
  Identity,
  GuardedAction,
  HumanRole,
  ProjectView,
  ProjectStatus,
  TaskState,
  SubAgentSummary,
  ListedWebhook,
  WebhookDelivery,
};

/** `GET /v1/projects` */
export interface ProjectList {
  projects: ProjectView[];
}

/** `POST /v1/runs` */
export interface LaunchAccepted {
  runId: string;
  acceptedAt: string;
}

/** `GET /v1/runs` */
export interface RunList {
  runs: RunSummary[];
}

/** `GET /v1/runs/:id/events` (JSON) */
export interface RunEventsPage {
  runId: string;
  events: RecordedEvent[];
}

/** An item of `GET /v1/reviews` */
export type PendingReviewItem = NonNullable<RunSummary['pendingReview']> & Pick<RunSummary, 'runId' | 'goal' | 'acceptanceCriteria' | 'launchedBy' | 'lastVerdict'>;

/** An item of `GET /v1/approvals` */
export type PendingApprovalItem = PendingApproval & Pick<RunSummary, 'runId' | 'goal' | 'launchedBy'>;

/** `GET /v1/auth/passkeys`: the signed-in person's passkeys. */
export interface PasskeyList {
  passkeys: PasskeyView[];
}

export type { PasskeyView };

/** `GET /v1/decisions` (JSON) */
export interface DecisionPage {
  decisions: DecisionRecord[];
  nextAfterSeq?: number;
}

/** Live model text on the SSE stream (`event: delta`); not stored. */
export interface TextDelta {
  role: RoleName;
  turn: number;
  text: string;
}

/** Every error body. */
export interface ApiErrorBody {
  statusCode: number;
  error: string;
  message: string | string[];
}
