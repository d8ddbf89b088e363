import type { RecordedEvent } from '../events/event-store/event-store.port';
import type { HumanRole } from '../auth/roles';
import { MAY } from '../auth/roles';
import { evolve, initialRunState, runStatus, terminationReason } from '../team/domain/run-state';
import type {
  IterationStartedData,
  ReviewDecidedData,
  ReviewOpenedData,
  RunStatus,
  TeamRunEvent,
  TerminationReason,
  Verdict,
  VerdictSubmittedData,
  WorkSubmittedData,
} from '../team/domain/run-events';
import type { WorkspaceSnapshot } from '../session-replay/workspace-history';
import { diffBudget, fileEntries, workspaceChanges, type WorkspaceChanges, type WorkspaceFileEntry } from '../session-replay/workspace-diff';
import { notPendingMessage, reviewStanding, type ReviewStanding } from './domain/review-history';
import { selfReviewRule, type SelfReviewRule } from './domain/self-review';
import { parseReviewId } from '../team/domain/review-id';

/**
 * `GET /v1/reviews/:id` and `triad review show`: one review with everything its reviewer reads —
 * the run, its criteria, every iteration up to the review's (how it began, the work submitted, the
 * reviewer agent's verdict and findings, the human decision on it, the files and their diffs
 * against the iteration before and against the start), who may decide it, and whether the caller
 * may. Computed from the run's events alone (and the workspace rebuilt from them), never stored.
 * Pure. Events the decision gate refuses (a decision without a valid attestation, and what only a
 * decision may cause) are left out, as every fold of the run leaves them out.
 */

export interface ReviewIteration {
  iteration: number;
  /** How it began: the launch, the reviewer agent's findings, or a human's rejection (who, when, why). */
  startedBy:
    | { reason: 'launch' }
    | { reason: 'changes_requested'; findings: string[]; at: string }
    | { reason: 'human_rejected'; by?: string; feedback: string; at: string };
  work?: { summary: string; files: string[]; at: string };
  /** The reviewer agent's verdict on this iteration's work. */
  verdict?: { verdict: Verdict; findings: string[]; summary: string; at: string };
  /** The human gate, when the verdict opened it. */
  review?: { reviewId: string; openedAt: string; artifactHash: string };
  /** Decisions on that review, oldest first (an escalation leaves it open for a human). */
  decisions: Array<Pick<ReviewDecidedData, 'outcome' | 'decider' | 'deciderKind' | 'reason' | 'at'> & { rework?: boolean; policy?: string }>;
  /** The workspace as the executor left it at the end of the iteration. */
  files: WorkspaceFileEntry[];
  /**
   * What changed since the iteration before (or the start, for the first), and — for the iteration
   * under review only — since the start. All of a view's diffs share one budget (DIFF_LIMITS).
   */
  diff: { previous: WorkspaceChanges; start?: WorkspaceChanges };
}

export interface MayDecide {
  identity: string;
  mayDecide: boolean;
  /** Why not, when not. */
  reason?: string;
}

export interface ReviewView {
  reviewId: string;
  runId: string;
  iteration: number;
  /** `open`: waits for a decision; else decided, superseded by a later review, or the run ended. */
  state: ReviewStanding['kind'];
  run: { runId: string; goal: string; launchedBy: string; status: RunStatus; terminationReason?: TerminationReason; maxIterations: number };
  acceptanceCriteria: string[];
  executor: string;
  artifactHash: string;
  openedAt: string;
  iterations: ReviewIteration[];
  /** Who may decide: the roles, and who may not whatever their roles. */
  deciders: { roles: HumanRole[]; allowLauncherToReview: boolean; excluded: Array<{ identity: string; rule: SelfReviewRule }> };
  /** The caller (absent when no caller is named). */
  caller?: MayDecide;
  /** Tool calls whose effects on the workspace the events do not record, by tool. */
  notReproduced: Record<string, number>;
}

const DECIDING_ROLES: HumanRole[] = [...MAY.review, 'admin'];

const REASONS: Record<SelfReviewRule | 'role', string> = {
  executor: 'you did this work: the executor may not review it',
  delegation_chain: "you are in the executor's delegation chain: agents that did the work may not review it",
  launcher: 'you launched this run, and its review policy does not let the launcher review it',
  role: 'deciding a review needs the reviewer role (or admin)',
};

/**
 * `undefined` when the run has no such review (it never reached the gate). `workspace`: the
 * workspace at the end of each iteration (workspace-history.ts, contents resolved).
 */
