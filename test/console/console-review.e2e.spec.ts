import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import type { RunSummary } from '../../src/http/api-types';
import { startE2eApp, type E2eApp } from '../support/e2e-app';
import { waitFor } from '../support/wait-for';
import { openBrowser, signIn, signOut, type Browser } from './browser';

// The console's review page in a real browser (Debian's Chromium through playwright-core) against
// the real app, on a run of three iterations with a human rejection in the middle (four criteria,
// two met per iteration by the offline model; bob rejects the second over the API). ann launched
// it: her page shows the history and why she may not decide, beside disabled buttons; bob approves
// with the keyboard alone, through the confirmation dialog. One app and one browser for the file.
// TRIAD_SCREENSHOTS=1 writes the page to docs/console/review-page.png.

jest.setTimeout(120_000);

const KEYS = {
  ann: 'ann-secret-0123456789', // operator + reviewer: launches, so may not review her own run
  bob: 'bob-secret-0123456789', // reviewer
};
const CRITERIA = ['file a.txt contains "A"', 'file b.txt contains "B"', 'file c.txt contains "C"', 'file d.txt contains "D"'];
const FEEDBACK = 'Please sign the letters too';

/** What the tests read in the page (the test project's types have no DOM). */
interface PageGlobals {
  document: { activeElement: { id: string; textContent: string | null; tagName: string } | null };
}

let app: E2eApp;
let browser: Browser;
let page: Page;
let runId: string;
let reviewId: string;
const pageErrors: string[] = [];
const SHOTS = process.env.TRIAD_SCREENSHOTS === '1' ? resolve(__dirname, '..', '..', 'docs', 'console') : undefined;

async function shot(name: string): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

const as = (who: keyof typeof KEYS) => ({ as: { secret: KEYS[who] } });

async function pendingAt(iteration: number): Promise<RunSummary> {
  return waitFor(
    `run ${runId} at the gate in iteration ${iteration}`,
    async () => {
      const run = (await app.request<RunSummary>('GET', `/v1/runs/${runId}`, as('bob'))).body;
      return run.status === 'awaiting_review' && run.pendingReview?.iteration === iteration ? run : undefined;
    },
    60_000,
    50,
    () => app.stderr,
  );
}

/** The focused element, as plain data (an element itself does not cross into the test). */
const active = () =>
  page.evaluate(() => {
    const el = (globalThis as unknown as PageGlobals).document.activeElement;
    return el ? { id: el.id, tagName: el.tagName, text: (el.textContent ?? '').trim() } : undefined;
  });

