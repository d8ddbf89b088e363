import { Global, Module } from '@nestjs/common';
import { DecisionProofs, WEBAUTHN_VERIFIER } from './decision-proofs';
import type { WebAuthnVerifier } from './personal-signature';
import { verifyWebAuthnAssertion } from './webauthn';

/** How passkey assertions are checked, in the app and by `decisions verify --bundle` alike. */
export const webauthnVerifier: WebAuthnVerifier = verifyWebAuthnAssertion;

/** The check of human decisions' proofs, for the review gate and tool approvals alike. */
@Global()
@Module({
  providers: [{ provide: WEBAUTHN_VERIFIER, useValue: webauthnVerifier }, DecisionProofs],
  exports: [WEBAUTHN_VERIFIER, DecisionProofs],
})
export class AttestationModule {}
