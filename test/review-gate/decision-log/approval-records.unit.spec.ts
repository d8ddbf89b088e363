import { canonicalJson, sha256Hex } from '../../../src/shared/canonical-json';
import { hashRecord, payloadOf, recordFrom } from '../../../src/review-gate/decision-log/chain';
import { verifyChain, verifyInOrder } from '../../../src/review-gate/decision-log/chain-verification';
import type { DecisionRecord } from '../../../src/review-gate/decision-log/decision-record';
import { approvalEvent, chainOf, decisionEvent, expectationOf } from './fixtures';

// Tool approvals in the decision log's chain: their records, and why review records written
// before them keep their hashes.

const V1_FIELDS = ['seq', 'decisionId', 'runId', 'reviewId', 'iteration', 'executor', 'decider', 'deciderKind', 'outcome', 'reason', 'policy', 'acceptanceCriteria', 'artifactHash', 'charterVersion', 'decidedAt', 'position', 'prevHash'];

describe('tool approvals in the chain', () => {
  it("a review record's hash is still the sha256 of the canonical JSON of the fields records always had", () => {
    for (const e of [decisionEvent(1), decisionEvent(2, { policy: 'auto_approve', decider: 'system', deciderKind: 'system' })]) {
      const r = recordFrom(e, null);
      const v1 = Object.fromEntries(V1_FIELDS.filter((k) => (r as unknown as Record<string, unknown>)[k] !== undefined).map((k) => [k, (r as unknown as Record<string, unknown>)[k]]));
      expect(r.hash).toBe(sha256Hex(canonicalJson(v1)));
      expect(r.kind).toBeUndefined();
    }
  });

  it('given a ToolApprovalDecided event, then its record says which call, who decided, and how', () => {
    const human = payloadOf(approvalEvent(1));
    expect(human).toEqual({
      kind: 'tool_approval',
      decisionId: 'apr_run_1.tu_1',
      approvalId: 'apr_run_1.tu_1',
      runId: 'run_1',
      executor: 'agent:executor:run_1',
      toolName: 'run_command',
      inputHash: `sha256:${'1'.padStart(64, 'b')}`,
      risk: 'high',
      role: 'executor',
      turn: 2,
      decider: 'user:Bob',
      deciderKind: 'human',
      outcome: 'approved',
      reason: 'tool reason 1',
      decidedAt: '2025-01-01T00:01:30.000Z',
      position: 17,
    });
    const timedOut = payloadOf(approvalEvent(2, { decider: 'system', deciderKind: 'system', policy: 'auto_deny' }));
    expect(timedOut).toMatchObject({ outcome: 'rejected', decider: 'system', deciderKind: 'system', policy: 'auto_deny' });
  });

  it('an approval record hashes every field it has (the review template does not apply)', () => {
    const r = recordFrom(approvalEvent(1), null);
    const { hash, ...content } = r;
    expect(hash).toBe(sha256Hex(canonicalJson(content)));
  });

  it('a log of reviews and approvals verifies by the in-order check and by the complete check', () => {
    const events = [decisionEvent(1), approvalEvent(1), approvalEvent(2), decisionEvent(3)];
    const records = chainOf(events);
    expect(verifyInOrder(events, records)).toEqual({ ok: true, checked: 4 });
    expect(verifyChain(records, expectationOf(events))).toEqual({ ok: true, checked: 4 });
  });

  it('changes to an approval record, or approval fields added to a review record, are found even when re-hashed', () => {
    const events = [decisionEvent(1), approvalEvent(1), decisionEvent(3)];
    const rehash = (records: DecisionRecord[], i: number, change: Partial<DecisionRecord>): DecisionRecord[] => {
      const out = [...records];
      const changed = { ...out[i], ...change };
      out[i] = { ...changed, hash: hashRecord(changed) };
      return out;
    };
    for (const [i, change] of [
      [1, { toolName: 'read_file' }],
      [1, { outcome: 'rejected' }],
      [1, { inputHash: undefined }],
      [0, { toolName: 'run_command' }],
      [0, { kind: 'tool_approval' }],
    ] as Array<[number, Partial<DecisionRecord>]>) {
      const tampered = rehash(chainOf(events), i, change);
      expect(verifyInOrder(events, tampered)).toBeUndefined();
      expect(verifyChain(tampered, expectationOf(events))).toMatchObject({ ok: false, firstBadRecord: { seq: i + 1, problem: 'altered' } });
    }
  });
});
