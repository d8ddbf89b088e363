import { mayDecide } from '../../../src/review-gate/review-view';

// Who may decide a review, as GET /v1/reviews/:id tells its caller: the review's state first, then
// the role, then the self-review rules (src/review-gate/domain/self-review.ts).

const open = { reviewId: 'rev_r1_2', standing: { kind: 'open' as const }, executor: 'agent:executor:r1', launchedBy: 'user:ann', allowLauncherToReview: false };

describe('mayDecide', () => {
  it('given a reviewer who did not launch the run, then they may', () => {
    expect(mayDecide({ id: 'user:bob', roles: ['reviewer'] }, open)).toEqual({ identity: 'user:bob', mayDecide: true });
  });

  it('given the launcher, then not, unless the policy lets the launcher review (names compare case-insensitively)', () => {
    expect(mayDecide({ id: 'user:ANN', roles: ['reviewer'] }, open)).toMatchObject({ mayDecide: false, reason: expect.stringContaining('you launched this run') });
    expect(mayDecide({ id: 'user:ann', roles: ['reviewer'] }, { ...open, allowLauncherToReview: true })).toMatchObject({ mayDecide: true });
  });

  it("given the executor or an agent of its delegation chain, then not, whatever its roles", () => {
    expect(mayDecide({ id: 'agent:executor:r1', roles: ['admin'] }, open)).toMatchObject({ mayDecide: false, reason: expect.stringContaining('the executor may not') });
    expect(mayDecide({ id: 'agent:executor:r1/coder-1', roles: ['admin'] }, open)).toMatchObject({ mayDecide: false, reason: expect.stringContaining('delegation chain') });
    expect(mayDecide({ id: 'agent:coder:r1/executor/1', roles: ['admin'] }, open)).toMatchObject({ mayDecide: false, reason: expect.stringContaining('delegation chain') });
  });

  it('given no reviewer role, then not; an admin may', () => {
    expect(mayDecide({ id: 'user:olga', roles: ['operator', 'auditor'] }, open)).toMatchObject({ mayDecide: false, reason: 'deciding a review needs the reviewer role (or admin)' });
    expect(mayDecide({ id: 'user:root', roles: ['admin'] }, open)).toMatchObject({ mayDecide: true });
  });

  it('given a review already decided, then nobody may, and the reason says by whom', () => {
    const decided = { ...open, standing: { kind: 'decided' as const, decision: { outcome: 'rejected' as const, decider: 'user:bob', at: '2026-12-01T00:00:00.000Z' } } };
    expect(mayDecide({ id: 'user:carol', roles: ['reviewer'] }, decided)).toEqual({
      identity: 'user:carol',
      mayDecide: false,
      reason: 'review rev_r1_2 was already decided: rejected by user:bob at 2026-12-01T00:00:00.000Z',
    });
  });
});
