import { foldRunHistory } from '../team/runs/run-history';
import { initialRunState } from '../team/domain/run-state';
import type { CommandPath } from '../events/command-handling';
import type { EventStore } from '../events/event-store/event-store.port';
import type { Clock } from '../shared/ports';
import { pause } from '../shared/pause';
import { untilStoreAnswers } from '../events/outlast-store';
import { InvalidRequestError } from '../shared/errors';
import { toRunStreamId } from '../team/domain/run-events';
import { ModelError, type ModelRequest, type ModelResponse } from '../team/models/model.port';
import { projectDecider, type ProjectCommand, type RunOutcome } from './domain/project-decider';
import type { ProjectState, TaskState } from './domain/project-events';
import { decompositionRequest, readDecomposition } from './decomposition';
import { loadProject, projectContext, projectStream } from './project-stream';

/** What the reactor needs of the rest of the app (the Nest shell gives it the real ones). */
export interface ProjectReactorDeps {
  store: EventStore;
  path: CommandPath;
  clock: Clock;
  /** The architect's model turn (the model provider's `complete`). */
  complete(request: ModelRequest): Promise<ModelResponse>;
  defaultModel: string;
  /** Launches a task's run through the one launch path, with the task's idempotency key (a repeat is a no-op). */
  launchTaskRun(project: ProjectState, task: TaskState): Promise<void>;
  /** Cancels a task run (its project was cancelled). */
  cancelRun(runId: string, by: string, reason: string): Promise<void>;
  logger?: { log(message: string): void; error(message: string): void };
  /**
   * Claims a project's planning for this process, so that however many processes react to a
   * launch, one asks the architect; undefined: another process is planning it. Without it, every
   * reactor plans (the first recorded graph wins).
   */
  claimPlanning?(projectId: string): Promise<{ release(): Promise<void> } | undefined>;
  /** When another process was planning: how long until the project is looked at again (its claim lapses if it died). */
  planningRecheckMs?: number;
}

/** The actor of what the reactor records. */
export const PROJECT_REACTOR_ACTOR = 'system:projects';

/**
 * Reactions of a project to what happened, decided from the store alone so that any process can
 * make them and a restarted one makes them again: plan a project waiting for its architect, launch
 * the runs of started tasks that have none yet, record task runs that ended (which starts the next
 * tasks, skips dependents of failures, opens the review or ends the project), and cancel the runs
 * of a cancelled project. Every reaction is idempotent: a task's start is recorded (at the
 * project's revision) before its run is launched, with a run id derived from
 * `project:<id>:task:<key>:attempt:<n>`, so a launch made twice — by a process that restarted, or
 * two processes at once — finds the run already launched. `reconcile` is run for every open
 * project at start and for a project after each event that concerns it.
 */
export class ProjectReactor {
  private readonly queue = new Map<string, { running: Promise<void>; again: boolean }>();
  private readonly stopping = new AbortController();
  private readonly rechecks = new Map<string, NodeJS.Timeout>();

  constructor(private readonly deps: ProjectReactorDeps) {}

  /** Reconciles the project soon (serialised per project; a request while one runs runs it again after). */
  poke(projectId: string): void {
    if (this.stopping.signal.aborted) return;
    const entry = this.queue.get(projectId);
    if (entry) {
      entry.again = true;
      return;
    }
    const next = { again: false, running: Promise.resolve() };
    this.queue.set(projectId, next);
    next.running = (async () => {
      do {
        next.again = false;
        await this.reconcileSafely(projectId);
      } while (next.again && !this.stopping.signal.aborted);
      this.queue.delete(projectId);
    })();
  }

  /** Resolves when nothing is being reconciled (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.queue.size > 0) await Promise.all([...this.queue.values()].map((e) => e.running));
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    for (const timer of this.rechecks.values()) clearTimeout(timer);
    this.rechecks.clear();
    await this.idle();
  }

  /**
   * Reconciles, trying again after any failure (a store fault, a launch that failed, conflicts past
   * the command path's own retries), five times in all: every failure is logged as it happens, and
   * a project given up on here is reconciled again at its next event or at the next start.
   */
  private async reconcileSafely(projectId: string): Promise<void> {
    if (this.stopping.signal.aborted) return;
    const attempt = async (n: number) => {
      try {
        await this.reconcile(projectId);
      } catch (err) {
        this.deps.logger?.error(`project ${projectId}: reaction failed (attempt ${n}): ${(err as Error).message}`);
        throw err;
      }
    };
    await untilStoreAnswers(attempt, { signal: this.stopping.signal, retryOn: () => true, attempts: 5, backoff: { baseMs: 200, maxMs: 1_000 } }).catch(
      // Given up on (or stopped): each failure was logged as it happened, and nothing waits for the result.
      () => undefined,
    );
  }

