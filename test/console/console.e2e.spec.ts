import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { E2E_KEYS, startE2eApp, type E2eApp } from '../support/e2e-app';
import { waitFor } from '../support/wait-for';
import { openBrowser, signIn as signInAs, signOut as signOutOf, type Browser } from './browser';

// The web console in a real browser (Debian's Chromium, driven by playwright-core; no browser is
// downloaded) against the real app: one app for the whole file and one browser in which users take
// turns by signing in and out, as people sharing a machine would, plus a second browser for the
// reviewer who decides while the launcher watches her run's page (what the launcher sees grow live
// is caused by that decision, so it cannot have happened before her page opened). Elements are
// found by their role and accessible name. TRIAD_SCREENSHOTS=1 writes each page to docs/console/*.png.
// Projects and sub-agents are shown in the same app and browser: the app and the browser, not the
// pages, are what a file of browser tests spends its CPU on.

jest.setTimeout(180_000);

const SHOTS = process.env.TRIAD_SCREENSHOTS === '1' ? resolve(__dirname, '..', '..', 'docs', 'console') : undefined;
const KEYS = {
  ann: 'ann-secret-0123456789', // operator + reviewer: launches, so may not review her own runs
  bob: 'bob-secret-0123456789', // reviewer
  aud: 'aud-secret-0123456789', // auditor
  adm: 'adm-secret-0123456789', // admin: the webhooks page
};

/** What the tests read in the page (the test project's types have no DOM; the functions run in the page, so they name globalThis). */
interface PageGlobals {
  document: { body: unknown; cookie: string; activeElement: { id: string } | null; documentElement: { scrollWidth: number }; querySelectorAll(selector: string): { length: number } };
  localStorage: { length: number };
  MutationObserver: new (callback: (records: Array<{ addedNodes: ArrayLike<{ nodeType: number; matches?(s: string): boolean; textContent: string | null }> }>) => void) => { observe(target: unknown, options: { childList: boolean; subtree: boolean }): void };
  streamed?: string[];
  sessionStorage: { length: number };
  notReloaded?: boolean;
}

let app: E2eApp;
let browser: Browser;
/** The second reviewer's own browser: two people at two machines. */
let reviewer: Browser | undefined;
let context: BrowserContext;
let page: Page;
let runId: string;

/** The whole page, or only what the window shows (a run's timeline runs to thousands of pixels). */
async function shot(name: string, fullPage = true, of: Page = page): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await of.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });
}

/** One region of the page (a run's timeline runs to thousands of pixels). */
async function shotOf(name: string, region: Locator): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await region.screenshot({ path: join(SHOTS, `${name}.png`) });
}

const signIn = (key: string) => signInAs(page, key);
const signOut = () => signOutOf(page);

const summary = () => page.getByRole('region', { name: 'Run summary' });
/** The timeline's cards (of its open groups), and its groups (one line each, folded but for the current one). */
const timelineItems = () => page.locator('ol[aria-label="Timeline"] li.item');
const timelineGroups = () => page.locator('ol[aria-label="Timeline"] > li.group');
const fold = (title: string) => page.getByRole('button', { name: title });

beforeAll(async () => {
  app = await startE2eApp({
    // Besides, the test keys' operator (who launches projects through the API) and reviewer.
    TRIAD_API_KEYS: `ann:operator+reviewer:${KEYS.ann},bob:reviewer:${KEYS.bob},aud:auditor:${KEYS.aud},adm:admin:${KEYS.adm},ops:operator:${E2E_KEYS.operator},rev:reviewer:${E2E_KEYS.reviewer}`,
    // Slow enough that a run's events arrive one after another while the page watches.
    TRIAD_OFFLINE_LATENCY_MS: '60',
  });
  browser = await openBrowser();
  ({ context, page } = browser);
});

afterAll(async () => {
  await reviewer?.close();
  await browser?.close();
  await app?.close();
});

