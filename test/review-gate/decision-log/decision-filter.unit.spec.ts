import { InvalidDecisionFilterError, parseDecisionFilter, parseInstant } from '../../../src/review-gate/decision-log/decision-filter';

describe('decision log filters', () => {
  it('normalises times to the form decidedAt has (UTC, milliseconds)', () => {
    expect(parseInstant('from', '2025-03-01')).toBe('2025-03-01T00:00:00.000Z');
    expect(parseInstant('from', '2025-03-01T10:00:00+02:00')).toBe('2025-03-01T08:00:00.000Z');
    expect(parseInstant('from', '2025-03-01T10:00Z')).toBe('2025-03-01T10:00:00.000Z');
    expect(parseInstant('to', '2025-03-01T10:00:00.123456Z')).toBe('2025-03-01T10:00:00.123Z');
  });

  it.each(['yesterday', '2025-02-30', '2025-13-01', '2025-01-01T10:00:00', '2025-01-01T25:00:00Z', '1700000000000', ''])('refuses %j', (raw) => {
    expect(() => parseInstant('from', raw)).toThrow(InvalidDecisionFilterError);
  });

  it('keeps run and decider, checks the outcome and the order of from and to', () => {
    expect(parseDecisionFilter({ runId: 'run_1', decider: 'system', outcome: 'waived', from: '2025-01-01', to: '2025-01-02' })).toEqual({
      runId: 'run_1',
      decider: 'system',
      outcome: 'waived',
      from: '2025-01-01T00:00:00.000Z',
      to: '2025-01-02T00:00:00.000Z',
    });
    expect(parseDecisionFilter({})).toEqual({});
    expect(() => parseDecisionFilter({ outcome: 'APPROVED' })).toThrow(/outcome must be one of approved, rejected, escalated, waived/);
    expect(() => parseDecisionFilter({ from: '2025-01-02', to: '2025-01-01' })).toThrow(/from must not be after to/);
    expect(() => parseDecisionFilter({ runId: ' ' })).toThrow(/runId/);
  });

  it('kind: review or tool_approval; a user decider is normalised (names are case-insensitive)', () => {
    expect(parseDecisionFilter({ kind: 'tool_approval', decider: 'USER:Alice' })).toEqual({ kind: 'tool_approval', decider: 'user:alice' });
    expect(parseDecisionFilter({ kind: 'review', decider: 'system' })).toEqual({ kind: 'review', decider: 'system' });
    expect(() => parseDecisionFilter({ kind: 'approval' })).toThrow(/kind must be one of review, tool_approval/);
  });
});
