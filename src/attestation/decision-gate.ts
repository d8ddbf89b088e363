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
  /** The outcome of the last decision acted on since the current review opened. */
  outcome?: string;
  /** The refusals, oldest first (the last MAX_REFUSALS). */
  refused: GateRefusal[];
}

const MAX_REFUSALS = 20;

export const newGateGuard = (): GateGuard => ({ refused: [] });

const DECISIONS = new Set(['ReviewDecided', 'ToolApprovalDecided']);

/**
 * Judges one event of a run given the team machine's state before it (`teamState`); returns the
 * refusal when the event must be skipped (and records it), else undefined (and notes a decision).
 */
export function guardEvent(guard: GateGuard, teamState: string, event: { type: string; data: unknown }, position: number): GateRefusal | undefined {
  const d = event.data as Record<string, unknown>;
  let refusal: GateRefusal | undefined;
  if (DECISIONS.has(event.type)) {
    const problem = decisionTrust().refusal(event.type, event.data, position);
    if (problem) {
      refusal = { type: event.type, position, problem, decisionId: String(d.decisionId ?? d.approvalId ?? ''), decider: String(d.decider ?? ''), outcome: String(d.outcome ?? '') };
    } else if (event.type === 'ReviewDecided') guard.outcome = String(d.outcome);
  } else if (event.type === 'ReviewOpened') {
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
    if (d.reason === 'COMPLETED') return teamState === 'gateWaived' || (teamState === 'awaitingReview' && outcome === 'approved');
    if (d.reason === 'REJECTED') return teamState === 'awaitingReview' && outcome === 'rejected';
    return true;
  }
  if (type === 'IterationStarted' && teamState === 'awaitingReview') return outcome === 'rejected';
  return true;
}
