// The Connect API end to end in headless Chromium: the owner signs in and approves a client's
// consent; the client (a small server on 127.0.0.1 playing the CRM) exchanges the code with
// PKCE, registers a webhook endpoint, uploads a PDF and creates a link for one recipient; a
// reader opens /l/<slug>, pdf.js renders the page, and the CRM receives a signed `link.opened`
// that Stripe's SDK verifies, carrying the link's external_id; the analytics count the view.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server as HttpServer } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import Stripe from 'stripe';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { freePort } from '../support/free-port.js';

const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });

/** A one-page PDF with a line of text, its cross-reference offsets computed. */
function onePagePdf(text: string): Buffer {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    (() => {
      const stream = `BT /F1 18 Tf 30 100 Td (${text}) Tj ET`;
      return `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`;
    })(),
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** The CRM: its OAuth callback and its webhook receiver, on 127.0.0.1. */
async function startCrm() {
  const received: Received[] = [];
  const waiters: (() => void)[] = [];
  const server: HttpServer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      waiters.splice(0).forEach((w) => w());
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    origin: `http://127.0.0.1:${port}`,
    received,
    async waitFor(predicate: (r: Received) => boolean, ms = 20_000): Promise<Received> {
      const deadline = Date.now() + ms;
      for (;;) {
        const hit = received.find(predicate);
        if (hit) return hit;
        if (Date.now() > deadline) throw new Error(`not received in ${ms} ms; got ${received.map((r) => r.path).join(', ')}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 250);
        });
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('Connect in Chromium: consent, code exchange, upload, link, reader, signed webhook, analytics', () => {
  let browser: Browser;
  let app: FastifyInstance;
  let origin: string;
  let dataDir: string;
  let crm: Awaited<ReturnType<typeof startCrm>>;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'e2e-connect-'));
    // Private URLs allowed: the CRM's webhook receiver listens on 127.0.0.1.
    // Redirects and link URLs are built from PUBLIC_URL, so the port is chosen before the app.
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    app = await buildApp(
      loadConfig({
        PORT: String(port),
        HOST: '127.0.0.1',
        PUBLIC_URL: origin,
        DATA_DIR: dataDir,
        LOG_LEVEL: 'silent',
        DEMO: 'false',
        ALLOW_PRIVATE_URLS: 'true',
      }),
    );
    await app.listen({ port, host: '127.0.0.1' });
    crm = await startCrm();
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  });

  afterAll(async () => {
    await browser?.close();
    await crm?.close();
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const api = async (path: string, init: { method?: string; token?: string; json?: unknown; form?: FormData } = {}) => {
    const headers: Record<string, string> = {};
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    if (init.json !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${origin}${path}`, {
      method: init.method ?? (init.json || init.form ? 'POST' : 'GET'),
      headers,
      body: init.form ?? (init.json !== undefined ? JSON.stringify(init.json) : undefined),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };

  it('runs the whole flow', async () => {
    const email = 'owner@crm-e2e.test';
    const password = 'e2e owner password 1';
    const workspace = await api('/api/account/workspaces', {
      json: { email, password, name: 'Olivia Owner', workspace_name: 'Acme Brochures', workspace_slug: 'acme-brochures' },
    });
    expect(workspace.status, JSON.stringify(workspace.body)).toBe(201);
    const ownerToken = workspace.body.session.access_token as string;

    const redirectUri = `${crm.origin}/cb`;
    const client = await api('/api/connect/clients', { token: ownerToken, json: { name: 'Example CRM', redirect_uris: [redirectUri] } });
    expect(client.status, JSON.stringify(client.body)).toBe(201);
    const clientId = client.body.client_id as string;
    const clientSecret = client.body.client_secret as string;

    // The owner's browser: authorize → sign in → consent → approve → the CRM's callback.
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const state = `st-${randomBytes(8).toString('hex')}`;
    const scope = 'documents:write links:write analytics:read webhooks:write';
    const authorize = `${origin}/connect/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirectUri, state, scope, code_challenge: challenge, code_challenge_method: 'S256' })}`;
    const owner = await browser.newContext();
    const page = await owner.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(authorize);
    if (await page.locator('input[name="password"]').count()) {
      if (!(await page.locator('input[type="email"]').count())) await page.getByRole('link', { name: /sign in/i }).click();
      await page.fill('input[type="email"]', email);
      await page.fill('input[type="password"]', password);
      await Promise.all([page.waitForURL((u) => u.pathname === '/connect/authorize'), page.getByRole('button', { name: /sign in/i }).click()]);
    }
    expect(await page.locator('h1').textContent()).toContain('Example CRM');
    await shot(page, 'connect-consent');
    await Promise.all([page.waitForURL((u) => u.origin === crm.origin), page.getByRole('button', { name: 'Approve' }).click()]);
    const callback = new URL(page.url());
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.get('iss')).toBeTruthy();
    const code = callback.searchParams.get('code')!;
    expect(code).toBeTruthy();
    await owner.close();

    // The CRM's back end: code → bearer token.
    const token = await api('/api/oauth/token', {
      json: { grant_type: 'authorization_code', code, client_id: clientId, client_secret: clientSecret, redirect_uri: redirectUri, code_verifier: verifier },
    });
    expect(token.status, JSON.stringify(token.body)).toBe(200);
    expect(token.body).toMatchObject({ token_type: expect.stringMatching(/^bearer$/i), org_slug: 'acme-brochures' });
    const bearer = token.body.access_token as string;

    const endpoint = await api('/api/connect/webhook-endpoints', { token: bearer, json: { url: `${crm.origin}/hooks`, enabled_events: ['link.opened'] } });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    const webhookSecret = endpoint.body.secret as string;

    const form = new FormData();
    form.append('title', 'Spring brochure');
    form.append('file', new Blob([new Uint8Array(onePagePdf('Spring brochure'))], { type: 'application/pdf' }), 'brochure.pdf');
    const document = await api('/api/connect/documents', { token: bearer, form });
    expect(document.status, JSON.stringify(document.body)).toBe(201);

    const link = await api('/api/connect/links', {
      token: bearer,
      json: { document_id: document.body.id, external_id: 'crm-contact-42', recipient: { email: 'reader@example.test' } },
    });
    expect(link.status, JSON.stringify(link.body)).toBe(201);
    expect(new URL(link.body.url).pathname).toMatch(/^\/l\//);

    // The reader: opens the link; pdf.js renders the page into a canvas.
    const reader = await browser.newContext();
    const view = await reader.newPage();
    view.on('pageerror', (e) => errors.push(e.message));
    const foreign: string[] = [];
    view.on('request', (r) => {
      if (new URL(r.url()).origin !== origin) foreign.push(r.url());
    });
    const opened = await view.goto(`${origin}${new URL(link.body.url).pathname}`);
    expect(opened?.status()).toBe(200);
    await view.waitForSelector('canvas', { timeout: 20_000 });
    await view.waitForTimeout(1_000);
    await shot(view, 'connect-viewer');
    expect(foreign).toEqual([]);
    await reader.close();

    // The CRM receives a signed link.opened it can verify with Stripe's SDK.
    const delivery = await crm.waitFor((r) => r.path === '/hooks' && r.body.includes('"link.opened"'));
    const header = delivery.headers['x-connect-signature'] as string;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}/);
    const event = new Stripe('sk_test_unused').webhooks.constructEvent(delivery.body, header, webhookSecret, 300) as unknown as {
      type: string;
      data: { external_id: string };
    };
    expect(event.type).toBe('link.opened');
    expect(event.data.external_id).toBe('crm-contact-42');

    const analytics = await api(`/api/connect/links/${link.body.id}/analytics`, { token: bearer });
    expect(analytics.status).toBe(200);
    expect(analytics.body.views).toBeGreaterThanOrEqual(1);
    expect(analytics.body.last_opened_at).toBeTruthy();
    expect(errors).toEqual([]);
  });
});
