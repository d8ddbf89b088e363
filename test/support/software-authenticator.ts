import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type { WebAuthnSignature } from '../../src/attestation/personal-signature';

/**
 * A WebAuthn authenticator in software (an ES256 or Ed25519 key made with node's crypto), to test passkey
 * checks without a browser: it answers a registration with a `none` attestation and signs
 * assertions as an authenticator does (authenticatorData ‖ sha256(clientDataJSON)). Each part can
 * be bent to attack a check.
 */

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_AT = 0x40;

export interface SoftwareAuthenticator {
  credentialId: string;
  /** The public key as COSE (base64url). */
  publicKey: string;
  register(p: { challenge: string; origin: string; rpId: string; type?: string }): unknown;
  assert(p: { challenge: string; origin: string; rpId: string; type?: string; flags?: number; counter?: number; signWith?: KeyObject }): WebAuthnSignature;
}

/** ES256 (P-256, what most authenticators make) or EdDSA (Ed25519, what Chromium's virtual authenticator makes). */
export function softwareAuthenticator(alg: 'ES256' | 'EdDSA' = 'ES256'): SoftwareAuthenticator {
  const { privateKey, publicKey } = alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' });
  const cose = cbor(
    alg === 'ES256'
      ? new Map<number, unknown>([
          [1, 2], // kty: EC2
          [3, -7], // alg: ES256
          [-1, 1], // crv: P-256
          [-2, Buffer.from(jwk.x!, 'base64url')],
          [-3, Buffer.from(jwk.y!, 'base64url')],
        ])
      : new Map<number, unknown>([
          [1, 1], // kty: OKP
          [3, -8], // alg: EdDSA
          [-1, 6], // crv: Ed25519
          [-2, Buffer.from(jwk.x!, 'base64url')],
        ]),
  );
  const credentialId = randomBytes(16);
  const clientData = (type: string, challenge: string, origin: string) => Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  const rpIdHash = (rpId: string) => createHash('sha256').update(rpId).digest();
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  return {
    credentialId: credentialId.toString('base64url'),
    publicKey: cose.toString('base64url'),
    register({ challenge, origin, rpId, type = 'webauthn.create' }) {
      const idLength = Buffer.alloc(2);
      idLength.writeUInt16BE(credentialId.length);
      const authData = Buffer.concat([rpIdHash(rpId), Buffer.from([FLAG_UP | FLAG_UV | FLAG_AT]), u32(0), Buffer.alloc(16), idLength, credentialId, cose]);
      const attestationObject = cbor(new Map<string, unknown>([['fmt', 'none'], ['attStmt', new Map()], ['authData', authData]]));
      const id = credentialId.toString('base64url');
      return {
        id,
        rawId: id,
        type: 'public-key',
        clientExtensionResults: {},
        response: { clientDataJSON: clientData(type, challenge, origin).toString('base64url'), attestationObject: attestationObject.toString('base64url'), transports: ['internal'] },
      };
    },
    assert({ challenge, origin, rpId, type = 'webauthn.get', flags = FLAG_UP | FLAG_UV, counter = 0, signWith = privateKey }) {
      const authData = Buffer.concat([rpIdHash(rpId), Buffer.from([flags]), u32(counter)]);
      const clientDataJSON = clientData(type, challenge, origin);
      const signed = Buffer.concat([authData, createHash('sha256').update(clientDataJSON).digest()]);
      // ES256 signs a sha256 of it (DER signature); Ed25519 signs it as it is.
      const signature = sign(signWith.asymmetricKeyType === 'ed25519' ? null : 'sha256', signed, signWith);
      return {
        type: 'webauthn',
        credentialId: credentialId.toString('base64url'),
        authenticatorData: authData.toString('base64url'),
        clientDataJSON: clientDataJSON.toString('base64url'),
        signature: signature.toString('base64url'),
      };
    },
  };
}

export const FLAGS = { UP: FLAG_UP, UV: FLAG_UV };

/** The CBOR this needs: unsigned and negative integers, byte and text strings, maps. */
function cbor(v: unknown): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.from([(major << 5) | n]);
    if (n < 256) return Buffer.from([(major << 5) | 24, n]);
    const b = Buffer.alloc(3);
    b[0] = (major << 5) | 25;
    b.writeUInt16BE(n, 1);
    return b;
  };
  if (typeof v === 'number') return v >= 0 ? head(0, v) : head(1, -1 - v);
  if (Buffer.isBuffer(v)) return Buffer.concat([head(2, v.length), v]);
  if (typeof v === 'string') return Buffer.concat([head(3, Buffer.byteLength(v)), Buffer.from(v)]);
  if (v instanceof Map) return Buffer.concat([head(5, v.size), ...[...v].flatMap(([k, x]) => [cbor(k), cbor(x)])]);
  throw new TypeError(`cbor: cannot encode ${typeof v}`);
}
