import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { statementHash } from '../../src/attestation/personal-signature';
import { verifyWebAuthnAssertion } from '../../src/attestation/webauthn';
import { startFakeMessagesApi, toolUseStep, type FakeMessagesApi } from '../support/fake-messages-api';
import { addStoredKey } from '../support/stored-keys';
import { tempDir } from '../support/temp-dir';
import { appEnv, KEYS, startApp, waitForRun, type AppServer } from '../team/resilience/approvals-app';
import { addVirtualAuthenticator, findWebAuthn, openBrowser, signIn, signOut, type Browser } from './browser';

// A risky tool call decided in the web console: the app drives a run on the Anthropic provider
// against a loopback fake of the Messages API, whose executor asks for run_command (risk high),
// which waits for a human; then one approved with a passkey (bob's, enrolled in Chromium's virtual
// authenticator), whose decision carries an assertion of the approval's statement. One app and
// one browser for the file.

jest.setTimeout(180_000);

const API_KEY = 'sk-ant-test-console-0123456789';
const MODEL = 'claude-sonnet-4-6';
const TEAM = { architect: { model: MODEL }, executor: { model: MODEL }, reviewer: { model: MODEL } };
const SHOTS = process.env.TRIAD_SCREENSHOTS === '1' ? resolve(__dirname, '..', '..', 'docs', 'console') : undefined;

let api: FakeMessagesApi;
let server: AppServer;
let dir: { path: string; remove(): void };
let browser: Browser;
let page: Page;
/** The console on localhost: a passkey needs a secure context. */
let consoleUrl: string;

beforeAll(async () => {
  api = await startFakeMessagesApi({ apiKey: API_KEY });
  dir = tempDir('triad-console-approvals-');
  const dataDir = join(dir.path, 'data');
  server = await startApp(appEnv(dataDir, api.url, API_KEY));
  await addStoredKey({ dataDir }, 'bob', 'reviewer');
  consoleUrl = server.url.replace('://127.0.0.1:', '://localhost:');
  browser = await openBrowser();
  page = browser.page;
  await addVirtualAuthenticator(page);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await api?.stop();
  dir?.remove();
});

it('shows the waiting call with its input and risk; refuses the launcher; a reviewer rejects without a reason only after being told, then approves', async () => {
  api.enqueue(
    toolUseStep('submit_plan', { plan: '1. run the command' }),
    toolUseStep('run_command', { command: 'echo approved > out.txt' }, { id: 'toolu_cmd_1' }),
    toolUseStep('submit_work', { summary: 'ran it', files: [] }),
    toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'fine' }),
  );
  const launched = await server.request('POST', '/v1/runs', { as: 'ann', body: { goal: 'Run a command', acceptanceCriteria: ['the command ran'], team: TEAM } });
  expect(launched.status).toBe(202);
  const runId = launched.body.runId as string;
  await waitForRun(server, runId, (r) => r.status === 'awaiting_approval');

  await page.goto(`${server.url}/#/approvals`);
  await signIn(page, KEYS.ann);
  const call = page.getByRole('article').filter({ hasText: 'Run a command' });
  await call.getByRole('heading', { name: 'run_command waits for approval' }).waitFor();
  await call.getByText('"command": "echo approved > out.txt"').waitFor();
  await call.getByText('high', { exact: true }).waitFor();
  await call.getByRole('button', { name: 'Approve call' }).click();
  await call.getByRole('alert').filter({ hasText: 'Refused: you may not decide this approval' }).waitFor();
  await signOut(page);

  await signIn(page, KEYS.bob);
  if (SHOTS) {
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, 'approvals.png'), fullPage: true });
  }
  await call.getByRole('button', { name: 'Reject call' }).click();
  await call.getByRole('alert').filter({ hasText: 'a reason is needed' }).waitFor();
  await call.getByLabel('Reason (required to reject)').fill('checked: harmless');
  await call.getByRole('button', { name: 'Approve call' }).click();
  await page.getByRole('status').filter({ hasText: 'Tool call run_command approved' }).waitFor();
  await page.getByText('No tool call waits for a decision.').waitFor();
  const run = await waitForRun(server, runId, (r) => r.status === 'awaiting_review');
  expect(run.pendingApprovals).toBeUndefined();
  const decisions = await server.request('GET', `/v1/decisions?runId=${runId}`, { as: 'aud' });
  expect(decisions.body.decisions).toEqual([expect.objectContaining({ kind: 'tool_approval', decider: 'user:bob', outcome: 'approved', reason: 'checked: harmless' })]);
});

