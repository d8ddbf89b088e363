import { generateKeyPairSync } from 'node:crypto';
import { statementHash, type DecisionStatement, type WebAuthnSignature } from '../../src/attestation/personal-signature';
import { registrationOptions, verifyRegistration, verifyWebAuthnAssertion, webauthnUserId, type WebAuthnKey } from '../../src/attestation/webauthn';
import { FLAGS, softwareAuthenticator } from '../support/software-authenticator';

const RP = { rpId: 'triad.example', origins: ['https://triad.example', 'https://console.triad.example'] };
const ORIGIN = 'https://triad.example';
const statement: DecisionStatement = { kind: 'review', runId: 'run-1', reviewId: 'rev-1', iteration: 1, artifactHash: 'a'.repeat(64), outcome: 'approved', reason: 'looks right' };
const challenge = statementHash(statement);
const b64 = (b: Buffer) => b.toString('base64url');

async function enrolled(alg: 'ES256' | 'EdDSA' = 'ES256') {
  const authenticator = softwareAuthenticator(alg);
  const options = await registrationOptions({ rp: RP, userName: 'bob', exclude: [], timeoutMs: 60_000 });
  const key = await verifyRegistration(authenticator.register({ challenge: options.challenge, origin: ORIGIN, rpId: RP.rpId }), options.challenge, RP);
  return { authenticator, key };
}

describe('passkey enrolment', () => {
  it('offers the rp id, a random challenge, the person as the user, required verification and only EdDSA, ES256 and RS256', async () => {
    const a = await registrationOptions({ rp: RP, userName: 'bob', exclude: [], timeoutMs: 60_000 });
    const b = await registrationOptions({ rp: RP, userName: 'bob', exclude: [], timeoutMs: 60_000 });
    expect(a.rp).toEqual({ id: 'triad.example', name: 'triad' });
    expect(a.user.name).toBe('bob');
    expect(a.user.id).toBe(Buffer.from(webauthnUserId('bob')).toString('base64url'));
    expect(a.challenge).not.toBe(b.challenge);
    expect(a.authenticatorSelection?.userVerification).toBe('required');
    expect(a.pubKeyCredParams.map((p) => p.alg)).toEqual([-8, -7, -257]);
  });

  it('excludes the keys already enrolled', async () => {
    const { key } = await enrolled();
    const options = await registrationOptions({ rp: RP, userName: 'bob', exclude: [key], timeoutMs: 60_000 });
    expect(options.excludeCredentials).toEqual([expect.objectContaining({ id: key.keyId })]);
  });

  it('given a good answer, gives the webauthn key: credential id, COSE public key, the rp id and the server’s origins', async () => {
    const { authenticator, key } = await enrolled();
    expect(key).toEqual({ type: 'webauthn', keyId: authenticator.credentialId, publicKey: authenticator.publicKey, rpId: 'triad.example', origins: RP.origins, counter: 0, transports: ['internal'] });
  });

  it('refuses an answer to another challenge, from another origin, for another rp id, or of the wrong type', async () => {
    const authenticator = softwareAuthenticator();
    const { challenge: c } = await registrationOptions({ rp: RP, userName: 'bob', exclude: [], timeoutMs: 60_000 });
    const other = b64(Buffer.alloc(32, 1));
    await expect(verifyRegistration(authenticator.register({ challenge: other, origin: ORIGIN, rpId: RP.rpId }), c, RP)).rejects.toThrow(/challenge/);
    await expect(verifyRegistration(authenticator.register({ challenge: c, origin: 'https://evil.example', rpId: RP.rpId }), c, RP)).rejects.toThrow(/origin/);
    await expect(verifyRegistration(authenticator.register({ challenge: c, origin: ORIGIN, rpId: 'evil.example' }), c, RP)).rejects.toThrow(/RP ID/);
    await expect(verifyRegistration(authenticator.register({ challenge: c, origin: ORIGIN, rpId: RP.rpId, type: 'webauthn.get' }), c, RP)).rejects.toThrow(/type/);
  });

  it.each([
    ['nothing', undefined],
    ['a string', 'x'],
    ['no response', { id: 'AA', rawId: 'AA', type: 'public-key' }],
    ['not base64url', { id: 'A A', rawId: 'A A', type: 'public-key', response: { clientDataJSON: 'AA', attestationObject: 'AA' } }],
    ['garbage CBOR', { id: 'AA', rawId: 'AA', type: 'public-key', response: { clientDataJSON: b64(Buffer.from('{}')), attestationObject: 'AAAA' } }],
    ['clientDataJSON not JSON', { id: 'AA', rawId: 'AA', type: 'public-key', response: { clientDataJSON: 'AAAA', attestationObject: 'AAAA' } }],
  ])('refuses %s as a PasskeyEnrolmentError (a 400, never a crash)', async (_what, response) => {
    await expect(verifyRegistration(response, 'AAAA', RP)).rejects.toMatchObject({ name: 'PasskeyEnrolmentError', kind: 'invalid' });
  });
});

