// The pages a person meets first, in headless Chromium at a desktop width (1280 px) and a phone's
// (390 px): the home page, sign-in, the Connect sign-up and consent pages, and the settings. At
// both widths no page scrolls sideways (a settings table with a header stacks into one card a
// row at 390 px), every action of a settings page (Rotate, Revoke, Disconnect, every button and
// link) can be brought into view inside the window and is not covered, and every field's label
// sits above it; their stylesheet (the sign-in pages', allowed by its hash: a refusal would be a
// console error) is applied; no request leaves the server. Screenshots go to
// test/e2e/screenshots/pages-<page>-<width>.png.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { watchContext } from '../support/browser-watch.js';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { seedDemoWorkspace, type DemoCredentials } from '#server/demo.js';
import { freePort } from '../support/free-port.js';

const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const SETTINGS = [
  '/account',
  '/account/api-keys',
  '/account/connect-clients',
  '/account/webhooks',
  '/account/login-apps',
  '/account/numbers',
  '/account/usage',
];
const WIDTHS = [1280, 390] as const;
const REDIRECT_URI = 'https://crm.example/oauth/callback';

describe('first pages in Chromium at 1280 and 390 px', () => {
  let browser: Browser;
  let app: FastifyInstance;
  let origin: string;
  let demo: DemoCredentials;
  let dataDir: string;
  let clientId: string;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'e2e-pages-'));
    // The sign-in redirect of the consent page is built from PUBLIC_URL: the port is chosen first.
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    app = await buildApp(loadConfig({ PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: origin, DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO: 'true' }));
    await app.listen({ port, host: '127.0.0.1' });
    demo = (await seedDemoWorkspace(app.platform, app))!;
    const session = await fetch(`${origin}/api/account/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: demo.email, password: demo.password }),
    });
    const { access_token: token } = (await session.json()) as { access_token: string };
    const client = await fetch(`${origin}/api/connect/clients`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ name: 'Example CRM', redirect_uris: [REDIRECT_URI] }),
    });
    expect(client.status).toBe(201);
    clientId = ((await client.json()) as { client_id: string }).client_id;
    // A webhook endpoint, so that the webhooks page has a row of actions too.
    const endpoint = await fetch(`${origin}/api/webhook-endpoints`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ url: 'https://crm.example/hooks/chat-platform-events', enabled_events: ['message.received'] }),
    });
    expect(endpoint.status).toBe(201);
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const authorize = (extra: Record<string, string> = {}) =>
    `${origin}/connect/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      state: 'st-e2e',
      scope: 'documents:write links:write analytics:read',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      ...extra,
    })}`;

  const fitsWidth = (page: Page) => page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));

  for (const width of WIDTHS) {
    it(`${width} px: home, sign-in, sign-up, consent and settings`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 844 } });
      const { problems, requests } = watchContext(context);
      const page = await context.newPage();

      /** Opens (or stays on) a page, checks it is styled and fits the width, and saves its screenshot. */
      const visit = async (name: string, url?: string) => {
        if (url) expect((await page.goto(url))!.status(), url).toBeLessThan(400);
        const size = await fitsWidth(page);
        expect(size.scrollWidth, `${name} scrolls sideways at ${width} px`).toBeLessThanOrEqual(size.innerWidth);
        await page.screenshot({ path: join(SCREENSHOTS, `pages-${name}-${width}.png`), fullPage: true });
      };
      /** Every button and link of the page's main part can be scrolled into the window, whole, and is what a tap there reaches. */
      const expectActionsReachable = async (path: string) => {
        const actions = page.locator('main button, main a[href], main summary');
        const count = await actions.count();
        if (path !== '/account/usage') expect(count, `${path} has actions`).toBeGreaterThan(0);
        const labels: string[] = [];
        for (let i = 0; i < count; i++) {
          const action = actions.nth(i);
          if (!(await action.isVisible())) continue; // inside a closed <details>: reachable by opening it
          await action.scrollIntoViewIfNeeded();
          const reach = await action.evaluate((el) => {
            const r = el.getBoundingClientRect();
            const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
            return { left: r.left, right: r.right, hit: hit !== null && (hit === el || el.contains(hit)), label: el.textContent?.trim() ?? '' };
          });
          labels.push(reach.label);
          expect(reach.left, `${path}: "${reach.label}" starts left of the window`).toBeGreaterThanOrEqual(0);
          expect(reach.right, `${path}: "${reach.label}" ends right of the window`).toBeLessThanOrEqual(width);
          expect(reach.hit, `${path}: "${reach.label}" is covered`).toBe(true);
        }
        if (path === '/account/api-keys') expect(labels).toEqual(expect.arrayContaining(['Rotate', 'Revoke…']));
        if (path === '/account/numbers') expect(labels.some((label) => /^Disconnect/.test(label))).toBe(true);
      };
      /** Each field's label text sits above its field, not beside or under it. */
      const expectLabelsAbove = async (path: string) => {
        const misplaced = await page.evaluate(() =>
          [...document.querySelectorAll('main label')].flatMap((label) => {
            const field = label.querySelector('input:not([type=checkbox]):not([type=radio]):not([type=hidden]), textarea, select');
            if (!field || label.closest('form.inline')) return [];
            const text = document.createRange();
            text.setStart(label, 0);
            text.setEndBefore(field);
            const above = text.getBoundingClientRect().bottom <= field.getBoundingClientRect().top + 1;
            return above ? [] : [label.textContent?.trim().slice(0, 40)];
          }),
        );
        expect(misplaced, `${path}: labels not above their fields`).toEqual([]);
      };
      const styled = async (selector: string) =>
        expect(
          await page
            .locator(selector)
            .first()
            .evaluate((el) => getComputedStyle(el).backgroundColor),
        ).toBe('rgb(255, 255, 255)');

      await visit('home', `${origin}/`);
      await styled('.card');
      for (const path of ['/docs', '/account', '/demo/login', '/sandbox/phone', '/healthz', '/openapi/connect.3.1.yaml']) {
        expect(await page.locator(`.card a[href="${path}"]`).count(), path).toBe(1);
      }

      // Sign-up in the consent step: a person without an account, prefilled by the app.
      await visit('sign-up', authorize({ org_name: 'Acme Travel', email: 'ana@acme.example' }));
      expect(await page.locator('h1').textContent()).toBe('Create a workspace to connect Example CRM');
      expect(await page.locator('input[name=org_name]').inputValue()).toBe('Acme Travel');

      // Consent without a session goes through the sign-in page and back.
      await page.goto(authorize());
      expect(new URL(page.url()).pathname).toBe('/account/sign-in');
      await visit('sign-in');
      await styled('.card');
      await page.fill('input[name=email]', demo.email);
      await page.fill('input[name=password]', demo.password);
      await Promise.all([page.waitForURL((u) => u.pathname === '/connect/authorize'), page.getByRole('button', { name: 'Sign in' }).click()]);

      await visit('consent');
      expect(await page.locator('h1').textContent()).toMatch(/^Example CRM wants to access /);
      const scopes = await page.locator('.scopes li').allTextContents();
      expect(scopes).toHaveLength(3);
      for (const text of scopes) expect(text).toMatch(/^[A-Z][^:]+\.$/); // a sentence, not a scope id
      expect(await page.getByRole('button', { name: 'Approve' }).isVisible()).toBe(true);
      expect(await page.getByRole('button', { name: 'Deny' }).isVisible()).toBe(true);
      expect(await page.locator('a[href="/docs"]').count()).toBe(1);

      for (const path of SETTINGS) {
        const name = `settings-${path.split('/')[2] ?? 'overview'}`;
        await visit(name, `${origin}${path}`);
        // The look of the sign-in pages: their buttons and fields, not the browser's.
        expect(await page.locator('.who button').evaluate((el) => getComputedStyle(el).borderRadius), path).toBe('8px');
        await expectActionsReachable(path);
        await expectLabelsAbove(path);
      }
      // The tables with actions stack into cards on a phone; on a desktop they are tables.
      await page.goto(`${origin}/account/api-keys`);
      const rowDisplay = await page
        .locator('.stack tbody tr')
        .first()
        .evaluate((el) => getComputedStyle(el).display);
      expect(rowDisplay).toBe(width === 390 ? 'block' : 'table-row');

      expect(problems).toEqual([]);
      expect(requests.filter((url) => new URL(url).origin !== origin)).toEqual([]);
      await context.close();
    });
  }
});
