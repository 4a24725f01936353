// The inbound media path end to end in headless Chromium: a person on the sandbox phone picks a
// photo and sends it with a caption to the demo workspace's number and sees its thumbnail; the business then finds the
// message through the API (chats, messages) and downloads the very bytes from its media URL with
// the workspace's API key. No console error, no request leaves the server.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { seedDemoWorkspace, type DemoCredentials } from '#server/demo.js';
import { watchContext } from '../support/browser-watch.js';
import { freePort } from '../support/free-port.js';

const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const CUSTOMER = '+15550107788';

describe('the sandbox phone sends a photo; the API downloads it', () => {
  let browser: Browser;
  let app: FastifyInstance;
  let origin: string;
  let demo: DemoCredentials;
  let dataDir: string;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'e2e-phone-media-'));
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    app = await buildApp(loadConfig({ PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: origin, DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO: 'true' }));
    await app.listen({ port, host: '127.0.0.1' });
    demo = (await seedDemoWorkspace(app.platform, app))!;
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('picks a photo, sends it with a caption, and the API serves the same bytes', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const watched = watchContext(context);
    const page = await context.newPage();
    await page.goto(`${origin}/sandbox/phone`);
    const option = page.locator('#to option', { hasText: demo.sandboxNumber });
    await page.locator('#to').selectOption((await option.getAttribute('value'))!);
    await page.locator('#from').fill(CUSTOMER);
    await page.locator('#name').fill('Ana Souza');
    await page.locator('#text').fill('The parcel arrived broken');
    const photo = readFileSync(fileURLToPath(new URL('../smoke/fixtures/photo.png', import.meta.url))); // a real picture, to be drawn
    await page.locator('#file').setInputFiles({ name: 'parcel.png', mimeType: 'image/png', buffer: photo });
    await Promise.all([page.waitForURL(/\/sandbox\/phone\?to=pn_\w+&sent=1$/), page.locator('button[type=submit]').click()]);
    await expect.poll(() => page.locator('[role=status]').textContent()).toBe('Sent.');
    expect(await page.locator('#chat li.in').last().textContent()).toContain('[image] The parcel arrived broken');
    // The photo shows as a thumbnail, drawn from this server.
    const thumb = page.locator('#chat li.in').last().locator('img.thumb');
    await expect.poll(() => thumb.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    await page.screenshot({ path: join(SCREENSHOTS, 'sandbox-phone-media-390.png'), fullPage: true });

    // The business side: the chat, its newest message, the file behind content.media.url.
    const headers = { 'x-api-key': demo.apiKey };
    const chats = (await (await fetch(`${origin}/api/chatapp/chats`, { headers })).json()) as {
      data: { contact: { id: string; contact_no: string }; last_message: { type: string; preview: string } }[];
    };
    const chat = chats.data.find((c) => c.contact.contact_no === CUSTOMER)!;
    expect(chat.last_message).toMatchObject({ type: 'image', preview: 'The parcel arrived broken' });
    const messages = (await (await fetch(`${origin}/api/chatapp/messages?contact_id=${chat.contact.id}`, { headers })).json()) as {
      data: {
        id: string;
        type: string;
        content: { caption?: string; media?: { url: string; mime_type: string; size_bytes: number | null; filename: string | null } };
      }[];
    };
    const message = messages.data[0]!;
    expect(message).toMatchObject({
      type: 'image',
      content: { caption: 'The parcel arrived broken', media: { mime_type: 'image/png', size_bytes: photo.length, filename: 'parcel.png' } },
    });
    expect(message.content.media!.url).toBe(`${origin}/api/chatapp/messages/${message.id}/media`);
    const file = await fetch(message.content.media!.url, { headers });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect(Buffer.compare(Buffer.from(await file.arrayBuffer()), photo)).toBe(0);
    // Without the key the file is not served.
    expect((await fetch(message.content.media!.url)).status).toBe(401);

    expect(watched.problems).toEqual([]);
    expect(watched.requests.filter((u) => !u.startsWith(origin))).toEqual([]);
    await context.close();
  });
});
