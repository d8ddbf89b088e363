import { attestationProblem, type AttestationProblem, type KnownKey } from './attestation';

/**
 * Which decisions a process acts on: those attested by a key it trusts. Pure, over the keys the
 * shell gives it (SigningModule installs the process's trust at start, before any run is folded).
 *
 * One trust per process, not one per fold: a run's state is folded in a dozen places (driver,
 * command handlers, replay, read models), and every one of them must refuse the same forgeries.
 * Until a trust is installed, nothing is trusted — a fold outside an app refuses every decision
 * rather than accept a forged one.
 */
export interface DecisionTrust {
  /** Why an event of an attested type is not to be acted on; undefined: act on it. */
  refusal(type: string, data: unknown, position: number): AttestationProblem | undefined;
}

/**
 * Trust in the given keys. Events recorded before `requiredFrom` (a store position: where this
 * store's signing began) are from before attestations existed and are acted on unsigned; an
 * attestation they carry is checked all the same.
 */
export class KeyTrust implements DecisionTrust {
  constructor(
    private known: ReadonlyMap<string, KnownKey>,
    readonly requiredFrom: number,
  ) {}

  get keys(): ReadonlyMap<string, KnownKey> {
    return this.known;
  }

  /** The keys as the store's signing-keys stream now has them (registrations, revocations). */
  useKeys(keys: ReadonlyMap<string, KnownKey>): void {
    this.known = keys;
  }

  refusal(type: string, data: unknown, position: number): AttestationProblem | undefined {
    const problem = attestationProblem(type, data, position, this.known);
    if (problem === 'unsigned' && position > 0 && position < this.requiredFrom) return undefined;
    return problem;
  }
}

const TRUST_NOTHING: DecisionTrust = { refusal: (type, data, position) => attestationProblem(type, data, position, new Map()) };

let installed: DecisionTrust = TRUST_NOTHING;

export function installDecisionTrust(trust: DecisionTrust): void {
  installed = trust;
}

export function decisionTrust(): DecisionTrust {
  return installed;
}
