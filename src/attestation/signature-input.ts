import { InvalidRequestError } from '../shared/errors';
import type { DecisionProof } from '../review-gate/domain/review-decider';
import { isPersonalSignature, type PersonalSignature } from './personal-signature';

/** A request's `signature` field, checked for shape (its validity is DecisionProofs' check). */
export function signatureInput(value: unknown): PersonalSignature | undefined {
  if (value === undefined) return undefined;
  if (!isPersonalSignature(value)) {
    throw new InvalidRequestError('signature must be {"type":"ssh","signature":"-----BEGIN SSH SIGNATURE-----…"} or a passkey assertion {"type":"webauthn","credentialId","authenticatorData","clientDataJSON","signature"} (base64url)');
  }
  return value.type === 'ssh'
    ? { type: 'ssh', signature: value.signature }
    : { type: 'webauthn', credentialId: value.credentialId, authenticatorData: value.authenticatorData, clientDataJSON: value.clientDataJSON, signature: value.signature, ...(value.userHandle ? { userHandle: value.userHandle } : {}) };
}

/** The proof a decision request carries: how the caller signed in, and their signature when they sent one. */
export function requestProof(via: 'api_key' | 'console_session', signature: unknown): DecisionProof {
  const sig = signatureInput(signature);
  return sig ? { via: 'signature', signature: sig } : { via };
}
