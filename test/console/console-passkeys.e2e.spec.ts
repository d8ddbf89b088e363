import { statementHash, type DecisionStatement } from '../../src/attestation/personal-signature';
import { verifyWebAuthnAssertion, type WebAuthnKey } from '../../src/attestation/webauthn';
import type { CDPSession, Page } from 'playwright-core';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startE2eApp, type E2eApp } from '../support/e2e-app';
import { CLI_PATH, runCliInProcess } from '../support/in-process-cli';
import { addStoredKey } from '../support/stored-keys';
import { tempDir } from '../support/temp-dir';
import { waitFor } from '../support/wait-for';
import { addVirtualAuthenticator, findWebAuthn, openBrowser, signIn, type Browser } from './browser';

// A reviewer's own signature on a decision, made in a real browser: Chromium's virtual
// authenticator (the DevTools protocol's WebAuthn domain) stands in for a passkey. The reviewer
// enrols it on the Passkeys page and approves a review with it; the decision event carries the
// assertion, and it verifies offline against the registered key, and from an exported bundle in an
// empty directory. No TRIAD_WEBAUTHN_* is set: the console, opened at localhost, is its own
// relying party.

jest.setTimeout(180_000);

const SHOTS = process.env.TRIAD_SCREENSHOTS === '1' ? resolve(__dirname, '..', '..', 'docs', 'console') : undefined;

async function shot(name: string): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

const KEYS = { ann: 'ann-secret-0123456789', bob: 'bob-secret-0123456789', aud: 'aud-secret-0123456789' };

let app: E2eApp;
let browser: Browser;
let page: Page;
let cdp: CDPSession;
let authenticatorId: string;
/** The console as the browser reaches it: a name, not an IP address (no rp id can be one). */
let consoleUrl: string;

