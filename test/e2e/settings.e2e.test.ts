// The owner's settings pages in headless Chromium (playwright-core, the Debian chromium): sign in
// with the demo owner, visit every settings page, create an API key and a Connect webhook
// endpoint (each secret shown once), send a test event, find it in the delivery log and
// redeliver it. No console error, no request to any host but the server under test.
// Screenshots go to test/e2e/screenshots/settings-*.png.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { watchContext } from '../support/browser-watch.js';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { seedDemoWorkspace, type DemoCredentials } from '#server/demo.js';
import { startReceiver } from '../support/receiver.js';

const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const PAGES = ['/account', '/account/api-keys', '/account/connect-clients', '/account/webhooks', '/account/login-apps', '/account/numbers', '/account/usage'];

describe('settings pages in Chromium', () => {
  let browser: Browser;
  let app: FastifyInstance;
  let origin: string;
  let demo: DemoCredentials;
  let dataDir: string;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'e2e-settings-'));
    app = await buildApp(loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO: 'true' }));
    origin = new URL(await app.listen({ port: 0, host: '127.0.0.1' })).origin;
    demo = (await seedDemoWorkspace(app.platform, app))!;
    receiver = await startReceiver(() => 200);
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('signs in, visits every page, creates a key and an endpoint, sends a test event and redelivers it', async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const { problems, requests } = watchContext(context);
    const page = await context.newPage();
    const shot = (name: string) => page.screenshot({ path: join(SCREENSHOTS, `settings-${name}.png`), fullPage: true });

    // Sign in from a settings page: the sign-in form sends the owner back to it.
    await page.goto(`${origin}/account/api-keys`);
    expect(new URL(page.url()).pathname).toBe('/account/sign-in');
    await page.fill('input[name=email]', demo.email);
    await page.fill('input[name=password]', demo.password);
    await page.click('button[type=submit]');
    await page.waitForURL(`${origin}/account/api-keys`);

    for (const path of PAGES) {
      const res = await page.goto(`${origin}${path}`);
      expect(res!.status(), path).toBe(200);
      expect(await page.locator('nav a[aria-current=page]').getAttribute('href')).toBe(path);
      await expect.poll(() => page.locator('.who').textContent()).toContain(demo.email);
      await shot(path.split('/').pop()!);
    }

    // An API key, shown once.
    await page.goto(`${origin}/account/api-keys`);
    await page.fill('input[name=name]', 'Browser key');
    await page.click('text=Create key');
    const key = (await page.locator('[role=status] code').first().textContent())!;
    expect(key.length).toBeGreaterThan(20);
    await shot('api-keys-created');
    await page.goto(`${origin}/account/api-keys`);
    expect(await page.content()).not.toContain(key);
    expect(await page.locator('td', { hasText: 'Browser key' }).count()).toBe(1);

    // A Connect endpoint at a local receiver, its secret shown once.
    await page.goto(`${origin}/account/webhooks`);
    const connectForm = page.locator('form[action="/account/webhooks/connect"]');
    await connectForm.locator('input[name=url]').fill(receiver.url);
    await connectForm.locator('input[value="*"]').check();
    await connectForm.locator('button[type=submit]').click();
    const secret = (await page.locator('[role=status] code').first().textContent())!;
    expect(secret).toMatch(/^whsec_/);
    await shot('webhooks-created');
    await page.goto(`${origin}/account/webhooks`);
    expect(await page.content()).not.toContain(secret);

    // Test event -> delivery log -> redeliver.
    await page.locator('button', { hasText: 'Send test event' }).first().click();
    await page.waitForURL(/\/account\/webhooks\/connect\/whe_/);
    await expect
      .poll(async () => (await page.reload(), page.locator('section', { hasText: 'webhook_endpoint.test' }).locator('td', { hasText: /^200$/ }).count()), {
        timeout: 20_000,
      })
      .toBe(1);
    await shot('webhooks-delivery-log');
    await page.locator('button', { hasText: 'Redeliver' }).first().click();
    await expect.poll(async () => (await page.reload(), page.locator('text=redelivery of').count()), { timeout: 20_000 }).toBe(1);
    await expect.poll(async () => (await page.reload(), page.locator('td', { hasText: /^200$/ }).count()), { timeout: 20_000 }).toBe(2);
    await shot('webhooks-redelivered');
    expect(receiver.received.length).toBe(2);

    expect(problems).toEqual([]);
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.filter((url) => new URL(url).origin !== origin)).toEqual([]);
    await context.close();
  });
});
