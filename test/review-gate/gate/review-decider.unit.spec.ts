import {
  refusedDecider,
  ReviewNotFoundError,
  ReviewNotPendingError,
  ReviewTimeoutNotDueError,
} from '../../../src/review-gate/domain/review-decider';
import { SelfReviewError, selfReviewRule } from '../../../src/review-gate/domain/self-review';
import { nextAction } from '../../../src/team/domain/next-action';
import type { TeamRunEvent } from '../../../src/team/domain/run-events';
import { runStatus, terminationReason } from '../../../src/team/domain/run-state';
import {
  agent,
  approve,
  at,
  awaitingReview,
  EXECUTOR,
  fireTimeout,
  fold,
  given,
  human,
  iterationAtGate,
  LAUNCHER,
  reject,
  reviewIdOf,
  RUN_ID,
  CRITERIA,
} from './review-fixtures';

// The review gate's decider: decideReview(command, folded run) → events, pure.

const decided = (outcome: string, extra: Record<string, unknown> = {}) => ({
  type: 'ReviewDecided' as const,
  data: { decisionId: 'dec_1', reviewId: reviewIdOf(1), iteration: 1, outcome, executor: EXECUTOR, acceptanceCriteria: CRITERIA, artifactHash: 'sha256:artifact1', charterVersion: 'sha256:charter', ...extra },
});
const runEnded = (status: string, reason: string) => ({ type: 'RunEnded' as const, data: { status, reason } });

describe('review gate: approve', () => {
  it('approve → ReviewDecided(approved) and RunEnded(COMPLETED) in one decision', () => {
    const { state } = given(awaitingReview())
      .when(approve(human('bob'), { reason: 'looks right' }))
      .then([decided('approved', { decider: 'user:bob', deciderKind: 'human', reason: 'looks right', at: at(1000) }), runEnded('completed', 'COMPLETED')]);
    expect(runStatus(state)).toBe('completed');
    expect(terminationReason(state)).toBe('COMPLETED');
  });

  it('the decision snapshots the run: iteration, executor, criteria, artifact hash, charter version', () => {
    given(awaitingReview()).when(approve()).then(({ events }) => {
      const d = events[0].data as unknown as Record<string, unknown>;
      expect(Object.keys(d).sort()).toEqual(
        ['acceptanceCriteria', 'artifactHash', 'at', 'charterVersion', 'decider', 'deciderKind', 'decisionId', 'executor', 'iteration', 'outcome', 'reason', 'reviewId'].sort(),
      );
    });
  });
});

