import { E2E_KEYS, startE2eApp, type E2eApp, type KeyName } from '../support/e2e-app';
import { addStoredKey } from '../support/stored-keys';
import { softwareAuthenticator } from '../support/software-authenticator';

// Passkey enrolment over real HTTP, with a software authenticator in the test: options, the
// answer checked against the challenge this person was given, the key registered to them only.
// A public key is registered to a name with a stored key (`triad keys add`): rev and aud have one
// besides their TRIAD_API_KEYS key, ops has none.

const ORIGIN = 'https://triad.test';
let app: E2eApp;

beforeAll(async () => {
  app = await startE2eApp({ TRIAD_WEBAUTHN_ORIGINS: ORIGIN });
  await addStoredKey(app, 'rev', 'reviewer');
  await addStoredKey(app, 'aud', 'auditor');
});
afterAll(async () => {
  await app?.close();
});

interface Options {
  challenge: string;
  rp: { id: string; name: string };
  user: { id: string; name: string };
  excludeCredentials?: Array<{ id: string }>;
  authenticatorSelection?: { userVerification?: string };
}

const options = (as: KeyName) => app.request<Options>('POST', '/v1/auth/passkeys/options', { as, body: {} });
const enrol = (as: KeyName, response: unknown) => app.request<{ keyId?: string; message?: string }>('POST', '/v1/auth/passkeys', { as, body: { response } });
const list = (as: KeyName) => app.request<{ passkeys: Array<{ keyId: string; rpId: string; origins: string[]; revoked: boolean }> }>('GET', '/v1/auth/passkeys', { as });

it('enrols a passkey for the signed-in person: options for its rp, the answer checked, the key listed as theirs only', async () => {
  expect((await list('reviewer')).body).toEqual({ passkeys: [] });
  const o = await options('reviewer');
  expect(o.status).toBe(200);
  expect(o.headers.get('cache-control')).toBe('no-store');
  expect(o.body).toMatchObject({ rp: { id: 'triad.test' }, user: { name: 'rev' }, authenticatorSelection: { userVerification: 'required' } });
  const authenticator = softwareAuthenticator();
  const res = await enrol('reviewer', authenticator.register({ challenge: o.body.challenge, origin: ORIGIN, rpId: 'triad.test' }));
  expect(res.status).toBe(201);
  expect(res.body).toEqual({ keyId: authenticator.credentialId, publicKey: authenticator.publicKey, rpId: 'triad.test', origins: [ORIGIN], transports: ['internal'], revoked: false });
  expect((await list('reviewer')).body.passkeys).toEqual([{ keyId: authenticator.credentialId, publicKey: authenticator.publicKey, rpId: 'triad.test', origins: [ORIGIN], transports: ['internal'], revoked: false }]);
  expect((await list('operator')).body).toEqual({ passkeys: [] });

  // Enrolling again: the key is excluded, and the same key is refused.
  const again = await options('reviewer');
  expect(again.body.excludeCredentials).toEqual([expect.objectContaining({ id: authenticator.credentialId })]);
  const twice = await enrol('reviewer', authenticator.register({ challenge: again.body.challenge, origin: ORIGIN, rpId: 'triad.test' }));
  expect(twice.status).toBe(409);
});

it('uses a challenge once, and only for the person it was given to', async () => {
  const authenticator = softwareAuthenticator();
  const o = await options('auditor');
  const answer = authenticator.register({ challenge: o.body.challenge, origin: ORIGIN, rpId: 'triad.test' });
  // Another person answering it has no enrolment waiting.
  const other = await enrol('operator', answer);
  expect(other.status).toBe(400);
  expect(other.body.message).toMatch(/no passkey enrolment of yours is waiting/);
  expect((await enrol('auditor', answer)).status).toBe(201);
  expect((await enrol('auditor', answer)).status).toBe(400);
  // A newer request replaces the older challenge.
  const first = await options('operator');
  await options('operator');
  expect((await enrol('operator', softwareAuthenticator().register({ challenge: first.body.challenge, origin: ORIGIN, rpId: 'triad.test' }))).status).toBe(400);
});

it('refuses an answer from another origin, for another rp id or to another challenge with a 400, registering nothing', async () => {
  const authenticator = softwareAuthenticator();
  for (const bend of [{ origin: 'https://evil.test' }, { rpId: 'evil.test' }, { challenge: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }]) {
    const o = await options('operator');
    const res = await enrol('operator', authenticator.register({ challenge: o.body.challenge, origin: ORIGIN, rpId: 'triad.test', ...bend }));
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/the passkey answer was refused/);
  }
  expect((await list('operator')).body).toEqual({ passkeys: [] });
});

it.each<[string, unknown]>([
  ['no response', {}],
  ['a string', { response: 'x' }],
  ['an array', { response: [] }],
  ['an empty object', { response: {} }],
  ['garbage parts', { response: { id: 'AA', rawId: 'AA', type: 'public-key', response: { clientDataJSON: 'AAAA', attestationObject: 'AAAA' } } }],
  ['an unknown field', { response: {}, extra: 1 }],
])('refuses %s with a 400', async (_what, body) => {
  await options('operator');
  const res = await app.request<{ message?: string }>('POST', '/v1/auth/passkeys', { as: 'operator', body });
  expect(res.status).toBe(400);
});

it('enrols a person signed in with a key of TRIAD_API_KEYS (no stored key): the passkey is theirs alone', async () => {
  const o = await options('operator');
  const res = await enrol('operator', softwareAuthenticator().register({ challenge: o.body.challenge, origin: ORIGIN, rpId: 'triad.test' }));
  expect(res.status).toBe(201);
  expect((await list('operator')).body.passkeys).toEqual([expect.objectContaining({ keyId: res.body.keyId, revoked: false })]);
});

it('needs an identity', async () => {
  expect((await app.request('POST', '/v1/auth/passkeys/options', { as: null, body: {} })).status).toBe(401);
  expect((await app.request('GET', '/v1/auth/passkeys', { as: null })).status).toBe(401);
  expect((await app.request('POST', '/v1/auth/passkeys', { as: { raw: `Bearer ${E2E_KEYS.operator}x` }, body: { response: {} } })).status).toBe(401);
});
