import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { E2E_KEYS, startE2eApp, type E2eApp } from '../support/e2e-app';
import { openBrowser, signIn, signOut, type Browser } from './browser';

// Projects and sub-agents in the web console (Debian's Chromium through playwright-core, the real
// app on the offline model): an operator launches a project of two tasks through the API, a
// reviewer follows it in the browser and approves its review; then a run whose criterion asks
// for delegation shows its sub-agent in the run page's tree. One app and one browser for the file.

jest.setTimeout(180_000);

const SHOTS = process.env.TRIAD_SCREENSHOTS === '1' ? resolve(__dirname, '..', '..', 'docs', 'console') : undefined;

let app: E2eApp;
let browser: Browser;
let page: Page;

/** The whole page, or one region of it (a run's timeline runs to thousands of pixels). */
async function shot(name: string, region?: Locator): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  const path = join(SHOTS, `${name}.png`);
  await (region ? region.screenshot({ path }) : page.screenshot({ path, fullPage: true }));
}

beforeAll(async () => {
  app = await startE2eApp();
  browser = await openBrowser();
  page = browser.page;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

it("shows a project's tasks in dependency order, a reviewer approves it and it completes; a run's sub-agent shows in its tree", async () => {
  const launched = await app.request<{ projectId: string }>('POST', '/v1/projects', {
    body: {
      goal: 'Two greetings',
      tasks: [
        { key: 'second', goal: 'Write the farewell', acceptanceCriteria: ['file bye.txt contains "Bye"'], dependsOn: ['first'] },
        { key: 'first', goal: 'Write the greeting', acceptanceCriteria: ['file hello.txt contains "Hello"'] },
      ],
    },
  });
  expect(launched.status).toBe(202);
  const { projectId } = launched.body;

  await page.goto(`${app.url}/#/projects`);
  await signIn(page, E2E_KEYS.reviewer);
  await page.getByRole('table', { name: 'Projects' }).getByRole('link', { name: 'Two greetings' }).click();
  await page.waitForURL((url) => url.hash === `#/projects/${projectId}`);

  // The review form shows once both tasks have completed (the page reads the project again as it moves).
  const review = page.getByRole('form', { name: 'Approve the project' });
  await review.waitFor({ timeout: 120_000 });
  const tasks = page.getByRole('table', { name: 'Tasks' });
  const rows = tasks.locator('tbody tr');
  expect(await rows.locator('th').allTextContents()).toEqual(['first', 'second']);
  const second = rows.filter({ hasText: 'Write the farewell' });
  expect(await second.locator('td').nth(1).textContent()).toBe('first');
  expect(await second.getByText('completed', { exact: true }).count()).toBe(1);
  await tasks.getByRole('link', { name: 'Run of task first' }).waitFor();
  // A reviewer only: no cancel, no retry.
  expect(await page.getByRole('button', { name: 'Cancel project' }).count()).toBe(0);
  await shot('project');

  await review.getByLabel('Reason for approving').fill('Both files are right');
  await review.getByRole('button', { name: 'Approve project' }).click();
  await page.getByRole('status').filter({ hasText: 'Project approved' }).waitFor();
  const summary = page.getByRole('region', { name: 'Project summary' });
  await summary.getByText('completed', { exact: true }).waitFor();
  await summary.getByText(/approved by .+: Both files are right/).waitFor();
  expect(await page.getByRole('form', { name: 'Approve the project' }).count()).toBe(0);

  // A run that delegates: its sub-agent in the tree, with its role, status and result.
  const run = await app.request<{ runId: string }>('POST', '/v1/runs', {
    body: { goal: 'Delegate a greeting', acceptanceCriteria: ['delegate to a coder: file hello.txt contains "Hello"'], reviewPolicy: { humanGate: false } },
  });
  expect(run.status).toBe(202);
  await page.goto(`${app.url}/#/runs/${encodeURIComponent(run.body.runId)}`);
  const tree = page.getByRole('list', { name: 'Delegation tree' });
  const sub = tree.getByRole('listitem', { name: 'Sub-agent executor/1' });
  await sub.getByText('completed', { exact: true }).waitFor({ timeout: 120_000 });
  expect(await sub.textContent()).toContain('coder');
  await sub.getByText('wrote hello.txt', { exact: false }).waitFor();
  await shot('run-sub-agents', page.getByRole('region', { name: 'Sub-agents' }));

  // An operator cancels a project from its page, on a phone-sized screen; no review form for them.
  await signOut(page);
  await signIn(page, E2E_KEYS.operator);
  const other = await app.request<{ projectId: string }>('POST', '/v1/projects', {
    body: { goal: 'One note', tasks: [{ key: 'note', goal: 'Write a note', acceptanceCriteria: ['file note.txt exists'] }] },
  });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${app.url}/#/projects/${other.body.projectId}`);
  await page.getByRole('button', { name: 'Cancel project' }).click();
  await page.getByRole('status').filter({ hasText: 'Cancelled; the project is now cancelled.' }).waitFor();
  await page.getByRole('table', { name: 'Tasks' }).waitFor();
  expect(await page.getByRole('form', { name: 'Approve the project' }).count()).toBe(0);
  expect(await page.getByRole('button', { name: 'Cancel project' }).count()).toBe(0);
  expect(await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
});
