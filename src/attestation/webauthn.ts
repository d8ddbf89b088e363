import { createHash } from 'node:crypto';
import {
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type PublicKeyCredentialCreationOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { InvalidRequestError } from '../shared/errors';
import type { PersonalKey, WebAuthnSignature, WebAuthnVerifier } from './personal-signature';

/**
 * Passkeys (WebAuthn) as personal keys: enrolment (options for `navigator.credentials.create`,
 * then the check of its answer, giving a `PersonalKey`), and the check of an assertion over a
 * decision's statement. No Nest, no store: the assertion check needs nothing but the signature,
 * the challenge and the registered key, so an auditor runs it on another machine.
 */

export type WebAuthnKey = Extract<PersonalKey, { type: 'webauthn' }>;

/** Who the passkey is for: the relying party's id (a domain) and the page origins allowed to use it. */
export interface RelyingParty {
  rpId: string;
  origins: string[];
}

/**
 * COSE algorithms offered and accepted: EdDSA, ES256, RS256. Fixed rather than the library's
 * default, which adds ML-DSA where the runtime has it, so that a key enrolled here verifies on an
 * auditor's machine whatever its node.
 */
export const WEBAUTHN_ALGORITHMS: readonly number[] = [-8, -7, -257];

/** A passkey's answer that cannot be enrolled. Nothing is registered. */
export class PasskeyEnrolmentError extends InvalidRequestError {
  override readonly name = 'PasskeyEnrolmentError';
}

/**
 * A stable WebAuthn user handle for a person: the same name gives the same handle, so enrolling
 * again on the same authenticator replaces its discoverable credential rather than adding one.
 */
export function webauthnUserId(name: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(createHash('sha256').update(`triad-user:${name}`).digest());
}

/**
 * Options for `navigator.credentials.create` (as @simplewebauthn/browser's startRegistration takes
 * them). User verification is required: a decision's signature says the person, not just someone
 * at the key, decided. The challenge is random; the caller keeps it to check the answer with.
 */
export async function registrationOptions(p: {
  rp: RelyingParty;
  userName: string;
  /** The person's keys already enrolled, so an authenticator is not enrolled twice. */
  exclude: readonly WebAuthnKey[];
  timeoutMs: number;
}): Promise<PublicKeyCredentialCreationOptionsJSON> {
  return generateRegistrationOptions({
    rpName: 'triad',
    rpID: p.rp.rpId,
    userName: p.userName,
    userID: webauthnUserId(p.userName),
    userDisplayName: p.userName,
    timeout: p.timeoutMs,
    attestationType: 'none',
    excludeCredentials: p.exclude.map((k) => ({ id: k.keyId, transports: k.transports })),
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'required' },
    supportedAlgorithmIDs: [...WEBAUTHN_ALGORITHMS],
  });
}

/**
 * Checks the browser's answer to `registrationOptions` (its challenge, origin, rp id, user
 * presence and verification, the attestation's own signature where it has one) and gives the key to
 * register. Throws PasskeyEnrolmentError for anything it does not accept.
 */
export async function verifyRegistration(response: unknown, expectedChallenge: string, rp: RelyingParty): Promise<WebAuthnKey> {
  if (!isRegistrationResponse(response)) throw new PasskeyEnrolmentError('the passkey answer is not a WebAuthn registration response (id, rawId, type public-key, response.clientDataJSON and attestationObject)');
  let result: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    result = await verifyRegistrationResponse({
      response: { ...response, clientExtensionResults: response.clientExtensionResults ?? {} },
      expectedChallenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.rpId,
      requireUserPresence: true,
      requireUserVerification: true,
      supportedAlgorithmIDs: [...WEBAUTHN_ALGORITHMS],
    });
  } catch (err) {
    // The library throws plain Errors for every refusal (wrong challenge, origin, malformed CBOR): all are the answer's fault.
    throw new PasskeyEnrolmentError(`the passkey answer was refused: ${(err as Error).message}`);
  }
  if (!result.verified) throw new PasskeyEnrolmentError('the passkey answer was refused: its attestation does not verify');
  const { credential } = result.registrationInfo;
  return {
    type: 'webauthn',
    keyId: credential.id,
    publicKey: Buffer.from(credential.publicKey).toString('base64url'),
    rpId: rp.rpId,
    // The server's origins when it was enrolled: the key's own record of where its signatures may come from.
    origins: [...rp.origins],
    counter: credential.counter,
    ...(credential.transports && credential.transports.length > 0 ? { transports: [...credential.transports] } : {}),
  };
}

/**
 * Whether a passkey's assertion signs `challenge` (a statement's sha256) with the registered key:
 * the credential is the key's, clientDataJSON is a `webauthn.get` whose challenge is
 * base64url(challenge) and whose origin is one of the key's, authenticatorData's rp id hash is the
 * key's rp id, the user was present and verified, and the signature over authenticatorData ‖
 * sha256(clientDataJSON) verifies.
 *
 * The signature counter is not checked: it would need the last counter seen, which an offline
 * check does not have, and passkeys that sync report 0 always. A replayed assertion gains nothing:
 * its challenge is one statement's hash, so it can only sign that same decision again.
 */
export const verifyWebAuthnAssertion: WebAuthnVerifier = async (sig: WebAuthnSignature, challenge: Buffer, key: WebAuthnKey): Promise<boolean> => {
  if (sig.credentialId !== key.keyId) return false;
  try {
    const { verified } = await verifyAuthenticationResponse({
      response: {
        id: sig.credentialId,
        rawId: sig.credentialId,
        type: 'public-key',
        clientExtensionResults: {},
        response: {
          authenticatorData: sig.authenticatorData,
          clientDataJSON: sig.clientDataJSON,
          signature: sig.signature,
          ...(sig.userHandle !== undefined ? { userHandle: sig.userHandle } : {}),
        },
      },
      expectedChallenge: Buffer.from(challenge).toString('base64url'),
      expectedOrigin: key.origins,
      expectedRPID: key.rpId,
      expectedType: 'webauthn.get',
      requireUserVerification: true,
      // 0 turns the library's counter check off (see above).
      credential: { id: key.keyId, publicKey: Buffer.from(key.publicKey, 'base64url'), counter: 0 },
    });
    return verified;
  } catch {
    // The library throws for every mismatch (challenge, origin, rp id, flags, malformed parts): each is a signature that does not verify.
    return false;
  }
};

function isRegistrationResponse(v: unknown): v is RegistrationResponseJSON {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  const res = r.response as Record<string, unknown> | undefined;
  const b64 = (x: unknown, max: number) => typeof x === 'string' && x.length <= max && /^[A-Za-z0-9_-]+$/.test(x);
  return (
    b64(r.id, 1400) &&
    b64(r.rawId, 1400) &&
    r.type === 'public-key' &&
    typeof res === 'object' &&
    res !== null &&
    b64(res.clientDataJSON, 8192) &&
    b64(res.attestationObject, 65536) &&
    (res.transports === undefined || (Array.isArray(res.transports) && res.transports.every((t) => typeof t === 'string'))) &&
    (r.clientExtensionResults === undefined || (typeof r.clientExtensionResults === 'object' && r.clientExtensionResults !== null))
  );
}
