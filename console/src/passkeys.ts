// Passkeys in the browser: enrolling one for the signed-in person, and signing a decision's
// statement with one (@simplewebauthn/browser over navigator.credentials).
import { startAuthentication, startRegistration, type AuthenticatorTransport } from '@simplewebauthn/browser';
import { api, type PasskeyView, type WebAuthnSignature } from './api';

/** Asks the server for options, lets the browser make a passkey, and registers it. */
export async function enrolPasskey(): Promise<PasskeyView> {
  const optionsJSON = await api.passkeyOptions();
  const response = await startRegistration({ optionsJSON });
  return api.enrolPasskey(response);
}

/** The person's passkeys this page can use: live, for this host's rp id, enrolled for this origin. */
export function usablePasskeys(keys: readonly PasskeyView[]): PasskeyView[] {
  const host = window.location.hostname;
  return keys.filter((k) => !k.revoked && (host === k.rpId || host.endsWith(`.${k.rpId}`)) && k.origins.includes(window.location.origin));
}

/** Signs `challenge` (base64url: a statement's sha256) with one of the person's passkeys, as the server takes it. */
export async function signWithPasskey(challenge: string, keys: readonly PasskeyView[]): Promise<WebAuthnSignature> {
  const usable = usablePasskeys(keys);
  if (usable.length === 0) throw new Error('you have no passkey for this address: enrol one on the Passkeys page');
  const rpId = usable[0].rpId;
  const r = await startAuthentication({
    optionsJSON: {
      challenge,
      rpId,
      allowCredentials: usable.filter((k) => k.rpId === rpId).map((k) => ({ id: k.keyId, type: 'public-key' as const, transports: k.transports as AuthenticatorTransport[] | undefined })),
      userVerification: 'required',
      timeout: 120_000,
    },
  });
  return {
    type: 'webauthn',
    credentialId: r.id,
    authenticatorData: r.response.authenticatorData,
    clientDataJSON: r.response.clientDataJSON,
    signature: r.response.signature,
    ...(r.response.userHandle ? { userHandle: r.response.userHandle } : {}),
  };
}