it('signs in with an API key; the key is not kept by the page, the session cookie is HttpOnly', async () => {
  await page.goto(`${app.url}/`);
  await shot('sign-in');
  await page.getByLabel('API key').fill('not-a-key-0123');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'the API key is not valid' }).waitFor();
  await signIn(KEYS.ann);
  const cookies = await context.cookies(app.url);
  const session = cookies.find((c) => c.name === 'triad_session');
  expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', secure: false });
  // Not readable by the page's scripts, and nothing kept in its storage.
  expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.cookie)).toBe('');
  expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).localStorage.length + (globalThis as unknown as PageGlobals).sessionStorage.length)).toBe(0);
  // An operator and reviewer: no decision log in the navigation.
  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.getByRole('link', { name: 'Reviews' }).waitFor();
  expect(await nav.getByRole('link', { name: 'Decision log' }).count()).toBe(0);
});

it('launches a run; its page follows the run to the review gate', async () => {
  await page.getByLabel('Goal').fill('Write a greeting');
  await page.getByLabel('Acceptance criteria (one per line)').fill('file hello.txt contains "Hello"\nfile bye.txt contains "Bye"');
  await page.getByText('Team, budget and policies').click();
  await page.getByLabel('Max iterations').fill('3');
  await page.getByLabel('executor max turns').fill('30');
  await shot('runs-launch');
  await page.getByRole('button', { name: 'Launch' }).click();
  await page.waitForURL(/#\/runs\/.+/);
  runId = decodeURIComponent(page.url().split('#/runs/')[1]);
  await summary().getByText('awaiting review').waitFor();
  // The current group (the review waiting) is open; the executor's turns open on demand.
  await timelineItems().filter({ hasText: 'Review opened' }).waitFor();
  await fold('Iteration 1 · Executor turns').click();
  await timelineItems().filter({ hasText: 'Phase' }).first().waitFor();
  await timelineItems().filter({ hasText: 'Tool call' }).first().waitFor();
  // Usage and cost per role, the prompt cache's reads and writes beside input and output, and the offline model named.
  const usage = summary().getByRole('table', { name: 'Usage per role' });
  await usage.waitFor();
  for (const column of ['Input tokens', 'Output tokens', 'Cache read', 'Cache written', 'Cost']) await usage.getByRole('columnheader', { name: column }).waitFor();
  await summary().getByText('offline model').waitFor();
  await shot('run', false);
});

it('shows the launcher at the review gate why she may not decide her own run, before any click', async () => {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Reviews' }).click();
  const review = page.getByRole('article').filter({ hasText: 'Write a greeting' });
  await review.getByText('You may not decide this review: you launched this run').waitFor();
  for (const name of ['Approve', 'Reject']) expect(await review.getByRole('button', { name, exact: true }).isDisabled()).toBe(true);
  // The server refuses her all the same: test/review-gate/gate/review-view.e2e.spec.ts.
});

it('another reviewer, at another machine, signed in with the keyboard, rejects with rework; the launcher watches the next iteration arrive live, without a reload', async () => {
  // The launcher goes back to her run, which waits at the gate: nothing moves until the reviewer decides.
  await page.goto(`${app.url}/#/runs/${encodeURIComponent(runId)}`);
  await summary().getByText('awaiting review').waitFor();
  await timelineItems().filter({ hasText: 'Review opened' }).waitFor();
  const early = await timelineGroups().count();
  await page.evaluate(() => {
    const g = globalThis as unknown as PageGlobals;
    g.notReloaded = true;
    // Model text streamed live shows in its own item until the turn's completed event replaces it.
    g.streamed = [];
    new g.MutationObserver((records) => {
      for (const r of records) for (const n of Array.from(r.addedNodes)) if (n.nodeType === 1 && n.matches?.('li.live')) g.streamed!.push(n.textContent ?? '');
    }).observe(g.document.body, { childList: true, subtree: true });
  });

  reviewer = await openBrowser();
  const bob = reviewer.page;
  await bob.goto(`${app.url}/`);
  await bob.getByLabel('API key').waitFor();
  await bob.keyboard.press('Tab');
  expect(await bob.evaluate(() => (globalThis as unknown as PageGlobals).document.activeElement?.id)).toBe('api-key');
  await bob.keyboard.type(KEYS.bob);
  await bob.keyboard.press('Enter');
  await bob.getByRole('button', { name: 'Sign out' }).waitFor();
  // A reviewer only: no launch form.
  expect(await bob.getByRole('form', { name: 'Launch a run' }).count()).toBe(0);

  await bob.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Reviews' }).click();
  const review = bob.getByRole('article').filter({ hasText: 'Write a greeting' });
  await review.getByText('Reviewer verdict: APPROVE').waitFor();
  await review.getByRole('region', { name: 'Workspace files of iteration 1' }).getByText('hello.txt').waitFor();
  await shot('review', true, bob);
  await review.getByLabel('Reason for rejecting').fill('Say hello to the world too');
  expect(await review.getByLabel('Send back to the executor for rework').isChecked()).toBe(true);
  const decidedId = (await review.locator('dd.mono').first().textContent())!;
  // The list's reads are held from here on: the decided review must leave the list with the notice,
  // not when the next read comes back.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  await bob.route('**/v1/reviews', async (route) => {
    await held;
    await route.continue();
  });
  await review.getByRole('button', { name: 'Reject' }).click();
  await bob.getByRole('status').filter({ hasText: 'rejected' }).waitFor();
  expect(await bob.getByRole('article').filter({ hasText: decidedId }).count()).toBe(0);
  // Reads pass again (the route stays, holding nothing: removing it would answer the held read twice).
  release();

  // The launcher's page, open since before the decision, grows with it.
  // Three more groups: the second iteration's executor turns, reviewer verdict and human decision.
  await page.waitForFunction((n) => (globalThis as unknown as PageGlobals).document.querySelectorAll('ol[aria-label="Timeline"] > li.group').length > n + 2, early);
  await timelineGroups().filter({ hasText: 'Iteration 1 · Human decision: rejected by user:bob' }).waitFor();
  await timelineGroups().filter({ hasText: 'Iteration 2 · Human decision' }).getByRole('link', { name: /waits for a human/ }).waitFor();
  await fold('Iteration 2 · Executor turns').click();
  await timelineItems().filter({ hasText: '2 (human rejected)' }).waitFor();
  await timelineItems().filter({ hasText: 'Feedback: Say hello to the world too' }).waitFor();
  // The summary is read again after the last event: iteration 2, back at the gate.
  await summary().getByText('2 of 3').waitFor();
  await summary().getByText('awaiting review').waitFor();
  expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).notReloaded)).toBe(true);
  const streamed = await page.evaluate(() => (globalThis as unknown as PageGlobals).streamed!);
  expect(streamed.length).toBeGreaterThan(0);
  expect(streamed.join('\n')).toMatch(/streaming/);
  await signOut();
});

