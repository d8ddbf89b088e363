import { hash } from 'node:crypto';
import { attestationProblem, attestedText, type AttestationProblem, type KnownKey } from './attestation';

/** Verified attestations remembered (a signature and a digest, under 200 bytes each). */
const MAX_VERIFIED = 20_000;

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
  /**
   * Texts whose attestation verified, by signature: one event is folded by several read models and
   * on every load of its run, and an Ed25519 verification (~100 µs) is most of a fold's cost for a
   * decision. Keyed by what was verified (type, data and key), so a changed event is checked again.
   */
  private readonly verified = new Map<string, string>();
  // signature → sha256 of the text it verified over

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
    this.verified.clear();
  }

  refusal(type: string, data: unknown, position: number): AttestationProblem | undefined {
    const a = (data as { attestation?: { keyId?: unknown; sig?: unknown } } | null)?.attestation;
    const key = typeof a?.sig === 'string' && typeof a.keyId === 'string' ? a.sig : undefined;
    const text = key !== undefined ? hash('sha256', attestedText(type, data), 'base64') : undefined;
    if (key !== undefined && this.verified.get(key) === text) {
      const known = this.known.get(String(a!.keyId));
      if (known) return known.revokedFrom !== undefined && position >= known.revokedFrom ? 'revoked_signer' : undefined;
    }
    const problem = attestationProblem(type, data, position, this.known);
    if (problem === undefined && key !== undefined) {
      if (this.verified.size >= MAX_VERIFIED) this.verified.delete(this.verified.keys().next().value!);
      this.verified.set(key, text!);
    }
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