describe('verifyWebAuthnAssertion', () => {
  let authenticator: ReturnType<typeof softwareAuthenticator>;
  let key: WebAuthnKey;
  let good: WebAuthnSignature;
  beforeAll(async () => {
    ({ authenticator, key } = await enrolled());
    good = authenticator.assert({ challenge: b64(challenge), origin: ORIGIN, rpId: RP.rpId });
  });

  it("given an assertion of the statement's hash by the registered key, from one of its origins, verifies", async () => {
    expect(await verifyWebAuthnAssertion(good, challenge, key)).toBe(true);
    expect(await verifyWebAuthnAssertion(authenticator.assert({ challenge: b64(challenge), origin: 'https://console.triad.example', rpId: RP.rpId }), challenge, key)).toBe(true);
  });

  it('verifies an Ed25519 passkey too, and refuses its signature of another statement', async () => {
    const ed = await enrolled('EdDSA');
    const sig = ed.authenticator.assert({ challenge: b64(challenge), origin: ORIGIN, rpId: RP.rpId });
    expect(await verifyWebAuthnAssertion(sig, challenge, ed.key)).toBe(true);
    expect(await verifyWebAuthnAssertion(sig, statementHash({ ...statement, outcome: 'rejected' }), ed.key)).toBe(false);
  });

  it('does not fail on the counter: 0, or lower than at enrolment (no state offline)', async () => {
    expect(await verifyWebAuthnAssertion(authenticator.assert({ challenge: b64(challenge), origin: ORIGIN, rpId: RP.rpId, counter: 0 }), challenge, { ...key, counter: 7 })).toBe(true);
    expect(await verifyWebAuthnAssertion(authenticator.assert({ challenge: b64(challenge), origin: ORIGIN, rpId: RP.rpId, counter: 3 }), challenge, { ...key, counter: 7 })).toBe(true);
  });

  it("refuses it for another statement (another outcome's hash)", async () => {
    expect(await verifyWebAuthnAssertion(good, statementHash({ ...statement, outcome: 'rejected' }), key)).toBe(false);
  });

  it('refuses an assertion of another challenge, from an origin not the key’s, for another rp id, or of type webauthn.create', async () => {
    const bad = [
      authenticator.assert({ challenge: b64(statementHash({ ...statement, reason: 'other' })), origin: ORIGIN, rpId: RP.rpId }),
      authenticator.assert({ challenge: b64(challenge), origin: 'http://triad.example', rpId: RP.rpId }),
      authenticator.assert({ challenge: b64(challenge), origin: 'https://evil.example', rpId: RP.rpId }),
      authenticator.assert({ challenge: b64(challenge), origin: ORIGIN, rpId: 'evil.example' }),
      authenticator.assert({ challenge: b64(challenge), origin: ORIGIN, rpId: RP.rpId, type: 'webauthn.create' }),
    ];
    for (const sig of bad) expect(await verifyWebAuthnAssertion(sig, challenge, key)).toBe(false);
  });

  it('refuses an assertion without user presence or without user verification', async () => {
    for (const flags of [FLAGS.UV, FLAGS.UP, 0]) {
      expect(await verifyWebAuthnAssertion(authenticator.assert({ challenge: b64(challenge), origin: ORIGIN, rpId: RP.rpId, flags }), challenge, key)).toBe(false);
    }
  });

  it('refuses a changed signature, authenticatorData or clientDataJSON', async () => {
    const flip = (s: string) => {
      const b = Buffer.from(s, 'base64url');
      b[b.length - 1] ^= 1;
      return b64(b);
    };
    expect(await verifyWebAuthnAssertion({ ...good, signature: flip(good.signature) }, challenge, key)).toBe(false);
    expect(await verifyWebAuthnAssertion({ ...good, authenticatorData: flip(good.authenticatorData) }, challenge, key)).toBe(false);
    // The same JSON with one more space: the challenge and origin still match; the signature does not.
    const cd = JSON.parse(Buffer.from(good.clientDataJSON, 'base64url').toString()) as object;
    expect(await verifyWebAuthnAssertion({ ...good, clientDataJSON: b64(Buffer.from(JSON.stringify(cd, null, 1))) }, challenge, key)).toBe(false);
  });

  it("refuses a signature by another key, and the right signature against another person's key", async () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(await verifyWebAuthnAssertion(authenticator.assert({ challenge: b64(challenge), origin: ORIGIN, rpId: RP.rpId, signWith: privateKey }), challenge, key)).toBe(false);
    const other = await enrolled();
    expect(await verifyWebAuthnAssertion(good, challenge, other.key)).toBe(false);
    expect(await verifyWebAuthnAssertion({ ...good, credentialId: other.key.keyId }, challenge, other.key)).toBe(false);
  });

  it('refuses malformed parts and a malformed key without throwing', async () => {
    expect(await verifyWebAuthnAssertion({ ...good, clientDataJSON: 'AAAA' }, challenge, key)).toBe(false);
    expect(await verifyWebAuthnAssertion({ ...good, authenticatorData: 'AA' }, challenge, key)).toBe(false);
    expect(await verifyWebAuthnAssertion({ ...good, signature: '' }, challenge, key)).toBe(false);
    expect(await verifyWebAuthnAssertion(good, challenge, { ...key, publicKey: 'AAAA' })).toBe(false);
  });
});
