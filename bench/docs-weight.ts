// What the Messaging reference page costs a browser: the bytes transferred (compressed as sent)
// and the time until its first operation shows, in headless Chromium against a server of the
// given checkout (default: this one). `npx tsx bench/docs-weight.ts [--root <checkout>] [--runs 3]`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { freePort } from '../test/support/free-port.js';

const { values } = parseArgs({
  options: { root: { type: 'string', default: '.' }, runs: { type: 'string', default: '3' }, api: { type: 'string', default: 'messaging' } },
});
const root = resolve(values.root!);
const { buildApp } = await import(pathToFileURL(join(root, 'server/app.ts')).href);
const { loadConfig } = await import(pathToFileURL(join(root, 'server/config.ts')).href);

const dataDir = mkdtempSync(join(tmpdir(), 'docs-weight-'));
const port = await freePort();
const origin = `http://127.0.0.1:${port}`;
const app = await buildApp(loadConfig({ PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: origin, DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO: 'false' }));
await app.listen({ port, host: '127.0.0.1' });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  for (let run = 0; run < Number(values.runs); run++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } }); // a cold cache each run
    const page = await context.newPage();
    const sizes: Promise<number>[] = [];
    page.on('requestfinished', (request) => sizes.push(request.sizes().then((s) => s.responseBodySize + s.responseHeadersSize)));
    const started = performance.now();
    await page.goto(`${origin}/docs/${values.api}`);
    await page.getByText('Contacts', { exact: true }).filter({ visible: true }).first().waitFor({ timeout: 120_000 });
    const toContent = performance.now() - started;
    await page.waitForLoadState('networkidle');
    const bytes = (await Promise.all(sizes)).reduce((a, b) => a + b, 0);
    console.log(`run ${run + 1}: ${(bytes / 1e6).toFixed(2)} MB transferred in ${sizes.length} requests, content after ${(toContent / 1000).toFixed(2)} s`);
    await context.close();
  }
} finally {
  await browser.close();
  await app.close();
  rmSync(dataDir, { recursive: true, force: true });
}