describe('review gate: reject', () => {
  it('reject with rework and iterations left → IterationStarted(human_rejected) carrying the feedback', () => {
    const { state } = given(awaitingReview({ maxIterations: 3 }))
      .when(reject(human('bob'), { reason: 'a.txt must end with a newline', rework: true }))
      .then([
        decided('rejected', { decider: 'user:bob', deciderKind: 'human', reason: 'a.txt must end with a newline', rework: true }),
        { type: 'IterationStarted', data: { iteration: 2, reason: 'human_rejected', findings: ['a.txt must end with a newline'], feedback: 'a.txt must end with a newline' } },
      ]);
    expect(runStatus(state)).toBe('executing');
    expect(String(state.team.value)).toBe('reworking');
  });

  it("the executor's next task message carries the human feedback", () => {
    const past = awaitingReview({ maxIterations: 3 });
    const { events, state } = given(past).when(reject(human('bob'), { reason: 'say "A" twice' })).then(() => undefined);
    expect(nextAction(state, Date.parse(at(2000)))).toEqual({ kind: 'startPhase', phase: 'executing', role: 'executor' });
    const phaseStarted: TeamRunEvent = {
      type: 'PhaseStarted',
      data: { phase: 'executing', role: 'executor', iteration: 2, agent: EXECUTOR, system: 'You are the executor.', tools: [], maxTurns: 10, at: at(2000) },
    };
    const next = nextAction(fold([...past, ...events, phaseStarted]), Date.parse(at(2000)));
    expect(next).toMatchObject({ kind: 'callModel', role: 'executor', turn: 1, retry: false, toolResultIds: ['tu_work_1'] });
    const task = (next as { content: Array<{ type: string; text: string }> }).content[0].text;
    expect(task).toContain('Iteration: 2');
    expect(task).toContain('Human reviewer feedback:\nsay "A" twice');
  });

  it('reject with no iteration left → RunEnded(REJECTED)', () => {
    const { state } = given(awaitingReview({ maxIterations: 1 }))
      .when(reject(human('bob'), { rework: true }))
      .then([decided('rejected', { rework: true }), runEnded('failed', 'REJECTED')]);
    expect(runStatus(state)).toBe('failed');
    expect(terminationReason(state)).toBe('REJECTED');
  });

  it('reject on the last iteration after a rework → RunEnded(REJECTED)', () => {
    const past = [
      ...awaitingReview({ maxIterations: 2 }),
      decided('rejected', { decider: 'user:bob', deciderKind: 'human', reason: 'again', rework: true, at: at(1) }) as TeamRunEvent,
      { type: 'IterationStarted', data: { iteration: 2, reason: 'human_rejected', findings: ['again'], feedback: 'again', at: at(1) } } as TeamRunEvent,
      ...iterationAtGate(2, { maxIterations: 2 }),
    ];
    given(past)
      .when(reject(human('bob'), { reviewId: reviewIdOf(2) }))
      .then([{ type: 'ReviewDecided', data: { reviewId: reviewIdOf(2), iteration: 2, outcome: 'rejected' } }, runEnded('failed', 'REJECTED')]);
  });

  it('rework: false → RunEnded(REJECTED) at once, iterations left or not', () => {
    const { events } = given(awaitingReview({ maxIterations: 3 }))
      .when(reject(human('bob'), { rework: false }))
      .then([decided('rejected', { rework: false }), runEnded('failed', 'REJECTED')]);
    expect((events[1].data as { message: string }).message).toContain('no rework requested');
  });
});

describe('review gate: no self-review', () => {
  const noIds = (err: Error) => {
    expect(err.message).toBe('you may not decide this review');
    for (const id of [RUN_ID, reviewIdOf(1), 'rev_', 'run_', 'user:', 'agent:', 'ann']) expect(err.message).not.toContain(id);
  };

  it('the executor of the work may not decide', () => {
    given(awaitingReview()).when(approve(agent(EXECUTOR))).thenThrows(SelfReviewError, (err) => {
      expect(err.rule).toBe('executor');
      noIds(err);
    });
  });

  it('an agent the executor spawned (below it in the delegation chain) may not decide', () => {
    given(awaitingReview()).when(reject(agent(`${EXECUTOR}/helper:1`))).thenThrows(SelfReviewError, (err) => {
      expect(err.rule).toBe('delegation_chain');
      noIds(err);
    });
    given(awaitingReview()).when(approve(agent(`${EXECUTOR}/helper:1/sub:2`))).thenThrows(SelfReviewError);
  });

  it('an agent above the executor in the chain (its parent) may not decide', () => {
    const parent = `agent:architect:${RUN_ID}`;
    given(awaitingReview({ executor: `${parent}/executor:1` }))
      .when(approve(agent(parent)))
      .thenThrows(SelfReviewError, (err) => {
        expect(err.rule).toBe('delegation_chain');
        noIds(err);
      });
  });

  it('the launcher may not decide by default', () => {
    given(awaitingReview()).when(approve(human('ann'))).thenThrows(SelfReviewError, (err) => {
      expect(err.rule).toBe('launcher');
      noIds(err);
    });
    given(awaitingReview()).when(reject(human('ann'), { rework: false })).thenThrows(SelfReviewError);
  });

  it('the launcher may decide when reviewPolicy.allowLauncherToReview is set', () => {
    given(awaitingReview({ allowLauncherToReview: true }))
      .when(approve(human('ann')))
      .then([decided('approved', { decider: LAUNCHER }), runEnded('completed', 'COMPLETED')]);
  });

  it('the executor stays refused even when the launcher is allowed', () => {
    given(awaitingReview({ allowLauncherToReview: true })).when(approve(agent(EXECUTOR))).thenThrows(SelfReviewError);
  });

  it('names that only look alike are not in the chain', () => {
    given(awaitingReview()).when(approve(agent(`${EXECUTOR}x`))).then([decided('approved'), runEnded('completed', 'COMPLETED')]);
    given(awaitingReview()).when(approve(human('anna'))).then([decided('approved'), runEnded('completed', 'COMPLETED')]);
  });

  it('the handler preflight applies the same rule (refusedDecider)', () => {
    const state = fold(awaitingReview());
    expect(refusedDecider(state, reviewIdOf(1), human('ann'))).toBe('launcher');
    expect(refusedDecider(state, reviewIdOf(1), agent(EXECUTOR))).toBe('executor');
    expect(refusedDecider(state, reviewIdOf(1), agent(`${EXECUTOR}/helper:1`))).toBe('delegation_chain');
    expect(refusedDecider(state, reviewIdOf(1), human('bob'))).toBeUndefined();
  });

  it('selfReviewRule, directly', () => {
    const review = { executor: 'agent:executor:r1', launchedBy: 'user:ann', allowLauncherToReview: false };
    expect(selfReviewRule('agent:executor:r1', review)).toBe('executor');
    expect(selfReviewRule('agent:executor:r1/helper:1', review)).toBe('delegation_chain');
    expect(selfReviewRule('agent:executor', { ...review, executor: 'agent:executor/x' })).toBe('delegation_chain');
    expect(selfReviewRule('user:ann', review)).toBe('launcher');
    expect(selfReviewRule('user:ann', { ...review, allowLauncherToReview: true })).toBeUndefined();
    expect(selfReviewRule('user:bob', review)).toBeUndefined();
    expect(selfReviewRule('agent:reviewer:r1', review)).toBeUndefined();
  });
});

