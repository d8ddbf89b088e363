import type { CommandBus, QueryBus } from '@nestjs/cqrs';
import { hasRole, type Identity } from '../../auth/identity';
import { MAY, type GuardedAction } from '../../auth/roles';
import type { EventStore, RecordedEvent } from '../../events/event-store/event-store.port';
import type { ProjectsService } from '../../projects/projects.service';
import type { ProjectView } from '../../projects/domain/project-decider';
import type { DecisionLogService } from '../../review-gate/decision-log/decision-log.providers';
import type { DecisionLogVerification } from '../../review-gate/decision-log/decision-log';
import { loadWorkspaceView } from '../../session-replay/workspace-view';
import type { WorkspaceChanges } from '../../session-replay/workspace-diff';
import { loadReviewView } from '../../review-gate/load-review-view';
import type { ReviewView } from '../../review-gate/review-view';
import { ForbiddenError } from '../../shared/errors';
import { LaunchRunCommand } from '../../team/commands/launch-run.command';
import type { LaunchResult } from '../../team/commands/launch';
import { toRunStreamId, type RunStatus } from '../../team/domain/run-events';
import { RunNotFoundError } from '../../team/domain/run-decider';
import { GetRunQuery, ListRunsQuery } from '../../team/queries/run.queries';
import type { RunSummary } from '../../team/runs/run-summary';
import type { RunsProjection } from '../../team/runs/runs.projection';
import { waitForRunToSettle, type WaitAnswer } from '../../team/runs/run-wait';
import { validatedProjectLaunch, validatedRunLaunch } from '../launch-input';

/**
 * What triad's MCP tools do, for one caller: the same commands, queries and reads as the HTTP
 * routes, each checked against the caller's roles by the same table (launching needs what
 * `POST /v1/runs` needs, reviews what `GET /v1/reviews` needs, the decision log what
 * `/v1/decisions` needs). Nothing here decides a review or a tool call: those stay with people.
 */

export interface TriadOperationsDeps {
  commands: CommandBus;
  queries: QueryBus;
  store: EventStore;
  projects: ProjectsService;
  runs: RunsProjection;
  decisions: DecisionLogService;
}

export interface PendingReview {
  reviewId: string;
  runId: string;
  iteration: number;
  openedAt: string;
  executor: string;
  goal: string;
  acceptanceCriteria: string[];
  launchedBy: string;
  lastVerdict?: RunSummary['lastVerdict'];
}

export class TriadOperations {
  constructor(
    private readonly deps: TriadOperationsDeps,
    readonly who: Identity,
  ) {}

  private may(action: GuardedAction, what: string): void {
    if (!hasRole(this.who, ...MAY[action])) throw new ForbiddenError(`${what} needs the role ${MAY[action].join(' or ')}`);
  }

  async launchRun(body: Record<string, unknown>): Promise<{ runId: string; acceptedAt: string }> {
    this.may('operateRuns', 'launching a run');
    const result = await this.deps.commands.execute<LaunchRunCommand, LaunchResult>(new LaunchRunCommand(validatedRunLaunch(body), this.who));
    return { runId: result.runId, acceptedAt: result.acceptedAt };
  }

  launchProject(body: Record<string, unknown>): Promise<{ projectId: string; acceptedAt: string }> {
    this.may('operateRuns', 'launching a project');
    return this.deps.projects.launch(validatedProjectLaunch(body), this.who);
  }

  listRuns(status: RunStatus | undefined, limit: number): Promise<RunSummary[]> {
    return this.deps.queries.execute(new ListRunsQuery(status, limit));
  }

  showRun(runId: string): Promise<RunSummary> {
    return this.deps.queries.execute(new GetRunQuery(runId));
  }

  showProject(projectId: string): Promise<ProjectView> {
    return this.deps.projects.get(projectId);
  }

  waitForRun(runId: string, timeoutMs: number): Promise<WaitAnswer> {
    return waitForRunToSettle(this.deps.store, runId, () => this.showRun(runId), timeoutMs);
  }

  /** A page of the run's events from `fromRevision`; `nextRevision` when there are more. */
  async runEvents(runId: string, fromRevision: number, limit: number): Promise<{ runId: string; events: RecordedEvent[]; nextRevision?: number }> {
    const stream = toRunStreamId(runId);
    if ((await this.deps.store.streamRevision(stream)) === null) throw new RunNotFoundError(runId);
    const page = await this.deps.store.readStream(stream, { fromRevision, maxCount: limit + 1 });
    const events = page.slice(0, limit);
    return { runId, events, ...(page.length > limit ? { nextRevision: page[limit].revision } : {}) };
  }

  /** What the executor changed in an iteration (default: the latest), against the iteration before (`GET /v1/runs/:id/workspace?diff=previous`). */
  async workspaceDiff(runId: string, iteration?: number): Promise<{ runId: string; iteration: number; submitted: boolean } & WorkspaceChanges> {
    const view = await loadWorkspaceView(this.deps.store, runId, { iteration, diff: 'previous' });
    return { runId, iteration: view.iteration, submitted: view.submitted, ...view.diff! };
  }

  async listReviews(): Promise<PendingReview[]> {
    this.may('review', 'listing reviews');
    await this.deps.runs.catchUp();
    return this.deps.runs
      .list({ status: 'awaiting_review' })
      .filter((r) => r.pendingReview)
      .map((r) => pendingReview(r));
  }

  /** A review: the work waiting (while it waits) and its decisions in the log. */
  /** One review as `GET /v1/reviews/:id` shows it: every iteration, the diffs, and whether this caller may decide it. */
  showReview(reviewId: string): Promise<ReviewView> {
    this.may('review', 'reading a review');
    return loadReviewView(this.deps.store, reviewId, { id: this.who.id, roles: this.who.roles });
  }

  verifyDecisions(since?: string): Promise<DecisionLogVerification> {
    this.may('audit', 'verifying the decision log');
    return this.deps.decisions.verify({ since });
  }
}

function pendingReview(r: RunSummary): PendingReview {
  const p = r.pendingReview!;
  return { reviewId: p.reviewId, runId: r.runId, iteration: p.iteration, openedAt: p.openedAt, executor: p.executor, goal: r.goal, acceptanceCriteria: r.acceptanceCriteria, launchedBy: r.launchedBy, lastVerdict: r.lastVerdict };
}