export function reviewView(
  events: readonly RecordedEvent[],
  reviewId: string,
  workspace: { iterations: readonly WorkspaceSnapshot[]; notReproduced: Record<string, number> },
  caller?: { id: string; roles: readonly HumanRole[] },
): ReviewView | undefined {
  const parsed = parseReviewId(reviewId);
  if (!parsed) return undefined;
  const state = initialRunState(parsed.runId);
  const kept: RecordedEvent[] = [];
  const iterations = new Map<number, Omit<ReviewIteration, 'files' | 'diff'>>();
  const at = (n: number) => {
    let it = iterations.get(n);
    if (!it) iterations.set(n, (it = { iteration: n, startedBy: { reason: 'launch' }, decisions: [] }));
    return it;
  };
  let lastHumanRejection: ReviewDecidedData | undefined;
  let opened: ReviewOpenedData | undefined;
  for (const e of events) {
    const before = state.gate.refused.at(-1);
    evolve(state, e as unknown as TeamRunEvent, e);
    if (state.gate.refused.at(-1) !== before) continue;
    kept.push(e);
    switch (e.type) {
      case 'RunLaunched':
        at(1);
        break;
      case 'IterationStarted': {
        const d = e.data as IterationStartedData;
        at(d.iteration).startedBy =
          d.reason === 'human_rejected'
            ? { reason: 'human_rejected', ...(lastHumanRejection ? { by: lastHumanRejection.decider } : {}), feedback: d.feedback ?? d.findings.join('\n'), at: d.at }
            : { reason: 'changes_requested', findings: d.findings, at: d.at };
        break;
      }
      case 'WorkSubmitted': {
        const d = e.data as WorkSubmittedData;
        at(d.iteration).work = { summary: d.summary, files: d.files, at: d.at };
        break;
      }
      case 'VerdictSubmitted': {
        const d = e.data as VerdictSubmittedData;
        at(d.iteration).verdict = { verdict: d.verdict, findings: d.findings, summary: d.summary, at: d.at };
        break;
      }
      case 'ReviewOpened': {
        const d = e.data as ReviewOpenedData;
        at(d.iteration).review = { reviewId: d.reviewId, openedAt: d.at, artifactHash: d.artifactHash };
        if (d.reviewId === reviewId) opened = d;
        break;
      }
      case 'ReviewDecided': {
        const d = e.data as ReviewDecidedData;
        at(d.iteration).decisions.push({
          outcome: d.outcome,
          decider: d.decider,
          deciderKind: d.deciderKind,
          reason: d.reason,
          at: d.at,
          ...(d.rework !== undefined ? { rework: d.rework } : {}),
          ...(d.policy ? { policy: d.policy } : {}),
        });
        if (d.outcome === 'rejected') lastHumanRejection = d;
        break;
      }
    }
  }
  const launched = state.launched;
  if (!launched || !opened) return undefined;
  const { runId } = parsed;
  const executor = opened.executor;

  const snapshots = new Map(workspace.iterations.map((s) => [s.iteration, s]));
  const shown = [...iterations.values()].filter((i) => i.iteration <= parsed.iteration).sort((a, b) => a.iteration - b.iteration);
  // The files at the end of each iteration (an iteration that wrote none keeps the one before's).
  const filesAt: Array<WorkspaceSnapshot['files']> = [];
  for (const it of shown) filesAt.push(snapshots.get(it.iteration)?.files ?? filesAt.at(-1) ?? []);
  // One budget for the whole view, spent on the iteration under review first, so that the diffs a
  // reviewer reads first are the last to be cut; the diff against the start is that iteration's alone.
  const budget = diffBudget();
  const diffs: Array<ReviewIteration['diff']> = [];
  for (let k = shown.length - 1; k >= 0; k--) {
    const prior = k > 0 ? { iteration: shown[k - 1].iteration, files: filesAt[k - 1] } : undefined;
    diffs[k] = {
      previous: workspaceChanges(filesAt[k], prior, 'previous', budget),
      ...(k === shown.length - 1 ? { start: workspaceChanges(filesAt[k], undefined, 'start', budget) } : {}),
    };
  }
  const withFiles = shown.map((it, k): ReviewIteration => ({ ...it, files: fileEntries(filesAt[k]), diff: diffs[k] }));

  const policy = launched.reviewPolicy;
  const standing = reviewStanding(kept, reviewId);
  const excluded: ReviewView['deciders']['excluded'] = [
    { identity: executor, rule: 'executor' },
    { identity: `${executor}/*`, rule: 'delegation_chain' },
    ...(policy.allowLauncherToReview ? [] : [{ identity: launched.launchedBy, rule: 'launcher' as const }]),
  ];
  return {
    reviewId,
    runId,
    iteration: parsed.iteration,
    state: standing.kind,
    run: {
      runId,
      goal: launched.goal,
      launchedBy: launched.launchedBy,
      status: runStatus(state),
      ...(terminationReason(state) ? { terminationReason: terminationReason(state) } : {}),
      maxIterations: launched.maxIterations,
    },
    acceptanceCriteria: launched.acceptanceCriteria,
    executor,
    artifactHash: opened.artifactHash,
    openedAt: opened.at,
    iterations: withFiles,
    deciders: { roles: DECIDING_ROLES, allowLauncherToReview: policy.allowLauncherToReview, excluded },
    ...(caller ? { caller: mayDecide(caller, { reviewId, standing, executor, launchedBy: launched.launchedBy, allowLauncherToReview: policy.allowLauncherToReview }) } : {}),
    notReproduced: workspace.notReproduced,
  };
}

/** Whether this caller may decide the review now, and if not why: its state first, then the role, then who they are. */
export function mayDecide(
  caller: { id: string; roles: readonly HumanRole[] },
  review: { reviewId: string; standing: ReviewStanding; executor: string; launchedBy: string; allowLauncherToReview: boolean },
): MayDecide {
  const no = (reason: string): MayDecide => ({ identity: caller.id, mayDecide: false, reason });
  if (review.standing.kind !== 'open') return no(notPendingMessage(review.reviewId, review.standing));
  if (!caller.roles.some((r) => DECIDING_ROLES.includes(r))) return no(REASONS.role);
  const rule = selfReviewRule(caller.id, review);
  if (rule) return no(REASONS[rule]);
  return { identity: caller.id, mayDecide: true };
}