beforeAll(async () => {
  app = await startE2eApp({ TRIAD_API_KEYS: `ann:operator:${KEYS.ann},bob:reviewer:${KEYS.bob},aud:auditor:${KEYS.aud}` });
  consoleUrl = app.url.replace('://127.0.0.1:', '://localhost:');
  // A public key is registered to a name with a stored key.
  await addStoredKey(app, 'bob', 'reviewer');
  browser = await openBrowser();
  page = browser.page;
  ({ cdp, authenticatorId } = await addVirtualAuthenticator(page));
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const bearer = (key: string) => ({ raw: `Bearer ${key}` });


it('enrols a passkey in the console, approves a review with it, and the decision carries an assertion of its statement that verifies offline', async () => {
  const launched = await app.request<{ runId: string }>('POST', '/v1/runs', { as: bearer(KEYS.ann), body: { goal: 'Write the letter P', acceptanceCriteria: ['file p.txt contains "P"'], maxIterations: 1 } });
  expect(launched.status).toBe(202);
  const runId = launched.body.runId;

  await page.goto(`${consoleUrl}/#/passkeys`);
  await signIn(page, KEYS.bob);
  await page.getByRole('heading', { name: 'Passkeys' }).waitFor();
  await page.getByText('You have no passkey yet.').waitFor();
  await page.getByRole('button', { name: 'Enrol a passkey' }).click();
  await page.getByRole('status').filter({ hasText: /Passkey .* enrolled for localhost/ }).waitFor();
  const row = page.getByRole('table', { name: 'Your passkeys' }).getByRole('row').filter({ hasText: 'usable here' });
  await row.waitFor();
  await shot('passkeys');
  const { credentials } = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })) as { credentials: Array<{ credentialId: string }> };
  expect(credentials).toHaveLength(1);
  // The protocol gives ids in base64; WebAuthn's JSON in base64url.
  const credentialId = Buffer.from(credentials[0].credentialId, 'base64').toString('base64url');

  const listed = await app.request<{ passkeys: Array<Omit<WebAuthnKey, 'type' | 'counter'> & { revoked: boolean }> }>('GET', '/v1/auth/passkeys', { as: bearer(KEYS.bob) });
  expect(listed.body.passkeys).toEqual([expect.objectContaining({ keyId: credentialId, rpId: 'localhost', origins: [consoleUrl], revoked: false })]);
  const { revoked: _revoked, ...listedKey } = listed.body.passkeys[0];
  const registered: WebAuthnKey = { ...listedKey, type: 'webauthn', counter: 0 };

  const review = await waitFor(
    'the review gate',
    async () => {
      const r = await app.request<{ pendingReview?: { reviewId: string; iteration: number; artifactHash: string }; status: string }>('GET', `/v1/runs/${runId}`, { as: bearer(KEYS.aud) });
      return r.body.status === 'awaiting_review' && r.body.pendingReview;
    },
    30_000,
    200,
  );

  await page.goto(`${consoleUrl}/#/reviews`);
  const card = page.getByRole('article').filter({ hasText: 'Write the letter P' });
  await card.getByLabel('Reason for approving').fill('  p.txt holds P  ');
  await card.getByRole('button', { name: 'Approve with passkey' }).scrollIntoViewIfNeeded();
  await shot('review-passkey');
  await card.getByRole('button', { name: 'Approve with passkey' }).click();
  // The notice, or the card's error: a refusal fails here saying why.
  const answered = page.getByRole('status').filter({ hasText: `Review ${review.reviewId}` }).or(card.getByRole('alert'));
  await answered.waitFor();
  expect(await answered.textContent()).toBe(`Review ${review.reviewId} approved (signed with your passkey); the run is now completed.`);

  const events = await app.request<{ events: Array<{ type: string; data: Record<string, unknown> }> }>('GET', `/v1/runs/${runId}/events`, { as: bearer(KEYS.aud) });
  const decided = events.body.events.find((e) => e.type === 'ReviewDecided' && e.data.reviewId === review.reviewId);
  expect(decided?.data).toMatchObject({ outcome: 'approved', reason: 'p.txt holds P', decider: 'user:bob' });
  const signature = findWebAuthn(decided!.data);
  expect(signature).toMatchObject({ type: 'webauthn', credentialId });

  // The statement as the contract builds it, from what the review showed: its hash is what the browser signed.
  const statement: DecisionStatement = { kind: 'review', runId, reviewId: review.reviewId, iteration: review.iteration, artifactHash: review.artifactHash, outcome: 'approved', reason: 'p.txt holds P' };
  const clientData = JSON.parse(Buffer.from(signature!.clientDataJSON, 'base64url').toString()) as { type: string; challenge: string; origin: string };
  expect(clientData).toMatchObject({ type: 'webauthn.get', challenge: statementHash(statement).toString('base64url'), origin: consoleUrl });
  expect(await verifyWebAuthnAssertion(signature!, statementHash(statement), registered)).toBe(true);
  // And it signs that decision only.
  expect(await verifyWebAuthnAssertion(signature!, statementHash({ ...statement, outcome: 'rejected' }), registered)).toBe(false);
  expect(await verifyWebAuthnAssertion(signature!, statementHash({ ...statement, reason: 'something else' }), registered)).toBe(false);
});

it('the signed decision verifies from an exported bundle, in an empty directory with no store, configuration or key', async () => {
  const dir = tempDir('triad-passkey-bundle-');
  try {
    const env: NodeJS.ProcessEnv = { ...process.env, TRIAD_DATA_DIR: app.dataDir, TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline' };
    delete env.TRIAD_PG_URL;
    const exported = await runCliInProcess(['decisions', 'export', '--bundle', join(dir.path, 'exported.json')], env);
    expect({ code: exported.code, stderr: exported.code === 0 ? '' : exported.stderr }).toEqual({ code: 0, stderr: '' });
    const fresh = join(dir.path, 'auditor');
    mkdirSync(fresh);
    copyFileSync(join(dir.path, 'exported.json'), join(fresh, 'bundle.json'));
    const verified = spawnSync(process.execPath, [CLI_PATH, 'decisions', 'verify', '--bundle', 'bundle.json', '--json'], {
      cwd: fresh,
      env: { PATH: process.env.PATH, HOME: fresh, TRIAD_DATA_DIR: join(fresh, 'no-store') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ status: verified.status, stderr: verified.status === 0 ? '' : verified.stderr }).toEqual({ status: 0, stderr: '' });
    const result = JSON.parse(verified.stdout) as { ok: boolean; attestations: { personallySigned: number; issues: unknown[] } };
    expect(result).toMatchObject({ ok: true, attestations: { personallySigned: 1, issues: [] } });
    // It read nothing but the bundle: nothing was made beside it.
    expect(readdirSync(fresh)).toEqual(['bundle.json']);
  } finally {
    dir.remove();
  }
});
