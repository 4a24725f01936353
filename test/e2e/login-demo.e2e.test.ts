// End to end in headless Chromium (playwright-core, the Debian chromium): a person opens the
// Login demo, sends the LOGIN message from the sandbox phone in another tab, and the demo page
// signs in on the stream's push. Also: expiry and restart, and the 2-second polling fallback
// when the browser has no EventSource. Every page must log no console error and request
// nothing from any host but the server under test. Screenshots go to test/e2e/screenshots/.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { seedDemoWorkspace } from '#server/demo.js';

const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));

interface Server {
  app: FastifyInstance;
  origin: string;
  close(): Promise<void>;
}

/** The server as `npm start` runs it, on 127.0.0.1 and a free port, DEMO on, a fresh DATA_DIR. */
async function startServer(env: Record<string, string> = {}): Promise<Server> {
  const dataDir = mkdtempSync(join(tmpdir(), 'e2e-'));
  const app = await buildApp(loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO: 'true', ...env }));
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  await seedDemoWorkspace(app.platform, app);
  return {
    app,
    origin: new URL(address).origin,
    async close() {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A browser context that records console errors, page errors and every request's URL. */
async function watchedContext(browser: Browser, origin: string) {
  const context = await browser.newContext({ viewport: { width: 900, height: 1000 } });
  const problems: string[] = [];
  const requests: string[] = [];
  const watch = (page: Page) => {
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`${message.type()}: ${message.text()} (${page.url()})`);
    });
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message} (${page.url()})`));
    page.on('request', (request) => requests.push(request.url()));
    page.on('requestfailed', (request) => {
      // The stream is closed by the page itself once it has its event: not a failure.
      if (!request.url().includes('/v1/auth/chatapp/events/')) problems.push(`requestfailed: ${request.url()} ${request.failure()?.errorText}`);
    });
  };
  context.on('page', watch);
  return {
    context,
    problems,
    requests,
    /** Every request went to the server under test: no other host, not even a favicon. */
    expectOnlyLocal() {
      expect(requests.length).toBeGreaterThan(0);
      const foreign = requests.filter((url) => new URL(url).origin !== origin);
      expect(foreign).toEqual([]);
      expect(requests.every((url) => new URL(url).hostname === '127.0.0.1')).toBe(true);
    },
  };
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });

describe('Login demo in Chromium', () => {
  let browser: Browser;
  const cleanup: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  });
  afterEach(async () => {
    while (cleanup.length) await cleanup.pop()!();
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function setUp(env: Record<string, string> = {}): Promise<{ server: Server; watched: Awaited<ReturnType<typeof watchedContext>> }> {
    const server = await startServer(env);
    cleanup.push(() => server.close());
    const watched = await watchedContext(browser, server.origin);
    cleanup.push(() => watched.context.close());
    return { server, watched };
  }

  it('signs in: the code is sent from the sandbox phone and the page switches on the push', async () => {
    const { server, watched } = await setUp();
    const demo = await watched.context.newPage();
    await demo.goto(`${server.origin}/demo/login`);
    await demo.locator('[data-state="pending"]').waitFor({ timeout: 10_000 });

    const code = (await demo.locator('#code').textContent())!.trim();
    expect(code).toMatch(/^[0-9A-HJKMNP-TV-Z]{8}$/);
    await expect.poll(() => demo.locator('#message').textContent()).toContain(code);
    expect(await demo.locator('#qr svg path').count()).toBeGreaterThan(0);
    const number = (await demo.locator('#number').textContent())!.trim();
    expect(number).toMatch(/^\+\d{8,15}$/);
    expect(await demo.locator('#wa-link').getAttribute('href')).toBe(`https://wa.me/${number.slice(1)}?text=LOGIN%20${code}`);
    expect(await demo.locator('#sandbox').isVisible()).toBe(true);
    expect(await demo.locator('#transport').textContent()).toContain('Server-Sent Events');
    await shot(demo, 'login-demo-1-code');

    // "Open the sandbox phone" opens a second tab with the number and the message filled in.
    const [phone] = await Promise.all([watched.context.waitForEvent('page'), demo.locator('#sandbox-link').click()]);
    await phone.waitForLoadState();
    expect(new URL(phone.url()).pathname).toBe('/sandbox/phone');
    expect(await phone.locator('#text').inputValue()).toBe(`LOGIN ${code}`);
    expect(await phone.locator('#to option:checked').textContent()).toContain(number);
    await phone.locator('#from').fill('+15550104321');
    await phone.locator('#name').fill('Ana Souza');
    await shot(phone, 'login-demo-2-sandbox-phone');
    const sentAt = Date.now();
    await Promise.all([phone.waitForURL(/\/sandbox\/phone\?to=pn_\w+&sent=1$/), phone.locator('button[type=submit]').click()]);
    await expect.poll(() => phone.locator('[role=status]').textContent()).toBe('Sent.');
    expect(await phone.locator('#chat li.in').last().textContent()).toContain(`LOGIN ${code}`);
    await shot(phone, 'login-demo-3-sent');

    // The demo tab was listening: it completes through its backend and shows who signed in.
    await demo.bringToFront();
    const signedIn = demo.locator('#signed-in-as');
    await signedIn.waitFor({ state: 'visible', timeout: 5_000 });
    expect(Date.now() - sentAt).toBeLessThan(5_000);
    expect(await signedIn.textContent()).toBe('Signed in as +15550104321 (Ana Souza)');
    await shot(demo, 'login-demo-4-signed-in');

    // A reload still knows the user (the site's own cookie); signing out starts over.
    await demo.reload();
    expect(await demo.locator('#signed-in-as').textContent()).toBe('Signed in as +15550104321 (Ana Souza)');
    await Promise.all([demo.waitForURL(`${server.origin}/demo/login`), demo.locator('[data-view="signed-in"] button[type=submit]').click()]);
    await demo.locator('[data-state="pending"]').waitFor({ timeout: 10_000 });
    expect((await demo.locator('#code').textContent())!.trim()).not.toBe(code);

    // The browser never saw the Login app's API key.
    const html = (await demo.content()) + (await phone.content());
    expect(html).not.toMatch(/lk_live_/);
    expect(watched.problems).toEqual([]);
    watched.expectOnlyLocal();
  });

  it('says when the code expired and starts again on request', async () => {
    const { server, watched } = await setUp({ LOGIN_SESSION_TTL_SECONDS: '3' });
    const demo = await watched.context.newPage();
    await demo.goto(`${server.origin}/demo/login`);
    await demo.locator('[data-state="pending"]').waitFor({ timeout: 10_000 });
    const code = await demo.locator('#code').textContent();
    await demo.locator('[data-state="expired"]').waitFor({ timeout: 15_000 });
    expect(await demo.locator('[data-view="expired"] h1').textContent()).toBe('The code expired');
    await shot(demo, 'login-demo-5-expired');
    await demo.locator('#restart').click();
    await demo.locator('[data-state="pending"]').waitFor({ timeout: 10_000 });
    expect(await demo.locator('#code').textContent()).not.toBe(code);
    expect(watched.problems).toEqual([]);
    watched.expectOnlyLocal();
  });

  it('falls back to asking every 2 seconds when the browser has no EventSource', async () => {
    const { server, watched } = await setUp();
    await watched.context.addInitScript(() => {
      delete (window as { EventSource?: unknown }).EventSource;
    });
    const demo = await watched.context.newPage();
    await demo.goto(`${server.origin}/demo/login`);
    await demo.locator('[data-state="pending"]').waitFor({ timeout: 10_000 });
    expect(await demo.locator('#transport').textContent()).toContain('every 2 seconds');
    const message = (await demo.locator('#message').textContent())!;
    const phone = await watched.context.newPage();
    await phone.goto(`${server.origin}${await demo.locator('#sandbox-link').getAttribute('href')}`);
    expect(await phone.locator('#text').inputValue()).toBe(message);
    await phone.locator('#from').fill('+15550104322');
    await phone.locator('#name').fill('Bo');
    await Promise.all([phone.waitForURL(/sent=1$/), phone.locator('button[type=submit]').click()]);
    await demo.locator('#signed-in-as').waitFor({ state: 'visible', timeout: 6_000 });
    expect(await demo.locator('#signed-in-as').textContent()).toBe('Signed in as +15550104322 (Bo)');
    expect(watched.requests.some((url) => url.includes('/v1/auth/chatapp/events/'))).toBe(false);
    expect(watched.problems).toEqual([]);
    watched.expectOnlyLocal();
  });
});
