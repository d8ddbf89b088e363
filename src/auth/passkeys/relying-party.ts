import { hostWithinRpId, type WebAuthnSettings } from '../../config/config';
import type { RelyingParty } from '../../attestation/webauthn';
import { InvalidRequestError } from '../../shared/errors';

/** Passkeys cannot be enrolled for this request as the server is configured. Nothing is written. */
export class PasskeyOriginError extends InvalidRequestError {
  override readonly name = 'PasskeyOriginError';
}

/**
 * The relying party a passkey is enrolled for. With TRIAD_WEBAUTHN_ORIGINS set: those origins and
 * their rp id, whatever the request says. Without: the origin the request reached (its scheme and
 * Host, X-Forwarded-* when the proxy is trusted), whose host is the rp id (or under
 * TRIAD_WEBAUTHN_RP_ID). The browser puts the page's real origin in what it signs, and enrolment
 * checks it against these, so a forged Host header gives a key that only that forger's page can use.
 */
export function relyingPartyFor(settings: WebAuthnSettings, requestOrigin: string): RelyingParty {
  if (settings.origins.length > 0) return { rpId: settings.rpId!, origins: [...settings.origins] };
  let url: URL;
  try {
    url = new URL(requestOrigin);
  } catch {
    throw new PasskeyOriginError(`the request's origin '${requestOrigin}' is not a URL; set TRIAD_WEBAUTHN_ORIGINS`);
  }
  const host = url.hostname;
  if (/^[0-9.]+$/.test(host) || host.startsWith('[')) {
    throw new PasskeyOriginError(`passkeys need a domain name, and the console was reached at ${url.origin}: open it at a name (http://localhost:${url.port || '80'} on this machine) or set TRIAD_WEBAUTHN_ORIGINS`);
  }
  if (settings.rpId !== undefined && !hostWithinRpId(host, settings.rpId)) {
    throw new PasskeyOriginError(`the console was reached at ${url.origin}, whose host is not ${settings.rpId} (TRIAD_WEBAUTHN_RP_ID) or under it`);
  }
  return { rpId: settings.rpId ?? host, origins: [url.origin] };
}