it('approves a waiting tool call with a passkey; the decision carries an assertion of its statement, with the default reason', async () => {
  api.enqueue(
    toolUseStep('submit_plan', { plan: '1. run the command' }),
    toolUseStep('run_command', { command: 'echo signed > out.txt' }, { id: 'toolu_cmd_1' }),
    toolUseStep('submit_work', { summary: 'ran it', files: [] }),
    toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'fine' }),
  );
  const launched = await server.request('POST', '/v1/runs', { as: 'ann', body: { goal: 'Run a signed command', acceptanceCriteria: ['the command ran'], team: TEAM } });
  expect(launched.status).toBe(202);
  const runId = launched.body.runId as string;
  const waiting = await waitForRun(server, runId, (r) => r.status === 'awaiting_approval');
  const approvalId = waiting.pendingApprovals[0].approvalId as string;

  await page.goto(`${consoleUrl}/#/passkeys`);
  await signIn(page, KEYS.bob);
  await page.getByRole('button', { name: 'Enrol a passkey' }).click();
  await page.getByRole('status').filter({ hasText: /Passkey .* enrolled for localhost/ }).waitFor();

  // The server's statement of approving it without a reason, as the page will ask for it.
  const statement = await server.request('GET', `/v1/approvals/${approvalId}/statement?outcome=approved`, { as: 'bob' });
  expect(statement.status).toBe(200);
  expect(statement.body.statement).toMatchObject({ kind: 'tool_approval', approvalId, outcome: 'approved', reason: 'approved' });

  await page.goto(`${consoleUrl}/#/approvals`);
  const call = page.getByRole('article').filter({ hasText: 'Run a signed command' });
  await call.getByRole('button', { name: 'Approve with passkey' }).click();
  const answered = page.getByRole('status').filter({ hasText: 'Tool call run_command' }).or(call.getByRole('alert'));
  await answered.waitFor();
  expect(await answered.textContent()).toMatch(/^Tool call run_command approved \(signed with your passkey\)/);

  const events = await server.request('GET', `/v1/runs/${runId}/events`, { as: 'aud' });
  const decided = (events.body.events as Array<{ type: string; data: Record<string, unknown> }>).find((e) => e.type === 'ToolApprovalDecided' && e.data.approvalId === approvalId);
  expect(decided?.data).toMatchObject({ outcome: 'approved', reason: 'approved', decider: 'user:bob' });
  const signature = findWebAuthn(decided!.data);
  expect(signature).toMatchObject({ type: 'webauthn' });
  // What the passkey signed is that statement.
  const clientData = JSON.parse(Buffer.from(signature!.clientDataJSON, 'base64url').toString()) as { challenge: string };
  expect(clientData.challenge).toBe(statementHash(statement.body.statement).toString('base64url'));
  const listed = await server.request('GET', '/v1/auth/passkeys', { as: 'bob' });
  const { revoked: _revoked, ...key } = listed.body.passkeys[0];
  expect(await verifyWebAuthnAssertion(signature!, statementHash(statement.body.statement), { ...key, type: 'webauthn', counter: 0 })).toBe(true);
  expect(await verifyWebAuthnAssertion(signature!, statementHash({ ...statement.body.statement, outcome: 'rejected' }), { ...key, type: 'webauthn', counter: 0 })).toBe(false);
});
