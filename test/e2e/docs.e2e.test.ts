// The docs pages in headless Chromium (playwright-core, the Debian chromium): /docs, the API
// reference of each API (rendered by Scalar from this server only) and each getting-started
// guide. Every page must log no console error or warning and request nothing from any host but
// the server under test. Screenshots go to test/e2e/screenshots/docs-*.png.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { APIS, loadGuides } from '#server/site/docs-catalogue.js';
import { freePort } from '../support/free-port.js';

const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: false });

/**
 * An operation of each document's first tag (Scalar opens only that one), and a webhook of the
 * 3.1 `webhooks:` section with the tag Scalar groups it under, as Scalar titles them.
 */
const RENDERED: Record<string, { tag: string; operation: string; webhook?: { group: string; name: string } }> = {
  // An operation of the first tag of the first group (x-tagGroups).
  account: { tag: 'Workspaces', operation: 'Create a workspace and its owner' },
  connect: { tag: 'Clients', operation: 'Create a Connect client', webhook: { group: 'Connect events', name: 'link.opened' } },
  login: { tag: 'Login apps', operation: 'Create a Login app', webhook: { group: 'Login events', name: 'chatapp.auth.verified' } },
  messaging: { tag: 'Contacts', operation: 'List contacts', webhook: { group: 'Messaging events', name: 'campaign.completed' } },
};

describe('docs pages in Chromium', () => {
  let app: FastifyInstance;
  let origin: string;
  let dataDir: string;
  let browser: Browser;
  let context: BrowserContext;
  const problems: string[] = [];
  const requests: string[] = [];

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'e2e-docs-'));
    // A known port, so that PUBLIC_URL (the "Test Request" server the reference offers) is this server.
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    app = await buildApp(loadConfig({ PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: origin, DATA_DIR: dataDir, LOG_LEVEL: 'silent' }));
    await app.listen({ port, host: '127.0.0.1' });
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.on('page', (page) => {
      page.on('console', (message) => {
        if (message.type() === 'error' || message.type() === 'warning') problems.push(`${message.type()}: ${message.text()} (${page.url()})`);
      });
      page.on('pageerror', (error) => problems.push(`pageerror: ${error.message} (${page.url()})`));
      page.on('request', (request) => requests.push(request.url()));
      page.on('requestfailed', (request) => problems.push(`requestfailed: ${request.url()} ${request.failure()?.errorText}`));
    });
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  function expectCleanAndLocal() {
    expect(problems).toEqual([]);
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.filter((url) => new URL(url).origin !== origin)).toEqual([]);
  }

  it('/docs lists the APIs with their reference, guide and documents', async () => {
    const page = await context.newPage();
    await page.goto(`${origin}/docs`);
    for (const api of APIS) {
      expect(await page.locator(`#${api.name} h2`).textContent()).toBe(api.title);
      expect(await page.locator(`#${api.name} a[href="/openapi/${api.name}.3.1.yaml"]`).count()).toBe(1);
    }
    await shot(page, 'docs-landing');
    await page.close();
    expectCleanAndLocal();
  });

  for (const api of APIS) {
    it(`/docs/${api.name} renders its operations${RENDERED[api.name]!.webhook ? ' and webhooks' : ''} from this server only`, async () => {
      const page = await context.newPage();
      await page.goto(`${origin}/docs/${api.name}`);
      const { tag, operation, webhook } = RENDERED[api.name]!;
      // The server Scalar offers for "Test Request" is this one, not the document's 127.0.0.1:3000.
      await page.getByText(origin, { exact: true }).first().waitFor({ timeout: 60_000 });
      // The sidebar may open with every tag collapsed: the tag is opened when its operation is hidden.
      const listed = page.getByText(operation, { exact: true }).filter({ visible: true }).first();
      await page.getByText(tag, { exact: true }).filter({ visible: true }).first().waitFor({ timeout: 60_000 });
      if (!(await listed.isVisible())) await page.getByText(tag, { exact: true }).filter({ visible: true }).first().click();
      await listed.waitFor({ timeout: 60_000 });
      if (webhook) {
        // Open the webhook's group in the sidebar: the webhook is listed and its section renders.
        await page.getByText(webhook.group, { exact: true }).first().click();
        await page.getByText(webhook.name, { exact: true }).first().waitFor({ timeout: 30_000 });
        await page.getByText(webhook.name, { exact: true }).first().click();
        await page.getByRole('heading', { name: webhook.name }).first().waitFor({ timeout: 30_000 });
      }
      await shot(page, `docs-${api.name}-reference`);
      await page.close();
      expectCleanAndLocal();
    }, 120_000);
  }

  for (const api of [...loadGuides().keys()]) {
    it(`/docs/${api}/getting-started at 390 px: nothing pushes the page sideways; each code block copies`, async () => {
      const phone = await browser.newContext({ viewport: { width: 390, height: 844 } });
      await phone.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
      const page = await phone.newPage();
      page.on('console', (message) => ['error', 'warning'].includes(message.type()) && problems.push(`${message.type()}: ${message.text()}`));
      await page.goto(`${origin}/docs/${api}/getting-started`);
      const size = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
      expect(size.scrollWidth, `the ${api} guide scrolls sideways at 390 px`).toBeLessThanOrEqual(size.innerWidth);
      // The docs link the rest of the product.
      for (const href of ['/', '/account', '/sandbox/phone']) expect(await page.locator(`.docs-nav a[href="${href}"]`).count(), href).toBe(1);
      const blocks = page.locator('article pre');
      expect(await page.locator('article pre button.copy').count()).toBe(await blocks.count());
      const first = blocks.first();
      await first.locator('button.copy').click();
      await expect.poll(() => first.locator('button.copy').textContent()).toBe('Copied');
      const copied = await page.evaluate(() => navigator.clipboard.readText());
      expect(copied).toBe(await first.locator('code').textContent());
      expect(copied).toContain(`B=${origin}`); // the guide names this server, not 127.0.0.1:3000
      await page.screenshot({ path: join(SCREENSHOTS, `docs-${api}-getting-started-390.png`), fullPage: false });
      await phone.close();
      expect(problems).toEqual([]);
    });

    it(`/docs/${api}/getting-started renders its guide`, async () => {
      const page = await context.newPage();
      await page.goto(`${origin}/docs/${api}/getting-started`);
      expect(await page.locator('article h1').count()).toBe(1);
      expect(await page.locator('article pre code').count()).toBeGreaterThan(2);
      await shot(page, `docs-${api}-getting-started`);
      await page.close();
      expectCleanAndLocal();
    });
  }
});
