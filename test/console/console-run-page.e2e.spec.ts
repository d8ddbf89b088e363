import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { E2E_KEYS, startE2eApp, type E2eApp } from '../support/e2e-app';
import { waitForRun } from '../support/app-client';
import { openBrowser, signIn, type Browser } from './browser';

// The run page of real, long runs in a real browser (Debian's Chromium through playwright-core)
// against the real app, on the offline model: one app and one browser for the file. A run of three
// iterations (the reviewer asks for changes, then a human rejects) shows its timeline folded by
// iteration and phase; a run of about a hundred turns (a plan-first executor over thirty criteria)
// loads in well under a second; replay and fork pick turns. Every page load is watched for console
// errors and failed requests. TRIAD_SCREENSHOTS=1 writes docs/console/run-timeline.png.

jest.setTimeout(120_000);

const SHOTS = process.env.TRIAD_SCREENSHOTS === '1' ? resolve(__dirname, '..', '..', 'docs', 'console') : undefined;
const ANN = 'ann-secret-0123456789'; // operator + reviewer

/** What the tests read in the page (the test project's types have no DOM: the functions run in the page). */
interface PageGlobals {
  document: {
    activeElement: { id: string } | null;
    querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }>;
  };
  performance: { now(): number };
}

interface RunView {
  runId: string;
  status: string;
  iteration: number;
  usage: { turns: number };
  pendingReview?: { reviewId: string };
}

let app: E2eApp;
let browser: Browser;
let page: Page;
/** Three iterations: REQUEST_CHANGES, then APPROVE rejected by a human, then APPROVE at the gate. */
let loop: RunView;
/** About a hundred turns, at the gate. */
let long: RunView;
const problems: string[] = [];

const groups = () => page.locator('ol[aria-label="Timeline"] > li.group');
const fold = (name: RegExp) => page.getByRole('button', { name });
const activeId = () => page.evaluate(() => (globalThis as unknown as PageGlobals).document.activeElement?.id);
/** Waits until the element of this id has the focus (the page moves it once it has rendered there). */
const focusReaches = (id: string) => page.waitForFunction((want) => (globalThis as unknown as PageGlobals).document.activeElement?.id === want, id);

async function atGate(runId: string, iteration: number): Promise<RunView> {
  const ended = new Set(['completed', 'failed', 'blocked', 'cancelled']);
  return waitForRun<RunView, 'operator'>(
    app,
    runId,
    (r) => {
      if (ended.has(r.status)) throw new Error(`run ${runId} ended before its review: ${JSON.stringify(r)}`);
      return r.status === 'awaiting_review' && r.iteration === iteration;
    },
    60_000,
    { everyMs: 100, detail: () => app.stderr },
  );
}

