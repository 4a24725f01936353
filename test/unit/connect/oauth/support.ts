// Shared steps of the Connect OAuth tests: an owner with a client, a browser (cookie jar) signed
// in through the sign-in page, the consent page driven with plain HTTP, and the token exchange.
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { PASSWORD, bearer, signUp, type SignedUp } from '#test/unit/account/support.js';

export const REDIRECT = 'https://crm.test/cb';
export const ALL_SCOPES = 'documents:write links:write analytics:read webhooks:write';

export interface Client {
  client_id: string;
  client_secret: string | null;
}

export async function createClient(app: FastifyInstance, owner: SignedUp, body: Record<string, unknown> = {}): Promise<Client> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/connect/clients',
    headers: bearer(owner.token),
    payload: { name: 'Acme CRM', redirect_uris: [REDIRECT], ...body },
  });
  if (res.statusCode !== 201) throw new Error(`create client failed: ${res.statusCode} ${res.body}`);
  return res.json();
}

/** A cookie jar over app.inject, as a browser keeps cookies between requests. */
export class Browser {
  readonly cookies = new Map<string, string>();
  constructor(readonly app: FastifyInstance) {}

  async request(options: InjectOptions & { headers?: Record<string, string> }): Promise<LightMyRequestResponse> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await this.app.inject({ ...options, headers: { ...(cookie ? { cookie } : {}), ...options.headers } });
    for (const c of res.cookies as { name: string; value: string; maxAge?: number; expires?: Date }[]) {
      if (c.maxAge === 0 || (c.expires && c.expires.getTime() < Date.now()) || c.value === '') this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    return res;
  }

  get(url: string, headers: Record<string, string> = {}) {
    return this.request({ method: 'GET', url, headers });
  }

  postForm(url: string, form: Record<string, string>, headers: Record<string, string> = {}) {
    return this.request({
      method: 'POST',
      url,
      payload: new URLSearchParams(form).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', ...headers },
    });
  }

  async signIn(email: string, password = PASSWORD): Promise<void> {
    const page = await this.get('/account/sign-in');
    const res = await this.postForm('/account/sign-in', { _csrf: hidden(page.body, '_csrf')!, email, password, next: '' });
    if (res.statusCode !== 303) throw new Error(`sign-in failed: ${res.statusCode}`);
  }
}

/** The value of a hidden input on a page. */
export function hidden(page: string, name: string): string | undefined {
  const match = new RegExp(`<input type="hidden" name="${name}" value="([^"]*)">`).exec(page);
  return match ? decodeEntities(match[1]!) : undefined;
}

/** Every hidden input of the page's first form, as the browser would post them. */
export function hiddenInputs(page: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) out[m[1]!] = decodeEntities(m[2]!);
  return out;
}

function decodeEntities(value: string): string {
  return value.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!);
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function authorizeUrl(params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) query.append(k, v);
  return `/connect/authorize?${query}`;
}

/** Owner, client and signed-in browser: the usual start of a flow. */
export async function consentSetup(app: FastifyInstance, clientBody: Record<string, unknown> = {}) {
  const owner = await signUp(app);
  const client = await createClient(app, owner, clientBody);
  const browser = new Browser(app);
  await browser.signIn(owner.email);
  return { owner, client, browser };
}

/** Runs authorize and approves (or denies) on the consent page; answers the final redirect's URL. */
export async function consent(browser: Browser, params: Record<string, string | undefined>, decision: 'approve' | 'deny' = 'approve'): Promise<URL> {
  const page = await browser.get(authorizeUrl(params));
  if (page.statusCode !== 200) throw new Error(`consent page: ${page.statusCode} ${page.headers.location ?? page.body.slice(0, 200)}`);
  const res = await browser.postForm('/connect/authorize/decision', { ...hiddenInputs(page.body), decision });
  if (res.statusCode !== 303) throw new Error(`consent post: ${res.statusCode} ${res.body.slice(0, 300)}`);
  return new URL(String(res.headers.location));
}

/** A code for `client` with PKCE, approved by the browser's owner. */
export async function codeFor(browser: Browser, client: Client, scope = ALL_SCOPES) {
  const { verifier, challenge } = pkce();
  const url = await consent(browser, {
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope,
    state: 'st',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  return { code: url.searchParams.get('code')!, verifier, url };
}

export function token(app: FastifyInstance, body: Record<string, string | undefined>, form = true, headers: Record<string, string> = {}) {
  const clean = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) as Record<string, string>;
  return app.inject({
    method: 'POST',
    url: '/api/oauth/token',
    headers: { 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json', ...headers },
    payload: form ? new URLSearchParams(clean).toString() : JSON.stringify(clean),
  });
}

export async function exchange(app: FastifyInstance, client: Client, code: string, verifier: string) {
  return token(app, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT,
    code_verifier: verifier,
    client_id: client.client_id,
    client_secret: client.client_secret ?? undefined,
  });
}

export const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`,
});

/**
 * An app with a probe route behind the ConnectOAuth scheme needing `analytics:read` (as the
 * analytics operations do), so bearer checks do not depend on other areas' handlers.
 * Closed after the file; `clock` moves its time.
 */
export async function buildProbeApp(): Promise<{
  app: FastifyInstance;
  clock: { now: number };
  probe: (headers: Record<string, string>) => Promise<LightMyRequestResponse>;
}> {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { afterAll } = await import('vitest');
  const { buildApp } = await import('#server/app.js');
  const { authenticator } = await import('#server/auth/authenticate.js');
  const { loadConfig } = await import('#server/config.js');
  const { openTestStore } = await import('#test/support/store.js');
  const clock = { now: Date.now() };
  const dataDir = mkdtempSync(join(tmpdir(), 'oauth-'));
  const store = await openTestStore();
  const { timed } = await import('#test/support/phases.js');
  const { TEST_PASSWORD_COST } = await import('#test/helper.js');
  const app = await timed('build', () =>
    buildApp(loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO: 'false', RATE_LIMIT_IP_PER_MINUTE: '10000' }), {
      store,
      now: () => new Date(clock.now),
      sandboxTestMode: true,
      passwordCost: TEST_PASSWORD_COST,
    }),
  );
  app.get(
    '/probe/analytics',
    { onRequest: authenticator(app, { api: 'connect', operationId: 'probe', security: [{ ConnectOAuth: ['analytics:read'] }] }) },
    async (request) => ({ auth: request.auth }),
  );
  await app.ready();
  afterAll(async () => {
    await app.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { app, clock, probe: (headers) => app.inject({ method: 'GET', url: '/probe/analytics', headers }) };
}