it('approves as a reviewer who did not launch the run, and the run completes', async () => {
  const second = reviewer!;
  const bob = second.page;
  await bob.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Reviews' }).click();
  const review = bob.getByRole('article').filter({ hasText: 'Write a greeting' });
  await review.getByRole('region', { name: 'Workspace files of iteration 2' }).getByText('diff against iteration 1').waitFor();
  await review.getByLabel('Reason for approving').fill('Both files are right');
  await review.getByRole('button', { name: 'Approve' }).click();
  await bob.getByRole('status').filter({ hasText: 'approved' }).waitFor();
  await bob.getByText('No review waits for a decision.').waitFor();
  await bob.goto(`${app.url}/#/runs/${encodeURIComponent(runId)}`);
  await bob.getByRole('region', { name: 'Run summary' }).getByText('COMPLETED', { exact: true }).waitFor();
  await bob.getByRole('status').filter({ hasText: 'Run ended' }).waitFor();
  await bob.locator('ol[aria-label="Timeline"] > li').filter({ hasText: 'Run ended' }).scrollIntoViewIfNeeded();
  await shot('run-completed', false, bob);
  await signOutOf(bob);
  reviewer = undefined;
  await second.close();
});

it('an auditor filters, exports and verifies the decision log', async () => {
  await signIn(KEYS.aud);
  const nav = page.getByRole('navigation', { name: 'Main' });
  expect(await nav.getByRole('link', { name: 'Reviews' }).count()).toBe(0);
  await nav.getByRole('link', { name: 'Decision log' }).click();
  const table = page.getByRole('table', { name: 'Decisions' });
  await table.waitFor();
  expect(await table.locator('tbody tr').count()).toBe(2);
  await page.getByLabel('Outcome').selectOption('rejected');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.querySelectorAll('table[aria-label="Decisions"] tbody tr').length === 1);
  await page.getByRole('button', { name: 'Verify the log' }).click();
  await page.getByRole('status').filter({ hasText: 'The log is intact: 2 records checked.' }).waitFor();
  await shot('decisions');
  // The exports carry the filters and are read with the session cookie.
  const csvHref = (await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href'))!;
  const ndjsonHref = (await page.getByRole('link', { name: 'Export NDJSON' }).getAttribute('href'))!;
  const csv = await page.request.get(`${app.url}${csvHref}`);
  expect(csv.headers()['content-type']).toContain('text/csv');
  const csvLines = (await csv.text()).trim().split('\r\n');
  expect(csvLines[0].startsWith('seq,decisionId,runId')).toBe(true);
  expect(csvLines).toHaveLength(2);
  const ndjson = (await (await page.request.get(`${app.url}${ndjsonHref}`)).text()).trim().split('\n');
  expect(ndjson.map((l) => JSON.parse(l).outcome)).toEqual(['rejected']);
  // A page not for an auditor, opened by its address, says so instead of failing.
  await page.goto(`${app.url}/#/reviews`);
  await page.getByRole('alert').filter({ hasText: 'This page is not for your roles (auditor).' }).waitFor();
  expect(await page.getByRole('article').count()).toBe(0);
});

