// OpenID Connect end to end: openid-client (OpenID Certified, unchanged) against the running
// server, with headless Chromium as the user's browser. Discovery, the authorization URL with
// PKCE S256, state and nonce; the hosted sign-in page in Chromium; the LOGIN message sent from
// the sandbox phone in a second tab; the redirect back to the relying party's callback (a small
// HTTP server of the test); the code exchange with ID token validation; userinfo. Then the same
// ID token offered to another app's client is refused by openid-client's own checks.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server as HttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { demoLoginApp, seedDemoWorkspace } from '#server/demo.js';
import { freePort } from '#test/support/free-port.js';
import { watchContext } from '#test/support/browser-watch.js';
import { insertLoginApp } from '#test/support/login-app.js';

const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));

describe('Sign in with a chat message through OpenID Connect (openid-client, Chromium)', () => {
  let browser: Browser;
  let app: FastifyInstance;
  let origin: string;
  let dataDir: string;
  let rp: HttpServer;
  let callbackBase: string;
  const callbacks: string[] = [];

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'e2e-oidc-'));
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    // PUBLIC_URL is the issuer's base: openid-client compares the discovered issuer exactly.
    app = await buildApp(loadConfig({ PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: origin, DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO: 'true' }));
    await app.listen({ port, host: '127.0.0.1' });
    await seedDemoWorkspace(app.platform, app);
    // The relying party's callback: records where the browser came back to.
    rp = createServer((req, res) => {
      if (req.url!.startsWith('/callback')) callbacks.push(`${callbackBase}${req.url!.slice('/callback'.length)}`);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('signed in');
    });
    await new Promise<void>((resolve) => rp.listen(0, '127.0.0.1', resolve));
    callbackBase = `http://127.0.0.1:${(rp.address() as { port: number }).port}/callback`;
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => rp?.close(resolve));
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('discovery, authorization code with PKCE through the hosted page, ID token validation and userinfo', async () => {
    const demo = (await demoLoginApp(app))!;
    await app.platform.store.db
      .updateTable('login_apps')
      .set({ oidc_redirect_uris: [callbackBase] })
      .where('id', '=', demo.appId)
      .execute();
    const issuer = new URL(`${origin}/login/oidc/${demo.appId}`);
    const config = await client.discovery(issuer, demo.appId, demo.apiKey, undefined, { execute: [client.allowInsecureRequests] });
    expect(config.serverMetadata().issuer).toBe(issuer.href);

    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: callbackBase,
      scope: 'openid phone profile',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });

    const context = await browser.newContext({ viewport: { width: 800, height: 1000 } });
    const watched = watchContext(context);
    const page = await context.newPage();
    await page.goto(url.href);
    await page.locator('#oidc-sign-in[data-state="pending"]').waitFor();
    expect(await page.locator('#qr svg path').count()).toBeGreaterThan(0);
    const message = (await page.locator('#message').textContent())!;
    expect(message).toMatch(/^LOGIN [0-9A-HJKMNP-TV-Z]{8}$/);
    await page.screenshot({ path: join(SCREENSHOTS, 'login-oidc-1-page.png'), fullPage: true });

    // The sandbox phone, opened from the page, sends the LOGIN message.
    const [phone] = await Promise.all([context.waitForEvent('page'), page.locator('#sandbox-link').click()]);
    await phone.waitForLoadState();
    expect(await phone.locator('#text').inputValue()).toBe(message);
    await phone.locator('#from').fill('+15550104321');
    await phone.locator('#name').fill('Ana Souza');
    await Promise.all([phone.waitForURL(/sent=1$/), phone.locator('button[type=submit]').click()]);

    // The page hears `verified` on the stream and sends the browser back with the code.
    await page.waitForURL((u) => u.href.startsWith(callbackBase), { timeout: 10_000 });
    const back = new URL(page.url());
    expect(callbacks.some((c) => c === back.href)).toBe(true);
    expect(back.searchParams.get('iss')).toBe(issuer.href);

    const tokens = await client.authorizationCodeGrant(config, back, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: issuer.href, aud: demo.appId, nonce, phone_number: '+15550104321', phone_number_verified: true, amr: ['whatsapp'] });
    expect(claims.sub).not.toContain('15550104321');
    const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    expect(userinfo).toEqual({ sub: claims.sub, phone_number: '+15550104321', phone_number_verified: true, name: 'Ana Souza' });

    // The same code again: openid-client surfaces the server's invalid_grant.
    await expect(client.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce })).rejects.toMatchObject(
      {
        error: 'invalid_grant',
      },
    );

    // The ID token offered to another app's client (another issuer, another audience) is refused.
    const other = await insertLoginApp(app);
    const otherConfig = await client.discovery(new URL(`${origin}/login/oidc/${other.appId}`), other.appId, other.apiKey, undefined, {
      execute: [client.allowInsecureRequests],
    });
    expect(otherConfig.serverMetadata().issuer).not.toBe(issuer.href);
    const { createRemoteJWKSet, jwtVerify } = await import('jose');
    const keys = createRemoteJWKSet(new URL(otherConfig.serverMetadata().jwks_uri!));
    await expect(jwtVerify(tokens.id_token!, keys, { issuer: otherConfig.serverMetadata().issuer, audience: other.appId })).rejects.toThrow();
    // Its access token reads nothing at the other app's userinfo.
    await expect(client.fetchUserInfo(otherConfig, tokens.access_token, claims.sub)).rejects.toBeDefined();

    await page.screenshot({ path: join(SCREENSHOTS, 'login-oidc-2-back.png'), fullPage: true });
    expect(watched.problems).toEqual([]);
    const foreign = watched.requests.filter((r) => !r.startsWith(origin) && !r.startsWith(callbackBase));
    expect(foreign).toEqual([]);
    await context.close();
  });
});
