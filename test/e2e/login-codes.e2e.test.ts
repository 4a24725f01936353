// The code direction of the Login demo in headless Chromium (issue 30, item 6): a person types
// their number, the code reaches the sandbox phone (the simulated chat app, in another tab), a
// wrong code is refused with the attempts left, the right one signs in. No console error, no
// request to any host but the server under test. Screenshots go to test/e2e/screenshots/.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { seedDemoWorkspace } from '#server/demo.js';
import { watchContext } from '#test/support/browser-watch.js';

const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });

describe('Login demo, code direction, in Chromium', () => {
  let browser: Browser;
  let app: FastifyInstance;
  let origin: string;
  let dataDir: string;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'e2e-'));
    app = await buildApp(loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO: 'true' }));
    origin = new URL(await app.listen({ port: 0, host: '127.0.0.1' })).origin;
    await seedDemoWorkspace(app.platform, app);
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('sends a code to the typed number; the sandbox phone shows it; a wrong code is refused, the right one signs in', async () => {
    const context = await browser.newContext({ viewport: { width: 900, height: 1000 } });
    const watched = watchContext(context);
    const demo = await context.newPage();
    await demo.goto(`${origin}/demo/login`);
    await demo.locator('[data-state="pending"]').waitFor({ timeout: 10_000 });
    await demo.locator('#phone-input').fill('+1 555 010 4323');
    await demo.locator('#phone-submit').click();
    await demo.locator('[data-state="code"]').waitFor({ timeout: 10_000 });
    expect(await demo.locator('#code-phone').textContent()).toBe('+15550104323');
    expect(await demo.locator('#code-sandbox').isVisible()).toBe(true);
    await shot(demo, 'login-codes-1-enter-code');

    // The sandbox phone, opened from the page, shows the authentication message with the code.
    const [phone] = await Promise.all([context.waitForEvent('page'), demo.locator('#code-sandbox-link').click()]);
    await phone.waitForLoadState();
    expect(new URL(phone.url()).pathname).toBe('/sandbox/phone');
    const text = (await phone.locator('#codes li').first().textContent())!;
    const code = /(\d{6}) is your verification code/.exec(text)?.[1];
    expect(code, text).toMatch(/^\d{6}$/);
    await shot(phone, 'login-codes-2-sandbox-phone');

    await demo.bringToFront();
    const wrong = code === '000000' ? '000001' : '000000';
    await demo.locator('#code-input').fill(wrong);
    await demo.locator('#code-submit').click();
    await demo.locator('#code-error').waitFor({ state: 'visible', timeout: 5_000 });
    expect(await demo.locator('#code-error').textContent()).toContain('4 attempts left');

    await demo.locator('#code-input').fill(code!);
    await demo.locator('#code-submit').click();
    const signedIn = demo.locator('#signed-in-as');
    await signedIn.waitFor({ state: 'visible', timeout: 5_000 });
    expect(await signedIn.textContent()).toBe('Signed in as +15550104323');
    await shot(demo, 'login-codes-3-signed-in');

    expect((await demo.content()) + (await phone.content())).not.toMatch(/lk_live_/);
    expect(watched.problems).toEqual([]);
    expect(watched.requests.filter((url) => new URL(url).origin !== origin)).toEqual([]);
    await context.close();
  });
});