it('replays the run at a turn and moves through its turns', async () => {
  await page.goto(`${app.url}/#/replay/${encodeURIComponent(runId)}`);
  await page.getByRole('heading', { name: /^Context at turn \d+$/ }).waitFor();
  await page.getByLabel('Turn number').fill('4');
  await page.getByLabel('Turn number').press('Tab');
  await page.getByRole('heading', { name: 'Context at turn 4' }).waitFor();
  await page.getByRole('button', { name: 'Previous turn' }).click();
  await page.getByRole('heading', { name: 'Context at turn 3' }).waitFor();
  await page.getByRole('region', { name: 'architect conversation' }).getByRole('listitem').first().waitFor();
  // An auditor may not fork.
  expect(await page.getByRole('form', { name: 'Fork' }).count()).toBe(0);
  await shot('replay');
  await signOut();
});

it('forks the run from a turn with a prompt override', async () => {
  await signIn(KEYS.ann);
  await page.goto(`${app.url}/#/replay/${encodeURIComponent(runId)}`);
  // The page has read the run's turns (the context of its last turn is on show) before one is picked.
  await page.getByRole('heading', { name: /^Context at turn \d+$/ }).waitFor();
  await page.getByLabel('Turn number').fill('2');
  await page.getByLabel('Turn number').press('Tab');
  await page.getByRole('heading', { name: 'Context at turn 2' }).waitFor();
  const fork = page.getByRole('form', { name: 'Fork' });
  await fork.getByLabel('executor system prompt').fill('Write short files.');
  await fork.getByRole('button', { name: 'Fork at turn 2' }).click();
  await page.waitForURL((url) => url.hash.startsWith('#/runs/') && !url.hash.endsWith(encodeURIComponent(runId)));
  await timelineGroups().filter({ hasText: `Forked from ${runId} at turn 2` }).waitFor();
});

