import { recordFrom, type DecisionEvent } from '../../../src/review-gate/decision-log/chain';
import { expectationFrom } from '../../../src/review-gate/decision-log/chain-verification';
import type { DecisionRecord } from '../../../src/review-gate/decision-log/decision-record';
import type { ReviewDecidedData, ToolApprovalDecidedData } from '../../../src/team/domain/run-events';

/** A ReviewDecided event as the store hands it out (position 10·i + 3, run `run_i`). */
export function decisionEvent(i: number, data: Partial<ReviewDecidedData> = {}): DecisionEvent {
  const runId = `run_${i}`;
  return {
    type: 'ReviewDecided',
    streamId: `run-${runId}`,
    position: i * 10 + 3,
    metadata: { runId },
    data: {
      decisionId: `dec-${i}`,
      reviewId: `rev_${runId}_1`,
      iteration: 1,
      outcome: i % 3 === 0 ? 'rejected' : 'approved',
      reason: `reason ${i}: the files match the criteria, "quoted", with, commas`,
      executor: `agent:executor:${runId}`,
      decider: i % 2 === 0 ? 'user:ann' : 'user:bob',
      deciderKind: 'human',
      acceptanceCriteria: ['file hello.txt contains "Hello"', 'tests | pass'],
      artifactHash: `sha256:${String(i).padStart(64, 'a')}`,
      charterVersion: `sha256:${'c'.repeat(64)}`,
      at: new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString(),
      ...data,
    } satisfies ReviewDecidedData,
  };
}

export function decisionEvents(n: number): DecisionEvent[] {
  return Array.from({ length: n }, (_, i) => decisionEvent(i + 1));
}

/** The records of events, chained from genesis. */
export function chainOf(events: DecisionEvent[]): DecisionRecord[] {
  const out: DecisionRecord[] = [];
  for (const e of events) out.push(recordFrom(e, out[out.length - 1]));
  return out;
}

/** Re-chains records (new seq, prevHash and hash) as an attacker covering their tracks would. */
export function rechain(records: DecisionRecord[]): DecisionRecord[] {
  const out: DecisionRecord[] = [];
  for (const r of records) {
    const { seq: _s, prevHash: _p, hash: _h, ...payload } = r;
    const prev = out[out.length - 1];
    const event: DecisionEvent = {
      type: 'ReviewDecided',
      streamId: `run-${payload.runId}`,
      position: payload.position,
      data: { ...payload, at: payload.decidedAt },
    };
    out.push(recordFrom(event, prev));
  }
  return out;
}

export function expectationOf(events: DecisionEvent[]) {
  return expectationFrom(events);
}

/** A ToolApprovalDecided event as the store hands it out (position 10·i + 7, run `run_i`). */
export function approvalEvent(i: number, data: Partial<ToolApprovalDecidedData> = {}): DecisionEvent {
  const runId = `run_${i}`;
  return {
    type: 'ToolApprovalDecided',
    streamId: `run-${runId}`,
    position: i * 10 + 7,
    metadata: { runId },
    data: {
      approvalId: `apr_${runId}.tu_${i}`,
      role: 'executor',
      turn: 2,
      toolUseId: `tu_${i}`,
      name: 'run_command',
      outcome: i % 2 === 0 ? 'rejected' : 'approved',
      reason: `tool reason ${i}`,
      decider: 'user:Bob',
      deciderKind: 'human',
      inputHash: `sha256:${String(i).padStart(64, 'b')}`,
      risk: 'high',
      at: new Date(Date.UTC(2025, 0, 1) + i * 60_000 + 30_000).toISOString(),
      ...data,
    } satisfies ToolApprovalDecidedData,
  };
}
