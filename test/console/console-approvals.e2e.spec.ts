import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { startFakeMessagesApi, toolUseStep, type FakeMessagesApi } from '../support/fake-messages-api';
import { tempDir } from '../support/temp-dir';
import { appEnv, KEYS, startApp, waitForRun, type AppServer } from '../team/resilience/approvals-app';
import { openBrowser, signIn, signOut, type Browser } from './browser';

// A risky tool call decided in the web console: the app drives a run on the Anthropic provider
// against a loopback fake of the Messages API, whose executor asks for run_command (risk high),
// which waits for a human. One app and one browser for the file.

const API_KEY = 'sk-ant-test-console-0123456789';
const MODEL = 'claude-sonnet-4-6';
const TEAM = { architect: { model: MODEL }, executor: { model: MODEL }, reviewer: { model: MODEL } };
const SHOTS = process.env.TRIAD_SCREENSHOTS === '1' ? resolve(__dirname, '..', '..', 'docs', 'console') : undefined;

let api: FakeMessagesApi;
let server: AppServer;
let dir: { path: string; remove(): void };
let browser: Browser;
let page: Page;

beforeAll(async () => {
  api = await startFakeMessagesApi({ apiKey: API_KEY });
  dir = tempDir('triad-console-approvals-');
  server = await startApp(appEnv(join(dir.path, 'data'), api.url, API_KEY));
  browser = await openBrowser();
  page = browser.page;
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