beforeAll(async () => {
  app = await startE2eApp({ TRIAD_API_KEYS: `ann:operator+reviewer:${ANN},ops:operator:${E2E_KEYS.operator},rev:reviewer:${E2E_KEYS.reviewer}` });
  const launched = await app.request<{ runId: string }>('POST', '/v1/runs', {
    body: { goal: 'Write three files', acceptanceCriteria: ['file a.txt exists', 'file b.txt exists', 'file c.txt exists'], maxIterations: 3 },
  });
  const criteria = Array.from({ length: 30 }, (_, i) => `file f${String(i + 1).padStart(2, '0')}.txt exists`);
  const longLaunch = await app.request<{ runId: string }>('POST', '/v1/runs', {
    body: { goal: 'Write thirty files', acceptanceCriteria: criteria, budget: { totalTokens: 5_000_000 }, team: { executor: { maxTurns: 200, loop: { strategy: 'plan_execute' } }, reviewer: { maxTurns: 100 } } },
  });
  expect([launched.status, longLaunch.status]).toEqual([202, 202]);
  const first = await atGate(launched.body.runId, 2);
  const rejected = await app.request('POST', `/v1/reviews/${first.pendingReview!.reviewId}/reject`, { as: 'reviewer', body: { reason: 'Say more in c.txt', rework: true } });
  expect(rejected.status).toBe(200);
  [loop, long] = await Promise.all([atGate(launched.body.runId, 3), atGate(longLaunch.body.runId, 1)]);
  expect(long.usage.turns).toBeGreaterThanOrEqual(100);

  browser = await openBrowser();
  page = browser.page;
  page.on('console', (m) => void (m.type() === 'error' && problems.push(`console: ${m.text()}`)));
  page.on('response', (r) => void (r.status() >= 400 && problems.push(`${r.status()} ${r.request().method()} ${r.url()}`)));
  await page.goto(`${app.url}/`);
  await signIn(page, ANN);
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

it('folds the timeline by iteration and phase, each group one line with its counts and time, the current one open and the gate a link to its review', async () => {
  await page.goto(`${app.url}/#/runs/${encodeURIComponent(loop.runId)}`);
  await fold(/^Iteration 3 · Human decision/).waitFor();
  const lines = (await groups().locator('.group-line .kind').allTextContents()).map((t) => t.trim());
  expect(lines).toEqual([
    'Launched',
    'Iteration 1 · Architect plan',
    'Iteration 1 · Executor turns',
    'Iteration 1 · Reviewer verdict: REQUEST_CHANGES',
    'Iteration 2 · Executor turns',
    'Iteration 2 · Reviewer verdict: APPROVE',
    'Iteration 2 · Human decision: rejected by user:rev',
    'Iteration 3 · Executor turns',
    'Iteration 3 · Reviewer verdict: APPROVE',
    'Iteration 3 · Human decision',
  ]);
  // Only the current group is open; each line counts its turns, tool calls, events and time.
  expect(await page.locator('button.fold[aria-expanded="true"]').count()).toBe(1);
  expect(await fold(/^Iteration 3 · Human decision/).getAttribute('aria-expanded')).toBe('true');
  expect(await fold(/^Iteration 1 · Executor turns/).textContent()).toMatch(/\d+ turns \(turns \d+–\d+\) · \d+ tool calls · \d+ events · [\d.]+ (ms|s)/);
  // The folded groups have no cards in the page: only the open group's one event.
  expect(await page.locator('ol[aria-label="Timeline"] li.item').count()).toBe(1);
  const gate = page.getByRole('link', { name: `Review ${loop.pendingReview!.reviewId} waits for a human` });
  expect(await gate.getAttribute('href')).toBe(`#/reviews/${loop.pendingReview!.reviewId}`);

  // Opening a group shows its cards; closing it removes them.
  const executor = fold(/^Iteration 1 · Executor turns/);
  await executor.click();
  expect(await executor.getAttribute('aria-expanded')).toBe('true');
  const cards = page.getByRole('list', { name: 'Iteration 1 · Executor turns' });
  await cards.locator('li.item').filter({ hasText: 'Tool call' }).first().waitFor();
  expect(await cards.locator('li.item').filter({ hasText: 'Work submitted' }).count()).toBe(1);
  if (SHOTS) {
    mkdirSync(SHOTS, { recursive: true });
    await page.getByRole('region', { name: /Timeline/ }).screenshot({ path: join(SHOTS, 'run-timeline.png') });
  }
  await executor.click();
  expect(await executor.getAttribute('aria-expanded')).toBe('false');
  expect(await cards.count()).toBe(0);
});

it('moves turn by turn, and jumps to turn N, opening its group and taking the focus there', async () => {
  const turns = page.getByRole('navigation', { name: 'Turns' });
  await turns.getByRole('button', { name: 'Next turn' }).click();
  await focusReaches('turn-1');
  expect(await fold(/^Iteration 1 · Architect plan/).getAttribute('aria-expanded')).toBe('true');
  // The architect's two turns (a look at the workspace, the plan), then the executor's first, in its group.
  await turns.getByRole('button', { name: 'Next turn' }).press('Enter');
  await focusReaches('turn-2');
  expect(await fold(/^Iteration 1 · Executor turns/).getAttribute('aria-expanded')).toBe('false');
  await turns.getByRole('button', { name: 'Next turn' }).press('Enter');
  await focusReaches('turn-3');
  expect(await fold(/^Iteration 1 · Executor turns/).getAttribute('aria-expanded')).toBe('true');
  expect(await page.locator('#turn-3').textContent()).toContain('Turn 3 · executor said');
  // Jump to a turn of the last iteration, with the keyboard.
  const last = loop.usage.turns;
  await turns.getByLabel('Jump to turn').fill(String(last - 1));
  await turns.getByLabel('Jump to turn').press('Enter');
  await focusReaches(`turn-${last - 1}`);
  expect(await page.locator(`#turn-${last - 1}`).textContent()).toContain(`Turn ${last - 1} · reviewer said`);
  await turns.getByRole('button', { name: 'Previous turn' }).click();
  await focusReaches(`turn-${last - 2}`);
  await turns.getByText(`Turn ${last - 2} of 1–${last}`).waitFor();
  await turns.getByRole('button', { name: 'Next turn' }).click();
  await focusReaches(`turn-${last - 1}`);
  await turns.getByRole('button', { name: 'Next turn' }).click();
  await focusReaches(`turn-${last}`);
  // At the last turn the button is off.
  expect(await turns.getByRole('button', { name: 'Next turn' }).isDisabled()).toBe(true);
  expect(await activeId()).toBe(`turn-${last}`);
});

it('loads and renders the page of a run of about a hundred turns in under a second (measured from navigation start)', async () => {
  const all = await app.request<{ events: unknown[] }>('GET', `/v1/runs/${long.runId}/events`);
  const events = all.body.events.length;
  // A new document, so that its clock starts at this navigation.
  await page.goto('about:blank');
  await page.goto(`${app.url}/#/runs/${encodeURIComponent(long.runId)}`);
  const handle = await page.waitForFunction(
    (n) => {
      const g = globalThis as unknown as PageGlobals;
      const counted = Array.from(g.document.querySelectorAll('[role="status"]')).some((s) => (s.textContent ?? '').includes(`· ${n} events`));
      return counted && g.document.querySelectorAll('ol[aria-label="Timeline"] > li.group').length > 0 ? g.performance.now() : false;
    },
    events,
    { polling: 'raf', timeout: 30_000 },
  );
  const ms = Math.round((await handle.jsonValue()) as number);
  console.log(`run page of ${long.usage.turns} turns (${events} events): timeline rendered ${ms} ms after navigation start`);
  expect(ms).toBeLessThan(3000);
  // Folded groups are lines only: the cards in the page are the open group's (the review waiting).
  expect(await page.locator('ol[aria-label="Timeline"] li.item').count()).toBeLessThanOrEqual(2);
  expect(await fold(/^Iteration 1 · Executor turns/).textContent()).toMatch(/\d{2,} turns/);
});

it('replays turn by turn: the slider, its buttons and the number all move by turn, and the context is the one at that turn', async () => {
  const last = loop.usage.turns;
  await page.goto(`${app.url}/#/replay/${encodeURIComponent(loop.runId)}`);
  const context = (turn: number) => page.getByRole('region', { name: `Context at turn ${turn}` });
  await context(last).getByText(`${last} turns ·`).waitFor();
  const slider = page.getByLabel(`Turn (0 to ${last})`);
  await slider.focus();
  await slider.press('ArrowLeft');
  await context(last - 1).getByText(`${last - 1} turns ·`).waitFor();
  await page.getByRole('button', { name: 'Previous turn' }).click();
  await context(last - 2).getByText(`${last - 2} turns ·`).waitFor();
  await page.getByLabel('Turn number').fill('3');
  await page.getByLabel('Turn number').press('Tab');
  await context(3).getByText('3 turns ·').waitFor();
  await page.getByRole('region', { name: 'executor conversation' }).getByRole('listitem').first().waitFor();
});

it('warns before forking at a turn with nothing left to do, forks only when confirmed, and a fork at a turn with work left goes ahead at once', async () => {
  const forks: string[] = [];
  const watch = (r: { method(): string; url(): string }) => void (r.method() === 'POST' && r.url().endsWith('/fork') && forks.push(r.url()));
  page.on('request', watch);
  try {
    const last = loop.usage.turns;
    await page.getByLabel('Turn number').fill(String(last));
    await page.getByLabel('Turn number').press('Tab');
    await page.getByRole('heading', { name: `Context at turn ${last}` }).waitFor();
    const form = page.getByRole('form', { name: 'Fork' });
    await form.getByRole('button', { name: `Fork at turn ${last}` }).click();
    const warning = form.getByRole('alert');
    await warning.getByText(`A fork at turn ${last} has nothing left to do.`).waitFor();
    expect(await warning.textContent()).toContain(`straight back to the review gate`);
    await warning.getByRole('button', { name: 'Cancel' }).click();
    expect(await form.getByRole('alert').count()).toBe(0);
    expect(forks).toEqual([]);
    // Confirmed: the fork goes straight to a review of its own, with no turn.
    await form.getByRole('button', { name: `Fork at turn ${last}` }).click();
    await form.getByRole('alert').getByRole('button', { name: 'Fork anyway' }).click();
    await page.waitForURL((url) => url.hash.startsWith('#/runs/') && !url.hash.endsWith(loop.runId));
    expect(forks).toHaveLength(1);
    await fold(new RegExp(`^Forked from ${loop.runId} at turn ${last}`)).waitFor();
    const forkId = decodeURIComponent(page.url().split('#/runs/')[1]);
    await page.getByRole('link', { name: `Review rev_${forkId}_3 waits for a human` }).waitFor();

    // A turn with work after it: no warning.
    await page.goto(`${app.url}/#/replay/${encodeURIComponent(loop.runId)}`);
    await page.getByRole('heading', { name: /^Context at turn \d+$/ }).waitFor();
    await page.getByLabel('Turn number').fill('2');
    await page.getByLabel('Turn number').press('Tab');
    await page.getByRole('heading', { name: 'Context at turn 2' }).waitFor();
    await page.getByRole('button', { name: 'Fork at turn 2' }).click();
    await page.waitForURL((url) => url.hash.startsWith('#/runs/') && !url.hash.endsWith(loop.runId) && !url.hash.endsWith(forkId));
    await fold(new RegExp(`^Forked from ${loop.runId} at turn 2`)).waitFor();
    expect(forks).toHaveLength(2);
  } finally {
    page.off('request', watch);
  }
});

it('logged no console error and no failed request (no 401 probe, no missing favicon) on any page above', async () => {
  // Signed out, a fresh load asks who is signed in and shows the sign-in form, without an error.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.goto('about:blank');
  await page.goto(`${app.url}/`);
  await page.getByLabel('API key').waitFor();
  const icon = await page.locator('link[rel="icon"]').getAttribute('href');
  expect((await page.request.get(`${app.url}${icon}`)).headers()['content-type']).toContain('image/svg+xml');
  expect(problems).toEqual([]);
});