it('shows the tool approvals page to operators and reviewers', async () => {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tool approvals' }).click();
  await page.getByText('No tool call waits for a decision.').waitFor();
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

  await signOut();
  await page.goto(`${app.url}/#/projects`);
  await signIn(E2E_KEYS.reviewer);
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
  const project = page.getByRole('region', { name: 'Project summary' });
  await project.getByText('completed', { exact: true }).waitFor();
  await project.getByText(/approved by .+: Both files are right/).waitFor();
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
  await shotOf('run-sub-agents', page.getByRole('region', { name: 'Sub-agents' }));

  // An operator cancels a project from its page, on a phone-sized screen; no review form for them.
  await signOut();
  await signIn(E2E_KEYS.operator);
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
  expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  // Back to the launcher, at the size the next tests start from.
  await page.setViewportSize({ width: 1280, height: 900 });
  await signOut();
  await signIn(KEYS.ann);
});

it("shows the webhooks page to admins only: each endpoint's last delivery and its delivery log", async () => {
  const added = await app.request<{ id: string }>('POST', '/v1/webhooks', { as: { secret: KEYS.adm }, body: { url: 'http://127.0.0.1:9/hook', events: ['approval.requested'], allowPrivate: true } });
  expect(added.status).toBe(201);
  await signOut();
  await signIn(KEYS.ann);
  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.getByRole('link', { name: 'Runs' }).waitFor();
  expect(await nav.getByRole('link', { name: 'Webhooks' }).count()).toBe(0);
  await signOut();
  await signIn(KEYS.adm);
  await nav.getByRole('link', { name: 'Webhooks' }).click();
  const row = page.getByRole('table', { name: 'Webhooks' }).getByRole('row').filter({ hasText: added.body.id });
  await row.getByText('none yet').waitFor();
  await row.getByRole('button', { name: 'Deliveries' }).click();
  await page.getByText('No deliveries yet.').waitFor();
  await shot('webhooks');
  expect((await app.request('DELETE', `/v1/webhooks/${added.body.id}`, { as: { secret: KEYS.adm } })).status).toBe(204);
});

it('fits a 390 px wide screen', async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  for (const [name, hash] of [
    ['runs-mobile', '#/runs'],
    ['run-mobile', `#/runs/${encodeURIComponent(runId)}`],
  ] as const) {
    await page.goto(`${app.url}/${hash}`);
    await page.getByRole('heading', { level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    if (name === 'run-mobile') await summary().getByText('COMPLETED', { exact: true }).waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot(name, name === 'runs-mobile');
  }
  await page.setViewportSize({ width: 1280, height: 900 });
});

it('ends the session at sign-out: the cookie is gone and the API refuses it', async () => {
  const before = (await context.cookies(app.url)).find((c) => c.name === 'triad_session')!;
  await signOut();
  expect((await context.cookies(app.url)).find((c) => c.name === 'triad_session')).toBeUndefined();
  const res = await fetch(`${app.url}/v1/runs`, { headers: { cookie: `triad_session=${before.value}` } });
  expect(res.status).toBe(401);
});

it('runs every page above, and the API docs viewer, under its Content-Security-Policy with no violation', async () => {
  // The docs viewer (Swagger UI) renders the API from its own script files.
  await page.goto(`${app.url}/docs`);
  await page.locator('.opblock').first().waitFor();
  expect(browser.cspViolations()).toEqual([]);
  // A probe that a violation would reach the test at all: an inline script, which the policy blocks.
  await page.evaluate(() => {
    const doc = (globalThis as unknown as { document: { createElement(t: string): { textContent: string }; body: { appendChild(n: unknown): void } } }).document;
    const probe = doc.createElement('script');
    probe.textContent = 'globalThis.__inlineRan = true';
    doc.body.appendChild(probe);
  });
  await waitFor('the probe reported', async () => browser.cspViolations().length > 0, 10_000);
  expect(await page.evaluate(() => (globalThis as unknown as { __inlineRan?: boolean }).__inlineRan)).toBeUndefined();
});
