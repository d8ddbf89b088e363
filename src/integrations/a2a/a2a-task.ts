import { Role, TaskState, type Artifact, type Message, type Part, type Task } from '@a2a-js/sdk';
import type { RunSummary } from '../../team/runs/run-summary';
import type { ProjectView } from '../../projects/domain/project-decider';
import type { WorkspaceFile } from '../../session-replay/workspace-history';

/**
 * triad's runs and projects as A2A tasks, pure: the task id is the run's (or the project's) id,
 * its state follows the run's status, its status message says where the run is in triad's
 * words, and its artifacts are the workspace's files. A message becomes a launch here too.
 */

/** The A2A state of a run: working while it runs, input-required while a human must decide. */
export function runTaskState(run: Pick<RunSummary, 'status' | 'terminationReason'>): TaskState {
  switch (run.status) {
    case 'queued':
      return TaskState.TASK_STATE_SUBMITTED;
    case 'planning':
    case 'executing':
    case 'reviewing':
    // Suspended: no driver now; recovery or `triad resume` continues it.
    case 'suspended':
      return TaskState.TASK_STATE_WORKING;
    case 'awaiting_review':
    case 'awaiting_approval':
      return TaskState.TASK_STATE_INPUT_REQUIRED;
    case 'completed':
      return TaskState.TASK_STATE_COMPLETED;
    case 'cancelled':
      return TaskState.TASK_STATE_CANCELED;
    case 'failed':
      return run.terminationReason === 'REJECTED' ? TaskState.TASK_STATE_REJECTED : TaskState.TASK_STATE_FAILED;
    case 'blocked':
      return TaskState.TASK_STATE_FAILED;
    default: {
      const never: never = run.status;
      throw new Error(`unknown run status ${String(never)}`);
    }
  }
}

/** The A2A state of a project, as of its runs. */
export function projectTaskState(project: Pick<ProjectView, 'status' | 'terminationReason'>): TaskState {
  switch (project.status) {
    case 'planning':
    case 'running':
      return TaskState.TASK_STATE_WORKING;
    case 'awaiting_review':
      return TaskState.TASK_STATE_INPUT_REQUIRED;
    case 'completed':
      return TaskState.TASK_STATE_COMPLETED;
    case 'cancelled':
      return TaskState.TASK_STATE_CANCELED;
    case 'failed':
      return project.terminationReason === 'REJECTED' ? TaskState.TASK_STATE_REJECTED : TaskState.TASK_STATE_FAILED;
    default: {
      const never: never = project.status;
      throw new Error(`unknown project status ${String(never)}`);
    }
  }
}

/** Whether a task in this state goes no further on its own (ended, or waiting for a human). */
export function isSettledState(state: TaskState): boolean {
  return state !== TaskState.TASK_STATE_SUBMITTED && state !== TaskState.TASK_STATE_WORKING;
}

/** Where the run is, in one line for the status message. */
export function runStatusText(run: RunSummary): string {
  if (run.status === 'awaiting_review' && run.pendingReview) {
    return `waiting for a human review: review ${run.pendingReview.reviewId} (iteration ${run.iteration}) is decided by a reviewer, never the launcher (POST /v1/reviews/${run.pendingReview.reviewId}/approve or /reject)`;
  }
  if (run.status === 'awaiting_approval') {
    const tools = (run.pendingApprovals ?? []).map((a) => `${a.tool} (approval ${a.approvalId})`).join(', ');
    return `waiting for a human to approve a tool call: ${tools || 'pending'} (POST /v1/approvals/:id/approve or /reject)`;
  }
  const ended = run.terminationReason ? ` (${run.terminationReason}${run.message ? `: ${run.message}` : ''})` : '';
  return `run ${run.status}, iteration ${run.iteration} of ${run.maxIterations}${ended}`;
}

export function projectStatusText(project: ProjectView): string {
  const done = project.tasks.filter((t) => t.status === 'completed').length;
  const ended = project.terminationReason ? ` (${project.terminationReason}${project.message ? `: ${project.message}` : ''})` : '';
  const review = project.status === 'awaiting_review' ? `; waiting for a human review of the project (POST /v1/projects/${project.projectId}/review/approve or /reject)` : '';
  return `project ${project.status}, ${done} of ${project.tasks.length} tasks completed${ended}${review}`;
}

const textPart = (text: string): Part => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' });