describe('review gate: reviews that cannot be decided', () => {
  it('an already decided review is not pending', () => {
    const past = [...awaitingReview(), decided('approved', { decider: 'user:bob', deciderKind: 'human', reason: 'ok', at: at(1) }) as TeamRunEvent, runEnded('completed', 'COMPLETED') as TeamRunEvent];
    given(past).when(approve(human('carol'))).thenThrows(ReviewNotPendingError);
    given(past).when(reject(human('carol'))).thenThrows(ReviewNotPendingError);
  });

  it("an earlier iteration's review is not pending once a later one opened", () => {
    const past = [
      ...awaitingReview(),
      decided('rejected', { decider: 'user:bob', deciderKind: 'human', reason: 'again', rework: true, at: at(1) }) as TeamRunEvent,
      { type: 'IterationStarted', data: { iteration: 2, reason: 'human_rejected', findings: ['again'], feedback: 'again', at: at(1) } } as TeamRunEvent,
      ...iterationAtGate(2),
    ];
    given(past).when(approve(human('bob'), { reviewId: reviewIdOf(1) })).thenThrows(ReviewNotPendingError);
    given(past).when(approve(human('bob'), { reviewId: reviewIdOf(2) })).then([{ type: 'ReviewDecided' }, { type: 'RunEnded' }]);
  });

  it('a review that is still being reworked is not pending', () => {
    const past = [
      ...awaitingReview(),
      decided('rejected', { rework: true }) as TeamRunEvent,
      { type: 'IterationStarted', data: { iteration: 2, reason: 'human_rejected', findings: ['x'], feedback: 'x', at: at(1) } } as TeamRunEvent,
    ];
    given(past).when(approve()).thenThrows(ReviewNotPendingError);
  });

  it('unknown reviews are not found: another run, a later iteration, a malformed id, no run', () => {
    given(awaitingReview()).when(approve(human('bob'), { reviewId: 'rev_run_other_1' })).thenThrows(ReviewNotFoundError);
    given(awaitingReview()).when(approve(human('bob'), { reviewId: reviewIdOf(2) })).thenThrows(ReviewNotFoundError);
    given(awaitingReview()).when(approve(human('bob'), { reviewId: 'not-a-review' })).thenThrows(ReviewNotFoundError);
    given([]).when(approve()).thenThrows(ReviewNotFoundError);
  });

  it('a run that has not reached the gate yet has no review', () => {
    given(awaitingReview().slice(0, 3)).when(approve()).thenThrows(ReviewNotFoundError);
  });
});

