/** A refused event of a run, as run views show it. No imports: the console's bundle uses it. */

/** The problems of an attestation (attestation.ts), or an event no attested decision allows. */
export type GateRefusalProblem = 'unsigned' | 'bad_signature' | 'unknown_signer' | 'revoked_signer' | 'no_decision';

export interface GateRefusal {
  /** The refused event's type and store position. */
  type: string;
  position: number;
  problem: GateRefusalProblem;
  /** For a decision: its id (review decision or approval id), decider and outcome, as the event claims them. */
  decisionId?: string;
  decider?: string;
  outcome?: string;
}

/** One line for a run view: why the run still waits although the store holds a decision. */
export function describeRefusal(r: GateRefusal): string {
  if (r.problem === 'no_decision') return `${r.type} at position ${r.position} ignored: no attested decision allows it`;
  const what = r.type === 'ReviewDecided' ? 'review decision' : 'tool approval decision';
  return `${what} ${r.decisionId} (${r.outcome} by ${r.decider}) at position ${r.position} ignored: ${r.problem.replace('_', ' ')}`;
}