/** The agent's status message: its id names the task's revision, so the same state reads the same. */
export function agentMessage(taskId: string, contextId: string, revision: number, text: string): Message {
  return { messageId: `${taskId}:${revision}`, contextId, taskId, role: Role.ROLE_AGENT, parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [] };
}

/** One artifact per workspace file, its text as a text part. */
export function fileArtifacts(files: readonly WorkspaceFile[], iteration: number): Artifact[] {
  return files.map((f) => ({
    artifactId: `file:${f.path}`,
    name: f.path,
    description: `${f.path} as the workspace held it at the end of iteration ${iteration}`,
    parts: [{ ...textPart(f.content), filename: f.path }],
    metadata: { iteration },
    extensions: [],
  }));
}

export function runTask(run: RunSummary, artifacts: Artifact[]): Task {
  const contextId = run.project?.projectId ?? run.runId;
  return {
    id: run.runId,
    contextId,
    status: { state: runTaskState(run), message: agentMessage(run.runId, contextId, run.revision, runStatusText(run)), timestamp: run.endedAt ?? undefined },
    artifacts,
    history: [],
    metadata: {
      kind: 'run',
      runStatus: run.status,
      iteration: run.iteration,
      ...(run.terminationReason ? { terminationReason: run.terminationReason } : {}),
      ...(run.pendingReview ? { reviewId: run.pendingReview.reviewId } : {}),
      ...(run.pendingApprovals?.length ? { approvalIds: run.pendingApprovals.map((a) => a.approvalId) } : {}),
    },
  };
}

export function projectTask(project: ProjectView): Task {
  return {
    id: project.projectId,
    contextId: project.projectId,
    status: { state: projectTaskState(project), message: agentMessage(project.projectId, project.projectId, project.revision, projectStatusText(project)), timestamp: project.endedAt ?? undefined },
    artifacts: [],
    history: [],
    metadata: { kind: 'project', projectStatus: project.status, runIds: project.runIds, ...(project.terminationReason ? { terminationReason: project.terminationReason } : {}) },
  };
}

/** What a message asks for: a team run or a project, with the body its HTTP route would take. */
export type LaunchRequest = { skill: 'team-run'; body: Record<string, unknown> } | { skill: 'project'; body: Record<string, unknown> };

export class MessageNotUnderstoodError extends Error {
  override name = 'MessageNotUnderstoodError';
}

const IDEMPOTENCY_KEY = /^[A-Za-z0-9_.:-]{1,120}$/;

/**
 * A launch from a message: the goal is its text parts (joined by newlines), the acceptance criteria
 * and every other launch option are its one data part (`skill: "project"` launches a project). The
 * message's id names the launch (`idempotencyKey: a2a:<messageId>` unless the data sets one), so a
 * client sending the same message again gets the same task. The body is validated by the caller.
 */
export function launchRequestOf(message: Pick<Message, 'messageId' | 'taskId' | 'parts'> | undefined): LaunchRequest {
  if (!message) throw new MessageNotUnderstoodError('params.message is required');
  if (message.taskId) throw new MessageNotUnderstoodError(`a triad task takes no further messages (task ${message.taskId}): reviews and tool approvals are decided by people through the API`);
  const texts: string[] = [];
  const data: unknown[] = [];
  for (const part of message.parts) {
    if (part.content?.$case === 'text') texts.push(part.content.value);
    else if (part.content?.$case === 'data') data.push(part.content.value);
    else throw new MessageNotUnderstoodError('a message takes text parts (the goal) and one data part (the options); file parts are not read');
  }
  const goal = texts.join('\n').trim();
  if (goal === '') throw new MessageNotUnderstoodError('the message needs a text part: the goal');
  if (data.length > 1) throw new MessageNotUnderstoodError('a message takes at most one data part (acceptanceCriteria, team and the other launch options)');
  const options = data[0] ?? {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new MessageNotUnderstoodError('the data part must be a JSON object');
  const { skill = 'team-run', ...rest } = options as Record<string, unknown>;
  if (skill !== 'team-run' && skill !== 'project') throw new MessageNotUnderstoodError('data.skill must be "team-run" or "project"');
  if ('goal' in rest) throw new MessageNotUnderstoodError("the goal is the message's text, not a data field");
  const key = `a2a:${message.messageId}`;
  const idempotencyKey = rest.idempotencyKey ?? (IDEMPOTENCY_KEY.test(message.messageId) ? key : undefined);
  const body = { goal, ...rest, ...(idempotencyKey === undefined ? {} : { idempotencyKey }) };
  return skill === 'project' ? { skill, body } : { skill, body };
}
