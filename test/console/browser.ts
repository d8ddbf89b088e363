import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import type { WebAuthnSignature } from '../../src/attestation/personal-signature';

/**
 * Debian's Chromium (never a downloaded browser) driven by playwright-core, headless, in a fresh
 * profile that is removed on close. One per test file: users take turns in it by signing in and out.
 */
export const CHROMIUM = process.env.TRIAD_CHROMIUM ?? '/usr/bin/chromium';

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** The Content-Security-Policy violations every page of this browser reported so far. */
  cspViolations(): string[];
  close(): Promise<void>;
}

export async function openBrowser(): Promise<Browser> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'triad-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'],
    viewport: { width: 1280, height: 900 },
    acceptDownloads: false,
  });
  // Every page reports what its policy blocked: the browser's own report, and its console line.
  const violations: string[] = [];
  await context.exposeBinding('__triadCspViolation', (_source, text: string) => void violations.push(text));
  await context.addInitScript(() => {
    const report = (globalThis as unknown as { __triadCspViolation(text: string): void }).__triadCspViolation;
    // The test project's types have no DOM: the page's window is named through globalThis.
    const page = globalThis as unknown as { addEventListener(type: string, listener: (e: unknown) => void): void };
    page.addEventListener('securitypolicyviolation', (e) => {
      const v = e as { violatedDirective: string; blockedURI: string; sourceFile: string };
      report(`${v.violatedDirective} blocked ${v.blockedURI || 'inline'} in ${v.sourceFile || 'the page'}`);
    });
  });
  const watch = (p: Page): void => {
    p.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
  };
  context.on('page', watch);
  const page = context.pages()[0] ?? (await context.newPage());
  watch(page);
  page.setDefaultTimeout(30_000);
  return {
    context,
    page,
    cspViolations: () => [...violations],
    async close() {
      try {
        await context.close();
      } finally {
        rmSync(userDataDir, { recursive: true, force: true });
      }
    },
  };
}

export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

export async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').waitFor();
}

/** Chromium's virtual authenticator (the DevTools protocol's WebAuthn domain) on `page`: it stands in for a person's passkey. */
export async function addVirtualAuthenticator(page: Page): Promise<{ cdp: CDPSession; authenticatorId: string }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
  });
  return { cdp, authenticatorId };
}

/** The first object under `v` whose `type` is `webauthn`: where the decision keeps the person's signature is the decision's business. */
export function findWebAuthn(v: unknown): WebAuthnSignature | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  if ((v as { type?: unknown }).type === 'webauthn') return v as WebAuthnSignature;
  for (const x of Object.values(v)) {
    const found = findWebAuthn(x);
    if (found) return found;
  }
  return undefined;
}
