import type { GateRefusal } from '../../attestation/gate-refusal';
import type { ProjectStrategy, TaskSpec } from './task-graph';
import type { TaskStatus } from './scheduler';

/** A project is the stream `project-<projectId>`. */
export const PROJECT_STREAM_PREFIX = 'project-';
export const toProjectStreamId = (projectId: string): string => `${PROJECT_STREAM_PREFIX}${projectId}`;
export function projectIdOfStream(streamId: string): string | undefined {
  return streamId.startsWith(PROJECT_STREAM_PREFIX) ? streamId.slice(PROJECT_STREAM_PREFIX.length) : undefined;
}

export type ProjectStatus = 'planning' | 'running' | 'awaiting_review' | 'completed' | 'failed' | 'cancelled';
export const PROJECT_STATUSES: readonly ProjectStatus[] = ['planning', 'running', 'awaiting_review', 'completed', 'failed', 'cancelled'];
/** `failed` is final unless it came from failed tasks (TASKS_FAILED): retrying one reopens the project. */
export type ProjectEndReason = 'COMPLETED' | 'TASKS_FAILED' | 'REJECTED' | 'PLANNING_FAILED' | 'CANCELLED';

export interface ProjectReviewPolicy {
  /** One human review of the whole project once every task has completed (default true). */
  humanGate: boolean;
  /** Each task run stops at its own review gate instead (and the project has none). Default false. */
  perTask: boolean;
  /** The launcher may decide the project's review (default false: no self-review). */
  allowLauncherToReview: boolean;
}

/** What every task run of the project is launched with, besides its goal and criteria. */
export interface ProjectRunSettings {
  maxIterations?: number;
  timeoutMs?: number;
  budget?: { totalTokens?: number };
}

export interface ProjectLaunchedData {
  projectId: string;
  goal: string;
  acceptanceCriteria: string[];
  strategy: ProjectStrategy;
  concurrency: number;
  reviewPolicy: ProjectReviewPolicy;
  run: ProjectRunSettings;
  launchedBy: string;
  launchedAt: string;
  idempotencyKey?: string;
}

/** The architect's model turn that planned (or failed to plan) the project, as recorded. */
export interface ArchitectTurn {
  model: string;
  toolUseId?: string;
  /** The `submit_task_graph` input as the model gave it. */
  input?: unknown;
  text?: string;
  usage?: { inputTokens: number; outputTokens: number };
}

export interface ProjectPlannedData {
  tasks: TaskSpec[];
  source: 'user' | 'architect';
  architect?: ArchitectTurn;
  at: string;
}

export interface ProjectPlanningFailedData {
  reason: string;
  architect?: ArchitectTurn;
  at: string;
}

export interface TaskStartedData {
  key: string;
  attempt: number;
  runId: string;
  /** The run's launch idempotency key: `project:<id>:task:<key>:attempt:<n>`. */
  idempotencyKey: string;
  at: string;
}

export interface TaskEndedData {
  key: string;
  attempt: number;
  runId: string;
  status: 'completed' | 'failed';
  /** The run's status; `not_launched` when its launch was refused (then `message` says why). */
  runStatus: string;
  terminationReason?: string;
  message?: string;
  at: string;
}

export interface TasksSkippedData {
  keys: string[];
  /** The failed task they depend on. */
  because: string;
  at: string;
}

export interface TaskRetriedData {
  key: string;
  attempt: number;
  by: string;
  /** Skipped dependents pending again. */
  reopened: string[];
  at: string;
}

export interface ProjectReviewOpenedData {
  at: string;
}

export interface ProjectReviewDecidedData {
  decision: 'approve' | 'reject';
  by: string;
  reason: string;
  at: string;
}

export interface ProjectEndedData {
  status: 'completed' | 'failed' | 'cancelled';
  reason: ProjectEndReason;
  message?: string;
  by?: string;
  /** On cancel: the tasks that were pending or running. */
  cancelledTasks?: string[];
  at: string;
}

export type ProjectEvent =
  | { type: 'ProjectLaunched'; data: ProjectLaunchedData }
  | { type: 'ProjectPlanned'; data: ProjectPlannedData }
  | { type: 'ProjectPlanningFailed'; data: ProjectPlanningFailedData }
  | { type: 'TaskStarted'; data: TaskStartedData }
  | { type: 'TaskEnded'; data: TaskEndedData }
  | { type: 'TasksSkipped'; data: TasksSkippedData }
  | { type: 'TaskRetried'; data: TaskRetriedData }
  | { type: 'ProjectReviewOpened'; data: ProjectReviewOpenedData }
  | { type: 'ProjectReviewDecided'; data: ProjectReviewDecidedData }
  | { type: 'ProjectEnded'; data: ProjectEndedData };

export const PROJECT_EVENT_TYPES: readonly ProjectEvent['type'][] = [
  'ProjectLaunched',
  'ProjectPlanned',
  'ProjectPlanningFailed',
  'TaskStarted',
  'TaskEnded',
  'TasksSkipped',
  'TaskRetried',
  'ProjectReviewOpened',
  'ProjectReviewDecided',
  'ProjectEnded',
];

export interface TaskState extends TaskSpec {
  status: TaskStatus;
  /** 0 before the first start. */
  attempt: number;
  /** The current attempt's run. */
  runId?: string;
  /** Every run of this task, one per attempt. */
  runIds: string[];
  runStatus?: string;
  terminationReason?: string;
  /** For a skipped task: the failed task it depends on. */
  skippedBecause?: string;
}

export interface ProjectState {
  projectId: string;
  /** -1 before the first event. */
  revision: number;
  launched?: ProjectLaunchedData;
  status: ProjectStatus;
  terminationReason?: ProjectEndReason;
  message?: string;
  tasks: TaskState[];
  planning?: { source: 'user' | 'architect'; architect?: ArchitectTurn; failure?: string };
  review?: { openedAt: string; decision?: ProjectReviewDecidedData };
  endedAt?: string;
  /** Who ended it (a cancel, a review decision). */
  endedBy?: string;
  updatedAt?: string;
  /** Review decisions without a valid attestation, and project ends no attested decision caused: not acted on. */
  refused?: GateRefusal[];
}
