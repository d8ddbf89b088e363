import { afterFailure, BREAKER_THRESHOLD, CLOSED_BREAKER, errorSignature, isTripped, normaliseErrorMessage, type BreakerState } from '../../../src/team/domain/resilience/circuit-breaker';
import type { TeamRunEvent } from '../../../src/team/domain/run-events';
import { given, modelCallCompleted, modelCallStarted, phaseStarted, runLaunched, toolUse } from '../machines/given-when-then';

// The same-error circuit breaker, given / when / then: pure over failures, then over the fold.

const failure = (kind: string, message: string, status?: number) => ({ kind, message, ...(status !== undefined ? { status } : {}) });

function givenFailures(...failures: Array<{ kind: string; message: string; status?: number }>) {
  let state: BreakerState = CLOSED_BREAKER;
  for (const f of failures) state = afterFailure(state, errorSignature(f));
  return state;
}

describe('circuit breaker (pure)', () => {
  it('given the same signature three times in a row, then it trips', () => {
    const s = givenFailures(failure('server', 'Internal server error', 500), failure('server', 'Internal server error', 500), failure('server', 'Internal server error', 500));
    expect(s).toEqual({ signature: 'server/500/internal server error', count: 3 });
    expect(isTripped(s)).toBe(true);
    expect(BREAKER_THRESHOLD).toBe(3);
  });

  it('given two of the same, then a different error, then the count starts over', () => {
    const s = givenFailures(failure('server', 'boom', 500), failure('server', 'boom', 500), failure('overloaded', 'Overloaded', 529));
    expect(s).toEqual({ signature: 'overloaded/529/overloaded', count: 1 });
    expect(isTripped(s)).toBe(false);
  });

  it('given alternating errors, then it never trips', () => {
    const a = failure('rate_limited', 'slow down', 429);
    const b = failure('overloaded', 'Overloaded', 529);
    expect(isTripped(givenFailures(a, b, a, b, a, b))).toBe(false);
  });

  it('the signature is kind + status + the message with its variable parts blanked', () => {
    expect(errorSignature(failure('rate_limited', 'Anthropic API HTTP 429 rate_limit_error: retry in 3 s (req_011CXyz)', 429))).toBe(
      errorSignature(failure('rate_limited', 'Anthropic API HTTP 429 rate_limit_error: retry in 12 s (req_011CAbc)', 429)),
    );
    expect(errorSignature(failure('server', 'x', 500))).not.toBe(errorSignature(failure('server', 'x', 502)));
    expect(errorSignature(failure('server', 'x', 500))).not.toBe(errorSignature(failure('timeout', 'x', 500)));
    expect(errorSignature(failure('connection', 'socket hang up'))).toBe('connection/-/socket hang up');
    expect(normaliseErrorMessage('  Request 3f2b9c1e-1111-2222-3333-444455556666   FAILED  ')).toBe('request * failed');
  });
});

describe('circuit breaker (folded from ModelCallFailed)', () => {
  const start: TeamRunEvent[] = [runLaunched(), phaseStarted('planning'), modelCallStarted('architect', 1)];
  const failed = (attempt: number, kind = 'server', message = 'Internal server error', status = 500): TeamRunEvent => ({
    type: 'ModelCallFailed',
    data: { role: 'architect', turn: 1, callId: 'call_architect_1', attempt, kind, message, status, retryInMs: 1 },
  });

  it('given three identical failures, then the next action ends the run ERROR naming the signature', () => {
    given(start)
      .when(failed(1), failed(2), failed(3))
      .then(({ state, next }) => {
        expect(state.resilience.breaker).toEqual({ signature: 'server/500/internal server error', count: 3 });
        expect(next).toEqual({ kind: 'end', reason: 'ERROR', message: 'circuit breaker: the same model error 3 times in a row (server/500/internal server error)' });
      });
  });

  it('given two identical failures and a different one, then the call is retried', () => {
    given(start)
      .when(failed(1), failed(2), failed(3, 'overloaded', 'Overloaded', 529))
      .then({ next: { kind: 'callModel', retry: true } });
  });

  it('given failures and then a completed call, then the count is back to zero', () => {
    given(start)
      .when(failed(1), failed(2), modelCallCompleted('architect', 1, [toolUse('tu_1', 'list_files')]))
      .then(({ state }) => expect(state.resilience.breaker).toEqual({ count: 0 }));
  });
});
