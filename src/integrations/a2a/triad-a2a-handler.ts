import { Logger } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { type AgentCard, type SendMessageRequest, type StreamResponse, type Task, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import {
  A2AError,
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext, User } from '@a2a-js/sdk/server';
import type { Identity } from '../../auth/identity';
import type { EventStore } from '../../events/event-store/event-store.port';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../shared/errors';
import { CancelRunCommand } from '../../team/commands/cancel-run.command';
import { LaunchRunCommand } from '../../team/commands/launch-run.command';
import type { LaunchResult } from '../../team/commands/launch';
import { toRunStreamId } from '../../team/domain/run-events';
import { GetRunQuery } from '../../team/queries/run.queries';
import { SUMMARY_EVENT_TYPES, type RunSummary } from '../../team/runs/run-summary';
import { toProjectStreamId } from '../../projects/domain/project-events';
import type { ProjectsService } from '../../projects/projects.service';
import { loadWorkspaceView } from '../../session-replay/workspace-view';
import { validatedProjectLaunch, validatedRunLaunch } from '../launch-input';
import { fileArtifacts, isSettledState, launchRequestOf, MessageNotUnderstoodError, projectTask, runTask } from './a2a-task';

/**
 * The A2A request handler over triad's runs: the SDK's JSON-RPC transports (1.0 and 0.3) call it
 * with the caller's identity (TriadA2aUser, from the API-key guard). A message launches a run or
 * a project through the same commands as the HTTP routes; a task is read from the store each time
 * (nothing is kept here, so any process sharing the store answers the same); a stream follows the
 * run's stream in the store until the task settles.
 */

/** The caller, as the API-key guard authenticated it. */
export class TriadA2aUser implements User {
  constructor(readonly identity: Identity) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.identity.id;
  }
}

/** Where the controller puts the request's abort signal (the client went away) in the call's state. */
export const ABORT_SIGNAL_KEY = 'triad.abortSignal';

/** How long `SendMessage` waits for the task to settle before answering it as it stands. */
const BLOCKING_WAIT_MS = 60_000;

const isProjectId = (id: string) => id.startsWith('prj_');

export interface A2aDeps {
  commands: CommandBus;
  queries: QueryBus;
  store: EventStore;
  projects: ProjectsService;
  card: () => AgentCard;
}

export class TriadA2aHandler implements A2ARequestHandler {
  private readonly logger = new Logger('A2A');

  constructor(private readonly deps: A2aDeps) {}

  getAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.deps.card());
  }

  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return Promise.reject(new ExtendedAgentCardNotConfiguredError('triad has no extended agent card: every caller sees the same card'));
  }

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Task> {
    return this.mapped(async () => {
      const id = await this.launch(params, context);
      if (params.configuration?.returnImmediately) return this.task(id);
      // Until it settles (input-required at the gate, or an end), within a bound.
      const deadline = AbortSignal.any([AbortSignal.timeout(BLOCKING_WAIT_MS), signalOf(context)]);
      for await (const update of this.follow(id, deadline, false)) void update;
      return this.task(id);
    });
  }

  async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const id = await this.mapped(() => this.launch(params, context));
    yield* this.mappedStream(this.follow(id, signalOf(context), true));
  }

  async *resubscribe(params: { id: string }, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    yield* this.mappedStream(this.follow(params.id, signalOf(context), true));
  }

  getTask(params: { id: string }): Promise<Task> {
    return this.mapped(() => this.task(params.id));
  }

  cancelTask(params: { id: string }, context: ServerCallContext): Promise<Task> {
    return this.mapped(async () => {
      const who = identityOf(context);
      const reason = 'cancelled through A2A';
      try {
        if (isProjectId(params.id)) await this.deps.projects.cancel(params.id, who, reason);
        else await this.deps.commands.execute(new CancelRunCommand(params.id, who, reason));
      } catch (err) {
        if (err instanceof ConflictError) throw new TaskNotCancelableError(err.message);
        throw err;
      }
      return this.task(params.id);
    });
  }

  listTasks(): Promise<never> {
    return Promise.reject(new UnsupportedOperationError('listing tasks is not offered over A2A: GET /v1/runs lists runs'));
  }

  createTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    return Promise.reject(new PushNotificationNotSupportedError('triad sends no A2A push notifications: stream the task, or use webhooks'));
  }

  getTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    return this.createTaskPushNotificationConfig();
  }

  listTaskPushNotificationConfigs(): Promise<never> {
    return Promise.reject(new PushNotificationNotSupportedError('triad sends no A2A push notifications'));
  }

  deleteTaskPushNotificationConfig(): Promise<void> {
    return Promise.reject(new PushNotificationNotSupportedError('triad sends no A2A push notifications'));
  }

  /** The launch a message asks for, validated as its HTTP route validates it; answers the task id. */
  private async launch(params: SendMessageRequest, context: ServerCallContext): Promise<string> {
    const who = identityOf(context);
    const request = launchRequestOf(params.message);
    if (request.skill === 'project') return (await this.deps.projects.launch(validatedProjectLaunch(request.body), who)).projectId;
    const result = await this.deps.commands.execute<LaunchRunCommand, LaunchResult>(new LaunchRunCommand(validatedRunLaunch(request.body), who));
    return result.runId;
  }

  /** The task as the store has it now; `artifacts`: with the workspace's files (runs only). */
  private async task(id: string, artifacts = true): Promise<Task> {
    if (isProjectId(id)) return projectTask(await this.deps.projects.get(id, true));
    const run = await this.deps.queries.execute<GetRunQuery, RunSummary>(new GetRunQuery(id));
    return runTask(run, artifacts ? await this.artifacts(id) : []);
  }

  private async artifacts(runId: string) {
    try {
      const view = await loadWorkspaceView(this.deps.store, runId);
      return fileArtifacts(view.files, view.iteration);
    } catch (err) {
      // No files yet (no iteration has written any): no artifacts.
      if (err instanceof NotFoundError) return [];
      throw err;
    }
  }

  /**
   * The task, then a status update whenever its state or status message changes, as the task's
   * stream in the store records them (the store's subscription, no polling); when it settles, its
   * files as artifact updates (`withArtifacts`) before the last status. Ends there, or on `signal`.
   */
  private async *follow(id: string, signal: AbortSignal, withArtifacts: boolean): AsyncGenerator<StreamResponse, void, undefined> {
    const stream = isProjectId(id) ? toProjectStreamId(id) : toRunStreamId(id);
    const head = await this.deps.store.streamRevision(stream);
    if (head === null) throw new TaskNotFoundError(`task ${id} not found`);
    const [last] = await this.deps.store.readStream(stream, { fromRevision: head, maxCount: 1 });
    let task = await this.task(id);
    yield { payload: { $case: 'task', value: task } };
    if (isSettledState(task.status!.state)) return;
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const types = isProjectId(id) ? undefined : [...SUMMARY_EVENT_TYPES];
      const events = this.deps.store.subscribe({ after: last?.position ?? 0, filter: { streamPrefixes: [stream], ...(types ? { types } : {}) }, signal: stop.signal, urgent: true });
      for await (const e of events) {
        if (e.streamId !== stream) continue;
        const next = await this.task(id, false);
        const settled = isSettledState(next.status!.state);
        if (settled && withArtifacts) {
          const files = isProjectId(id) ? [] : await this.artifacts(id);
          for (const artifact of files) yield { payload: { $case: 'artifactUpdate', value: { taskId: id, contextId: next.contextId, artifact, append: false, lastChunk: true, metadata: undefined } } };
          next.artifacts = files;
        }
        if (settled || next.status!.state !== task.status!.state || textOf(next) !== textOf(task)) {
          task = next;
          yield { payload: { $case: 'statusUpdate', value: { taskId: id, contextId: task.contextId, status: task.status, metadata: task.metadata } } };
        }
        if (settled) return;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      stop.abort();
    }
  }

  private async mapped<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw this.a2aError(err);
    }
  }

  private async *mappedStream(updates: AsyncGenerator<StreamResponse, void, undefined>): AsyncGenerator<StreamResponse, void, undefined> {
    try {
      yield* updates;
    } catch (err) {
      throw this.a2aError(err);
    }
  }

  /** triad's failures in A2A's words: bad input is invalid params (-32602), never an internal error. */
  private a2aError(err: unknown): unknown {
    if (err instanceof A2AError) return err;
    if (err instanceof MessageNotUnderstoodError || err instanceof InvalidRequestError) return new RequestMalformedError(err.message);
    if (err instanceof NotFoundError) return new TaskNotFoundError(err.message);
    if (err instanceof ConflictError) return new UnsupportedOperationError(err.message);
    this.logger.error(`an A2A call failed: ${(err as Error)?.message ?? String(err)}`);
    return new A2AError('the call failed on the server; it is logged there');
  }
}

const textOf = (task: Task): string => {
  const part = task.status?.message?.parts[0]?.content;
  return part?.$case === 'text' ? part.value : '';
};

function identityOf(context: ServerCallContext): Identity {
  const user = context.user;
  if (!(user instanceof TriadA2aUser)) throw new A2AError('the call has no authenticated caller');
  return user.identity;
}

function signalOf(context: ServerCallContext): AbortSignal {
  const signal = context.state.get(ABORT_SIGNAL_KEY);
  return signal instanceof AbortSignal ? signal : new AbortController().signal;
}