describe('review gate: timeout policies (the system decides)', () => {
  it('auto_approve → approved by the system, with the policy, and the run completes', () => {
    const { state } = given(awaitingReview({ timeout: { policy: 'auto_approve', afterMs: 200 } }))
      .when(fireTimeout(at(200)))
      .then([
        { type: 'ReviewDecided', data: { decisionId: 'dec_timeout', outcome: 'approved', decider: 'system', deciderKind: 'system', policy: 'auto_approve' } },
        runEnded('completed', 'COMPLETED'),
      ]);
    expect(runStatus(state)).toBe('completed');
  });

  it('auto_deny → rejected by the system without rework: the run ends REJECTED', () => {
    const { state } = given(awaitingReview({ timeout: { policy: 'auto_deny', afterMs: 200 }, maxIterations: 3 }))
      .when(fireTimeout(at(500)))
      .then([
        { type: 'ReviewDecided', data: { outcome: 'rejected', rework: false, decider: 'system', deciderKind: 'system', policy: 'auto_deny' } },
        runEnded('failed', 'REJECTED'),
      ]);
    expect(terminationReason(state)).toBe('REJECTED');
  });

  it('escalate → one escalated decision; the run still awaits a human, and it does not fire twice', () => {
    const past = awaitingReview({ timeout: { policy: 'escalate', afterMs: 200 } });
    const { events, state } = given(past)
      .when(fireTimeout(at(200)))
      .then([{ type: 'ReviewDecided', data: { outcome: 'escalated', decider: 'system', deciderKind: 'system', policy: 'escalate' } }]);
    expect(runStatus(state)).toBe('awaiting_review');
    expect(String(state.team.value)).toBe('awaitingReview');
    given([...past, ...events]).when(fireTimeout(at(10_000))).thenThrows(ReviewTimeoutNotDueError);
    // A human can still decide the escalated review.
    given([...past, ...events]).when(approve(human('bob'))).then([{ type: 'ReviewDecided', data: { outcome: 'approved' } }, runEnded('completed', 'COMPLETED')]);
  });

  it('a timeout not yet due is refused', () => {
    given(awaitingReview({ timeout: { policy: 'auto_approve', afterMs: 200 } })).when(fireTimeout(at(199))).thenThrows(ReviewTimeoutNotDueError);
  });

  it("the 'wait' policy never fires", () => {
    given(awaitingReview()).when(fireTimeout(at(365 * 24 * 3600 * 1000))).thenThrows(ReviewTimeoutNotDueError);
  });

  it('a timeout on a review a human already decided is not pending', () => {
    const past = [...awaitingReview({ timeout: { policy: 'auto_approve', afterMs: 200 } }), decided('approved') as TeamRunEvent, runEnded('completed', 'COMPLETED') as TeamRunEvent];
    given(past).when(fireTimeout(at(300))).thenThrows(ReviewNotPendingError);
  });

  it('a new iteration gets its own timeout, even after an escalation in the previous one', () => {
    const o = { timeout: { policy: 'escalate' as const, afterMs: 200 } };
    const escalated = given(awaitingReview(o)).when(fireTimeout(at(200))).then(() => undefined).events;
    const past = [
      ...awaitingReview(o),
      ...escalated,
      decided('rejected', { decider: 'user:bob', deciderKind: 'human', reason: 'again', rework: true, at: at(300) }) as TeamRunEvent,
      { type: 'IterationStarted', data: { iteration: 2, reason: 'human_rejected', findings: ['again'], feedback: 'again', at: at(300) } } as TeamRunEvent,
      ...iterationAtGate(2, o, at(1000)),
    ];
    given(past).when(fireTimeout(at(1199), reviewIdOf(2))).thenThrows(ReviewTimeoutNotDueError);
    given(past).when(fireTimeout(at(1200), reviewIdOf(2))).then([{ type: 'ReviewDecided', data: { reviewId: reviewIdOf(2), outcome: 'escalated' } }]);
  });
});
