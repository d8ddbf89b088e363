import { SelfReviewError, selfReviewRule } from '../../../src/review-gate/domain/self-review';
import { decideSpawn } from '../../../src/team/domain/sub-agents';

const review = { executor: 'agent:executor:run1', launchedBy: 'user:ann', allowLauncherToReview: false };

describe('no self-review across the delegation chain', () => {
  it('given the executor\'s sub-agent, when it decides the executor\'s review, then it is refused as delegation_chain', () => {
    const decision = decideSpawn({}, { role: 'reviewer', task: 'review it' }, {
      runId: 'run1',
      parent: { agent: review.executor, depth: 0, tools: ['read_file'], phaseRole: 'executor' },
      toolUseId: 't1',
      at: '2026-01-01T00:00:00.000Z',
    });
    const identity = decision.ok ? decision.event.data.agent : '';
    expect(identity).toBe('agent:reviewer:run1/executor/1');
    expect(selfReviewRule(identity, review)).toBe('delegation_chain');
    expect(new SelfReviewError('delegation_chain').message).toBe('you may not decide this review');
  });

  it('given a nested sub-agent, then it is in the chain too; an agent of another run or another chain is not', () => {
    expect(selfReviewRule('agent:tester:run1/executor/1/2/1', review)).toBe('delegation_chain');
    expect(selfReviewRule('agent:coder:run2/executor/1', review)).toBeUndefined();
    expect(selfReviewRule('agent:reviewer:run1', review)).toBeUndefined();
    expect(selfReviewRule('agent:coder:run1/architect/1', review)).toBeUndefined();
  });

  it('given a sub-agent as the executor of the work, then its spawner is refused as well', () => {
    expect(selfReviewRule('agent:executor:run1', { ...review, executor: 'agent:coder:run1/executor/1' })).toBe('delegation_chain');
  });
});
