import { API_KEYS_STREAM, foldApiKeys } from '../auth/keys/api-key-events';
import { normaliseName } from '../auth/names';
import type { ReviewDecidedData, ToolApprovalDecidedData } from '../team/domain/run-events';
import { parseReviewId } from '../team/domain/review-id';
import { parseApprovalId } from '../team/domain/approval-id';
import { ATTESTED_EVENT_TYPES, type AttestationProblem } from './attestation';
import type { KeyTrust } from './decision-trust';
import { isPersonalSignature, personalSignatureProblem, type DecisionStatement, type PersonalSignatureProblem, type WebAuthnVerifier } from './personal-signature';

/**
 * Checks every attested event — decisions, key registrations — against a trust: the server's
 * attestation on each, and the person's own signature where a decision carries one. One function
 * for the store's `verify` and for a bundle verified on another machine. Pure but for crypto.
 */

export interface AttestationIssue {
  position: number;
  type: string;
  /** A decision's id (review decision or approval id), a key's name, or a signing key's id. */
  id: string;
  /** `server`: the attestation; `person`: the decider's own signature. */
  of: 'server' | 'person';
  problem: AttestationProblem | PersonalSignatureProblem;
}

export interface AttestationReport {
  ok: boolean;
  /** Events of attested types checked. */
  checked: number;
  /** Decisions carrying a personal signature that verified. */
  personallySigned: number;
  /** Unsigned events recorded before the store's signing began (acted on as before; not proof of anything). */
  beforeSigning: number;
  /** Where the store's signing began (its first signing-key registration), when it did. */
  signingSince?: number;
  issues: AttestationIssue[];
}

/** Issues listed at most (the count of each problem is complete). */
const MAX_ISSUES = 1000;

export type CheckedEvent = { type: string; streamId: string; position: number; revision: number; data: unknown };

export async function checkAttestations(events: readonly CheckedEvent[], trust: KeyTrust, webauthn: WebAuthnVerifier): Promise<AttestationReport> {
  const report: AttestationReport = { ok: true, checked: 0, personallySigned: 0, beforeSigning: 0, issues: [], ...(trust.requiredFrom > 0 ? { signingSince: trust.requiredFrom } : {}) };
  const keyEvents = events.filter((e) => e.streamId === API_KEYS_STREAM);
  const people = foldApiKeys(keyEvents, trust).publicKeys;
  const issue = (i: AttestationIssue) => {
    report.ok = false;
    if (report.issues.length < MAX_ISSUES) report.issues.push(i);
  };
  for (const e of events) {
    if (!ATTESTED_EVENT_TYPES.has(e.type)) continue;
    report.checked++;
    const id = idOf(e);
    const problem = trust.refusal(e.type, e.data, e);
    const unsigned = (e.data as { attestation?: unknown }).attestation === undefined;
    if (problem) issue({ position: e.position, type: e.type, id, of: 'server', problem });
    else if (unsigned) report.beforeSigning++;
    const signature = (e.data as { signature?: unknown }).signature;
    const statement = statementOf(e);
    if (signature === undefined || !statement) continue;
    const decider = String((e.data as { decider?: unknown }).decider ?? '');
    const personal = isPersonalSignature(signature)
      ? await personalSignatureProblem(signature, statement, normaliseName(decider.replace(/^user:/, '')), people, e.position, webauthn)
      : 'bad_signature';
    if (personal) issue({ position: e.position, type: e.type, id, of: 'person', problem: personal });
    else report.personallySigned++;
  }
  return report;
}

function idOf(e: CheckedEvent): string {
  const d = e.data as Record<string, unknown>;
  return String(d.decisionId ?? d.approvalId ?? d.keyId ?? d.name ?? e.streamId);
}

/** The statement a decision event's personal signature must sign, rebuilt from the event alone. */
export function statementOf(e: { type: string; data: unknown }): DecisionStatement | undefined {
  if (e.type === 'ReviewDecided') {
    const d = e.data as ReviewDecidedData;
    if (d.outcome !== 'approved' && d.outcome !== 'rejected') return undefined;
    return { kind: 'review', runId: parseReviewId(d.reviewId)?.runId ?? '', reviewId: d.reviewId, iteration: d.iteration, artifactHash: d.artifactHash, outcome: d.outcome, reason: d.reason };
  }
  if (e.type === 'ToolApprovalDecided') {
    const d = e.data as ToolApprovalDecidedData;
    return { kind: 'tool_approval', runId: parseApprovalId(d.approvalId)?.runId ?? '', approvalId: d.approvalId, inputHash: d.inputHash ?? '', outcome: d.outcome, reason: d.reason };
  }
  return undefined;
}