beforeAll(async () => {
  app = await startE2eApp({ TRIAD_API_KEYS: `ann:operator+reviewer:${KEYS.ann},bob:reviewer:${KEYS.bob}` });
  const launched = await app.request<{ runId: string }>('POST', '/v1/runs', { ...as('ann'), body: { goal: 'Write four letters', acceptanceCriteria: CRITERIA, maxIterations: 3 } });
  expect(launched.status).toBe(202);
  runId = launched.body.runId;
  const second = await pendingAt(2);
  expect((await app.request('POST', `/v1/reviews/${second.pendingReview!.reviewId}/reject`, { ...as('bob'), body: { reason: FEEDBACK } })).status).toBe(200);
  reviewId = (await pendingAt(3)).pendingReview!.reviewId;
  browser = await openBrowser();
  page = browser.page;
  page.on('console', (m) => void (m.type() === 'error' && pageErrors.push(`${m.text()} at ${m.location().url}`)));
  page.on('pageerror', (err) => void pageErrors.push(String(err)));
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

it("the launcher opens her run's review from the run page: the history, both diffs, and her controls disabled with the reason", async () => {
  await page.goto(`${app.url}/`);
  await signIn(page, KEYS.ann);
  await page.goto(`${app.url}/#/runs/${encodeURIComponent(runId)}`);
  await page.getByRole('link', { name: 'Review this run' }).click();
  await page.waitForURL((url) => url.hash === `#/reviews/${encodeURIComponent(reviewId)}`);

  await page.getByRole('heading', { name: 'Iteration 3, under review' }).waitFor();
  for (const c of CRITERIA) await page.getByRole('listitem').filter({ hasText: c }).first().waitFor();
  const current = page.getByRole('region', { name: 'Iteration 3, under review' });
  await current.getByText(`Sent back by user:bob`).waitFor();
  await current.getByText(FEEDBACK).first().waitFor();
  // Nothing changed since iteration 2; against the start, every letter is added.
  await current.getByRole('region', { name: 'Diff against iteration 2' }).getByText('No file changed.').waitFor();
  await current.getByRole('button', { name: 'The start' }).click();
  const start = current.getByRole('region', { name: 'Diff against the start' });
  await start.getByText('+++ b/d.txt').waitFor();
  expect(await start.locator('span.add').filter({ hasText: /^\+A\s*$/ }).count()).toBe(1);

  // Every earlier iteration: the reviewer agent's findings, bob's rejection with its reason.
  const history = page.getByRole('region', { name: 'Earlier iterations' });
  await history.getByText('Reviewer verdict: REQUEST_CHANGES').waitFor();
  await history.getByRole('list', { name: 'Findings of iteration 1' }).getByText('file c.txt contains "C"', { exact: false }).waitFor();
  const second = history.getByRole('article', { name: 'Iteration 2' });
  await second.getByText('Rejected by user:bob').waitFor();
  await second.getByText(FEEDBACK).waitFor();

  // Who may decide, and why not her: the buttons are there, disabled, and say why.
  const decision = page.getByRole('region', { name: 'Decision' });
  await decision.getByText('You may not decide this review: you launched this run').waitFor();
  for (const name of ['Approve', 'Reject']) {
    const button = decision.getByRole('button', { name, exact: true });
    expect(await button.isDisabled()).toBe(true);
    expect(await button.getAttribute('aria-describedby')).toBe('why-not');
  }
  await shot('review-page');
  // The shortcut does nothing for her.
  await page.keyboard.press('a');
  expect(await page.getByRole('dialog').count()).toBe(0);
  await signOut(page);
});

it('another reviewer approves with the keyboard alone: Tab to Approve, Enter, Escape cancels, Enter with a reason confirms', async () => {
  await page.goto(`${app.url}/#/reviews/${encodeURIComponent(reviewId)}`);
  await page.getByLabel('API key').waitFor();
  await page.keyboard.press('Tab');
  await page.keyboard.type(KEYS.bob);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Iteration 3, under review' }).waitFor();
  const decision = page.getByRole('region', { name: 'Decision' });
  await decision.getByText('a approves').waitFor();

  // Tab until the Approve button has the focus.
  await waitFor(
    'the Approve button focused by Tab',
    async () => {
      const el = await active();
      if (el?.tagName === 'BUTTON' && el.text === 'Approve') return true;
      await page.keyboard.press('Tab');
      return false;
    },
    10_000,
    0,
  );
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'Approve this work?' });
  await dialog.waitFor();
  expect((await active())?.id).toBe('decision-reason');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  expect((await app.request<RunSummary>('GET', `/v1/runs/${runId}`, as('bob'))).body.status).toBe('awaiting_review');

  // The shortcut opens it again, even pressed at once after Escape (before the closed dialog's
  // `close` event has run); Enter in the reason confirms.
  await page.keyboard.press('a');
  await dialog.waitFor();
  await page.keyboard.press('Escape');
  await page.keyboard.press('a');
  await dialog.waitFor();
  expect((await active())?.id).toBe('decision-reason');
  await page.keyboard.type('All four letters are right');
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: `Review ${reviewId} approved; the run is now completed.` }).waitFor();
  await decision.getByText('You may not decide this review: review').waitFor();
  expect(await decision.getByRole('button', { name: 'Approve', exact: true }).isDisabled()).toBe(true);
  const run = (await app.request<RunSummary>('GET', `/v1/runs/${runId}`, as('bob'))).body;
  expect(run).toMatchObject({ status: 'completed', terminationReason: 'COMPLETED' });
  await signOut(page);
});

it('shows no console errors and no policy violations on the way', () => {
  expect(pageErrors).toEqual([]);
  expect(browser.cspViolations()).toEqual([]);
});
