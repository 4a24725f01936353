// Links only a verified phone can open, in headless Chromium (issue 30, item 4): the reader of a
// link with require_phone_verification sees the verification step (QR code, chat link, sandbox
// phone), sends LOGIN from the wrong number and is refused, verifies another number, the
// recipient's, and the document opens and renders. No console error, no request to another host.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { watchContext } from '#test/support/browser-watch.js';
import { newDocument, newLink, tenant } from '#test/unit/connect/content/support.js';

const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
const RECIPIENT = '+4915112345678';

describe('phone-verified link in Chromium', () => {
  let browser: Browser;
  let app: FastifyInstance;
  let origin: string;
  let dataDir: string;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'e2e-'));
    app = await buildApp(loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent' }));
    origin = new URL(await app.listen({ port: 0, host: '127.0.0.1' })).origin;
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Sends the page's LOGIN message from `from` with the sandbox phone, in a tab of its own. */
  async function sendFrom(viewer: Page, from: string) {
    const [phone] = await Promise.all([viewer.context().waitForEvent('page'), viewer.locator('#verify-sandbox').click()]);
    await phone.waitForLoadState();
    expect(await phone.locator('#text').inputValue()).toMatch(/^LOGIN [0-9A-Z]{8}$/);
    await phone.locator('#from').fill(from);
    await Promise.all([phone.waitForURL(/sent=1$/), phone.locator('button[type=submit]').click()]);
    await phone.close();
  }

  it('asks for the LOGIN message, refuses another number, opens for the recipient’s', async () => {
    const owner = await tenant(app, 'e2e-phone-links');
    const doc = await newDocument(app, owner, { title: 'Offer for Lena' });
    const link = await newLink(app, owner, doc.id, { recipient: { phone: RECIPIENT }, require_phone_verification: true });
    const context = await browser.newContext({ viewport: { width: 900, height: 1000 } });
    const watched = watchContext(context);
    const viewer = await context.newPage();
    await viewer.goto(`${origin}${new URL(link.url).pathname}`);
    await viewer.locator('#verify-phone').waitFor();
    expect(await viewer.locator('#verify-qr').evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    expect(await viewer.locator('#verify-link').getAttribute('href')).toMatch(/^https:\/\/wa\.me\/\d+\?text=LOGIN%20[0-9A-Z]{8}$/);
    expect(await viewer.content()).not.toContain('Offer for Lena');
    await shot(viewer, 'phone-links-1-verify');

    await sendFrom(viewer, '+15550100999');
    await viewer.locator('#phone-refused').waitFor({ timeout: 10_000 }); // the page reloads itself
    expect(await viewer.locator('#phone-refused h1').textContent()).toBe('This document was sent to another number');
    await shot(viewer, 'phone-links-2-refused');

    await viewer.locator('#verify-retry').click();
    await viewer.locator('#verify-phone').waitFor();
    await sendFrom(viewer, RECIPIENT);
    await viewer.locator('#viewer[data-kind="pdf"]').waitFor({ timeout: 10_000 });
    await viewer.locator('[data-pager]').waitFor({ state: 'visible', timeout: 15_000 });
    expect(await viewer.locator('h1').textContent()).toBe('Offer for Lena');
    await shot(viewer, 'phone-links-3-opened');

    const row = await app.platform.store.db.selectFrom('reader_sessions').select('verified_phone').where('link_id', '=', link.id).executeTakeFirstOrThrow();
    expect(row.verified_phone).toBe(RECIPIENT);
    // The refusal is a 403 page, which Chromium reports on the console; nothing else may be.
    const path = new URL(link.url).pathname;
    const problems = watched.problems.filter((p) => !(p.includes('status of 403') && p.endsWith(`${origin}${path})`)));
    expect(problems, problems.join('\n')).toEqual([]);
    expect(watched.requests.filter((url) => new URL(url).origin !== origin)).toEqual([]);
    await context.close();
  });
});
