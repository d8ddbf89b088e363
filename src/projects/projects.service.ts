import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { randomUUID } from 'node:crypto';
import type { Identity } from '../auth/identity';
import type { CommandPath } from '../events/command-handling';
import { COMMAND_PATH } from '../events/command-path.module';
import { CLOCK } from '../shared/system';
import type { Clock } from '../shared/ports';
import { CancelRunCommand } from '../team/commands/cancel-run.command';
import { LaunchRunCommand } from '../team/commands/launch-run.command';
import { DEFAULT_MODEL } from '../team/commands/tokens';
import type { LaunchRunInput } from '../team/commands/launch';
import { MODEL_PROVIDER, type ModelProvider } from '../team/models/model.port';
import { RunSupervisor } from '../team/dispatch/run-supervisor';
import { ProjectNotFoundError, projectIdForIdempotencyKey, projectView, type ProjectCommand, type ProjectView } from './domain/project-decider';
import type { ProjectLaunchedData, ProjectState, ProjectStatus, TaskState } from './domain/project-events';
import { DEFAULT_PROJECT_CONCURRENCY } from './domain/scheduler';
import type { ProjectStrategy, TaskSpec } from './domain/task-graph';
import { ProjectReactor } from './project-reactor';
import { existingProject } from './project-stream';
import { DecideProjectCommand, LaunchProjectCommand } from './commands/project-commands';
import { ProjectsProjection } from './projects.projection';

export interface LaunchProjectInput {
  goal: string;
  acceptanceCriteria?: string[];
  tasks?: Array<Omit<TaskSpec, 'dependsOn'> & { dependsOn?: string[] }>;
  strategy?: ProjectStrategy;
  concurrency?: number;
  reviewPolicy?: { humanGate?: boolean; perTask?: boolean; allowLauncherToReview?: boolean };
  run?: ProjectLaunchedData['run'];
  idempotencyKey?: string;
}

/** The strategy of a project that names none: the graph's own order, tasks in parallel where it allows. */
export const DEFAULT_PROJECT_STRATEGY: ProjectStrategy = 'dag';

/**
 * Projects' commands (launch, cancel, retry a task, decide the review: sent on the CommandBus,
 * decided by `projectDecider`), their queries, and the reactor that carries projects forward
 * (started by `triad serve` and by the CLI's `project run` and `project retry`, which drive the
 * task runs in their own process).
 */
@Injectable()
export class ProjectsService implements OnApplicationShutdown {
  private readonly logger = new Logger('ProjectReactor');
  readonly reactor: ProjectReactor;
  private unsubscribe?: () => void;
  private started = false;
  private driveHere = false;

  constructor(
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(MODEL_PROVIDER) model: ModelProvider,
    @Inject(DEFAULT_MODEL) defaultModel: string,
    private readonly commands: CommandBus,
    private readonly projection: ProjectsProjection,
    private readonly supervisor: RunSupervisor,
  ) {
    this.reactor = new ProjectReactor({
      store: path.store,
      path,
      clock,
      complete: (request) => model.complete(request),
      defaultModel,
      launchTaskRun: (project, task) => this.launchTaskRun(project, task),
      cancelRun: async (runId, by, reason) => {
        await this.commands.execute(new CancelRunCommand(runId, actorIdentity(by), reason));
      },
      logger: this.logger,
      // One architect call per project however many serving processes react to its launch.
      claimPlanning: (projectId) => this.supervisor.claim(`project-plan-${projectId}`),
      planningRecheckMs: supervisor.leaseTtlMs,
    });
  }

  /**
   * Starts reacting: to every event that concerns a project from now on, and once to every open
   * project (what happened while no process reacted). `driveHere`: task runs are driven in this
   * process (the CLI, which has no dispatcher) rather than by a serving process's dispatcher.
   */
  async start(options: { driveHere?: boolean } = {}): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.driveHere = options.driveHere ?? false;
    try {
      await this.projection.catchUp(30_000);
    } catch (err) {
      // Reacting starts anyway: every event folded from now on pokes its project.
      this.logger.error(`projects read model not caught up at start: ${(err as Error).message}`);
    }
    // After the catch-up, so a boot does not reconcile every project ever run; the open ones are
    // reconciled below (which also covers anything folded between the catch-up and here).
    this.unsubscribe = this.projection.onChange((id) => this.reactor.poke(id));
    for (const p of this.projection.list()) {
      if (p.status === 'planning' || p.status === 'running' || p.status === 'cancelled') this.reactor.poke(p.projectId);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.unsubscribe?.();
    await this.reactor.stop();
  }