  /** One pass of the project's reactions, until it has nothing more to do right now. */
  async reconcile(projectId: string): Promise<void> {
    for (let round = 0; round < 100 && !this.stopping.signal.aborted; round++) {
      const state = await loadProject(this.deps.store, projectId);
      if (!state.launched) return;
      if (state.status === 'planning') {
        if (!(await this.planOnce(state))) return;
        continue;
      }
      if (state.status === 'cancelled') {
        await this.cancelTaskRuns(state);
        return;
      }
      if (state.status !== 'running') return;
      const outcomes: Record<string, RunOutcome> = {};
      let refused: { key: string; attempt: number; reason: string } | undefined;
      for (const task of state.tasks) {
        if (task.status !== 'running' || !task.runId) continue;
        const outcome = await this.runOutcome(task.runId);
        if (outcome === 'missing') {
          try {
            await this.deps.launchTaskRun(state, task);
          } catch (err) {
            // A launch refused as invalid would be refused again: the task fails (a retry may follow).
            if (!(err instanceof InvalidRequestError)) throw err;
            refused = { key: task.key, attempt: task.attempt, reason: err.message };
            break;
          }
        } else if (outcome) outcomes[task.runId] = outcome;
      }
      if (refused) {
        await this.decide(projectId, { type: 'RecordTaskLaunchRefused', ...refused, at: this.now() });
        continue;
      }
      if (Object.keys(outcomes).length === 0) return;
      const { events } = await this.decide(projectId, { type: 'Advance', runOutcomes: outcomes, at: this.now() });
      // Tasks started: go round again to launch their runs.
      if (!events.some((e) => e.type === 'TaskStarted')) return;
    }
  }

  private decide(projectId: string, command: ProjectCommand) {
    return this.deps.path.handle(projectStream(this.deps.store, projectId), (s) => projectDecider.decide(command, s), projectContext(projectId, PROJECT_REACTOR_ACTOR), { maxAttempts: 10 });
  }

  private now(): string {
    return new Date(this.deps.clock.now()).toISOString();
  }

  /**
   * Plans the project if this process holds its planning claim: false when another process does
   * (it records the graph, which pokes this one; if it dies, its claim lapses and this one looks
   * again after `planningRecheckMs`).
   */
  private async planOnce(state: ProjectState): Promise<boolean> {
    const claim = this.deps.claimPlanning ? await this.deps.claimPlanning(state.projectId) : { release: async () => undefined };
    if (!claim) {
      this.recheckLater(state.projectId);
      return false;
    }
    try {
      await this.plan(state);
      return true;
    } finally {
      await claim.release();
    }
  }

  private recheckLater(projectId: string): void {
    if (this.stopping.signal.aborted || this.rechecks.has(projectId)) return;
    const timer = setTimeout(() => {
      this.rechecks.delete(projectId);
      this.poke(projectId);
    }, this.deps.planningRecheckMs ?? 30_000);
    timer.unref();
    this.rechecks.set(projectId, timer);
  }

  /** The architect's turn: the graph recorded, or why there is none. Transient model faults are tried again. */
  private async plan(state: ProjectState): Promise<void> {
    const launched = state.launched!;
    const request = decompositionRequest(
      { projectId: state.projectId, goal: launched.goal, acceptanceCriteria: launched.acceptanceCriteria, strategy: launched.strategy },
      this.deps.defaultModel,
      this.stopping.signal,
    );
    let response: ModelResponse | undefined;
    for (let attempt = 1; !response; attempt++) {
      try {
        response = await this.deps.complete(request);
      } catch (err) {
        if (this.stopping.signal.aborted) throw err;
        if (err instanceof ModelError && err.transient && attempt < 4) {
          await pause(1000 * 3 ** (attempt - 1), this.stopping.signal);
          continue;
        }
        const reason = err instanceof ModelError ? `the architect's model call failed (${err.kind}): ${err.message}` : `the architect's model call failed: ${(err as Error).message}`;
        await this.decide(state.projectId, { type: 'RecordPlanningFailed', reason, at: this.now() });
        return;
      }
    }
    const { architect, tasks } = readDecomposition(response);
    if (tasks === undefined) {
      await this.decide(state.projectId, { type: 'RecordPlanningFailed', reason: 'the architect did not call submit_task_graph', architect, at: this.now() });
      return;
    }
    await this.decide(state.projectId, { type: 'RecordPlan', tasks, architect, at: this.now() });
  }

  private async cancelTaskRuns(state: ProjectState): Promise<void> {
    const by = state.endedBy ?? PROJECT_REACTOR_ACTOR;
    for (const task of state.tasks) {
      if (task.status !== 'cancelled' || !task.runId) continue;
      const outcome = await this.runOutcome(task.runId);
      if (outcome === null) await this.deps.cancelRun(task.runId, by, `project ${state.projectId} was cancelled`);
    }
  }

  /** 'missing': not launched yet; null: launched, not ended; else how it ended. */
  private async runOutcome(runId: string): Promise<RunOutcome | null | 'missing'> {
    const stream = toRunStreamId(runId);
    const head = await this.deps.store.streamRevision(stream);
    if (head === null) return 'missing';
    const [last] = await this.deps.store.readStream(stream, { fromRevision: head, maxCount: 1 });
    if (last?.type !== 'RunEnded') return null;
    // The run as its guarded fold has it: an end no attested decision caused is not an end.
    const state = await foldRunHistory(this.deps.store, runId, initialRunState(runId));
    if (!state.endedAt) return null;
    const ended = state.team.context.ended!;
    return { status: ended.status, ...(ended.reason ? { terminationReason: ended.reason } : {}) };
  }
}
