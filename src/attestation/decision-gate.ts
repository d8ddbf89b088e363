import type { RecordedPlace } from './attestation';
import { decisionTrust } from './decision-trust';
import type { GateRefusal } from './gate-refusal';

export type { GateRefusal } from './gate-refusal';

/**
 * The guard every fold of a run puts in front of its machines: a decision event without a valid
 * attestation is never acted on, and neither is what only a decision may cause — a run ending
 * COMPLETED or REJECTED, or a rework after a rejection. A store writer who appends a forged
 * approval and a RunEnded leaves the run at its gate, and the fold says why. Pure.
 */

export interface GateGuard {
  /** The review open now (ReviewOpened), and the outcome of the last decision acted on for it. */
  reviewId?: string;
  outcome?: string;
  /** The refusals, oldest first (the last MAX_REFUSALS). */
  refused: GateRefusal[];
}

const MAX_REFUSALS = 20;

export const newGateGuard = (): GateGuard => ({ refused: [] });

const DECISIONS = new Set(['ReviewDecided', 'ToolApprovalDecided']);

/**
 * Judges one event of a run, recorded at `at`, given the team machine's state before it
 * (`teamState`); returns the refusal when the event must be skipped (and records it), else
 * undefined (and notes a decision).
 */
export function guardEvent(guard: GateGuard, teamState: string, event: { type: string; data: unknown }, at: RecordedPlace): GateRefusal | undefined {
  const d = (event.data ?? {}) as Record<string, unknown>;
  const position = at.position;
  let refusal: GateRefusal | undefined;
  if (DECISIONS.has(event.type)) {
    const problem = decisionTrust().refusal(event.type, event.data, at);
    const about = { decisionId: String(d.decisionId ?? d.approvalId ?? ''), decider: String(d.decider ?? ''), outcome: String(d.outcome ?? '') };
    if (problem) refusal = { type: event.type, position, problem, ...about };
    else if (event.type === 'ReviewDecided') {
      // Attested, but of another review than the one open (an earlier iteration's, copied here).
      if (guard.reviewId !== undefined && d.reviewId !== guard.reviewId) refusal = { type: event.type, position, problem: 'misplaced', ...about };
      else guard.outcome = String(d.outcome);
    }
  } else if (event.type === 'ReviewOpened' || event.type === 'ToolApprovalRequested') {
    // What a decision (or a timeout policy) acts on must be the server's too: a forged one would
    // have the server's own timers decide it.
    const problem = decisionTrust().refusal(event.type, event.data, at);
    if (problem) refusal = { type: event.type, position, problem };
    else if (event.type === 'ReviewOpened') {
      guard.reviewId = typeof d.reviewId === 'string' ? d.reviewId : undefined;
      guard.outcome = undefined;
    }
  } else if (event.type === 'RunForked') {
    // A fork starts from its parent's state, but no decision of the parent's decides the fork.
    guard.outcome = undefined;
  } else if (!caused(teamState, guard.outcome, event.type, d)) {
    refusal = { type: event.type, position, problem: 'no_decision' };
  }
  if (refusal) {
    guard.refused.push(refusal);
    if (guard.refused.length > MAX_REFUSALS) guard.refused.shift();
  }
  return refusal;
}

/** Whether an event that only a decision may cause has the decision it needs. */
function caused(teamState: string, outcome: string | undefined, type: string, d: Record<string, unknown>): boolean {
  if (type === 'RunEnded') {
    // By status as well as reason: a run "completed" for any stated reason needs the approval.
    if (d.reason === 'COMPLETED' || d.status === 'completed') return d.reason === 'COMPLETED' && (teamState === 'gateWaived' || (teamState === 'awaitingReview' && outcome === 'approved'));
    if (d.reason === 'REJECTED') return teamState === 'awaitingReview' && outcome === 'rejected';
    return true;
  }
  if (type === 'IterationStarted' && teamState === 'awaitingReview') return outcome === 'rejected';
  return true;
}
