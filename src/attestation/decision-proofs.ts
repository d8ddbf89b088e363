import { Inject, Injectable } from '@nestjs/common';
import { API_KEYS_STREAM, foldApiKeys } from '../auth/keys/api-key-events';
import { normaliseName } from '../auth/names';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { EVENT_STORE, type EventStore } from '../events/event-store/event-store.port';
import { ForbiddenError } from '../shared/errors';
import { personalSignatureProblem, statementText, type DecisionStatement, type PersonalSignature, type WebAuthnVerifier } from './personal-signature';

export const WEBAUTHN_VERIFIER = Symbol('WEBAUTHN_VERIFIER');

/** A human decision's signature does not hold, or this server requires one and it is missing. */
export class DecisionSignatureError extends ForbiddenError {
  override readonly name = 'DecisionSignatureError';
}

const PROBLEM_TEXT = {
  bad_signature: 'the signature does not sign this decision (its statement: review or approval, outcome and reason, as the statement route returns it)',
  unknown_signer: 'the signature is by a key not registered to the decider (`triad keys add … --public-key`, or a passkey enrolled in the console)',
  revoked_signer: 'the signature is by a revoked key',
} as const;

/**
 * The check a human decision passes before it is decided: a personal signature, when given, must
 * be the decider's on exactly this decision's statement; with TRIAD_REQUIRE_SIGNED_DECISIONS a
 * human decision without one is refused (403). Nothing is written when it fails.
 */
@Injectable()
export class DecisionProofs {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(TRIAD_CONFIG) private readonly config: TriadConfig,
    @Inject(WEBAUTHN_VERIFIER) private readonly webauthn: WebAuthnVerifier,
  ) {}

  /** Whether a decision by this decider must be checked against its statement. */
  needsCheck(decider: { kind: string; proof?: { signature?: PersonalSignature } }): boolean {
    return decider.kind === 'human' && (decider.proof?.signature !== undefined || this.config.signing.requireSignedDecisions);
  }

  async check(decider: { id: string; kind: string; proof?: { signature?: PersonalSignature } }, statement: DecisionStatement): Promise<void> {
    if (decider.kind !== 'human') return;
    const signature = decider.proof?.signature;
    if (!signature) {
      if (this.config.signing.requireSignedDecisions) throw new DecisionSignatureError('this server takes only signed human decisions (TRIAD_REQUIRE_SIGNED_DECISIONS): sign it with your SSH key or passkey');
      return;
    }
    const name = normaliseName(decider.id.replace(/^user:/, ''));
    const { publicKeys } = foldApiKeys(await this.store.readStream(API_KEYS_STREAM));
    const head = await this.store.headPosition();
    const problem = await personalSignatureProblem(signature, statement, name, publicKeys, head + 1, this.webauthn);
    if (problem) throw new DecisionSignatureError(`${PROBLEM_TEXT[problem]}; statement: ${statementText(statement)}`);
  }
}