  private async launchTaskRun(project: ProjectState, task: TaskState): Promise<void> {
    const l = project.launched!;
    const input: LaunchRunInput = {
      goal: task.goal,
      acceptanceCriteria: task.acceptanceCriteria,
      // One human gate per project by default: the task runs waive theirs (recorded in RunLaunched).
      reviewPolicy: { humanGate: l.reviewPolicy.humanGate && l.reviewPolicy.perTask, allowLauncherToReview: l.reviewPolicy.allowLauncherToReview },
      idempotencyKey: `project:${project.projectId}:task:${task.key}:attempt:${task.attempt}`,
      ...(l.run.maxIterations !== undefined ? { maxIterations: l.run.maxIterations } : {}),
      ...(l.run.timeoutMs !== undefined ? { timeoutMs: l.run.timeoutMs } : {}),
      ...(l.run.budget?.totalTokens !== undefined ? { budget: { totalTokens: l.run.budget.totalTokens } } : {}),
    };
    const result = await this.commands.execute<LaunchRunCommand, { runId: string }>(
      new LaunchRunCommand(input, actorIdentity(l.launchedBy), { projectId: project.projectId, taskKey: task.key, attempt: task.attempt }),
    );
    if (result.runId !== task.runId) throw new Error(`task ${task.key}: launched run ${result.runId}, expected ${task.runId}`);
    // The CLI drives a project's task runs in the foreground, as `triad run` drives its run: the
    // project's own concurrency bounds them, not the serving processes' cap.
    if (this.driveHere && !this.supervisor.isDriving(result.runId)) await this.supervisor.wake(result.runId, 'project');
  }

  private now(): string {
    return new Date(this.clock.now()).toISOString();
  }

  async launch(input: LaunchProjectInput, who: Identity): Promise<{ projectId: string; acceptedAt: string }> {
    const projectId = input.idempotencyKey ? projectIdForIdempotencyKey(who.id, input.idempotencyKey) : `prj_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
    const data: ProjectLaunchedData = {
      projectId,
      goal: input.goal.trim(),
      acceptanceCriteria: (input.acceptanceCriteria ?? []).map((c) => c.trim()),
      strategy: input.strategy ?? DEFAULT_PROJECT_STRATEGY,
      concurrency: input.concurrency ?? DEFAULT_PROJECT_CONCURRENCY,
      reviewPolicy: {
        humanGate: input.reviewPolicy?.humanGate ?? true,
        perTask: input.reviewPolicy?.perTask ?? false,
        allowLauncherToReview: input.reviewPolicy?.allowLauncherToReview ?? false,
      },
      run: plain(input.run ?? {}),
      launchedBy: who.id,
      launchedAt: this.now(),
      ...(input.idempotencyKey ? { idempotencyKey: input.idempotencyKey } : {}),
    };
    const tasks = input.tasks?.map((t) => ({ key: t.key, goal: t.goal, acceptanceCriteria: [...t.acceptanceCriteria], dependsOn: [...(t.dependsOn ?? [])] }));
    const result = await this.commands.execute<LaunchProjectCommand, { projectId: string; acceptedAt: string }>(new LaunchProjectCommand(data, tasks));
    if (this.started) this.reactor.poke(projectId);
    return { projectId: result.projectId, acceptedAt: result.acceptedAt };
  }

  private async decide(projectId: string, command: ProjectCommand, by: string): Promise<ProjectView> {
    return projectView(await this.commands.execute<DecideProjectCommand, ProjectState>(new DecideProjectCommand(projectId, command, by)));
  }

  /** Ends the project cancelled, then cancels its task runs still going (the reactor does it again after a crash). */
  async cancel(projectId: string, who: Identity, reason?: string): Promise<ProjectView> {
    await this.decide(projectId, { type: 'CancelProject', by: who.id, ...(reason?.trim() ? { reason: reason.trim() } : {}), at: this.now() }, who.id);
    await this.reactor.reconcile(projectId);
    return this.get(projectId, true);
  }

  async retry(projectId: string, key: string, who: Identity): Promise<ProjectView> {
    const view = await this.decide(projectId, { type: 'RetryTask', key, by: who.id, at: this.now() }, who.id);
    if (this.started) this.reactor.poke(projectId);
    return view;
  }

  decideReview(projectId: string, decision: 'approve' | 'reject', who: Identity, reason: string): Promise<ProjectView> {
    return this.decide(projectId, { type: 'DecideProjectReview', decision, by: who.id, reason: reason.trim(), at: this.now() }, who.id);
  }

  /** `fresh`: read from the store (the CLI's one-shot commands); else the read model, caught up first. */
  async get(projectId: string, fresh = false): Promise<ProjectView> {
    if (fresh) return projectView(await existingProject(this.path.store, projectId));
    await this.projection.catchUp();
    const p = this.projection.get(projectId);
    if (!p) throw new ProjectNotFoundError(`project ${projectId} not found`);
    return projectView(p);
  }

  async list(filter: { status?: ProjectStatus; limit?: number }): Promise<ProjectView[]> {
    await this.projection.catchUp();
    return this.projection.list(filter).map(projectView);
  }
}

/** The identity a project acts under for its launcher or canceller (only the id is recorded). */
function actorIdentity(id: string): Identity {
  return { id, name: id.replace(/^user:/, ''), roles: [] };
}

/** A plain JSON copy without undefined keys (DTO instances have them). */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
