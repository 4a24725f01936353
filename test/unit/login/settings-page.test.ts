// The Login apps settings page: sign-in required, secrets shown once, CSRF and origin checks
// (bad-inputs C15-style), escaping (bad-inputs J3), the security headers of every page (bad-inputs C16, L8), tenant isolation.
import { createHmac } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { newId } from '#server/lib/ids.js';
import { buildShared } from '#test/helper.js';
import { PASSWORD, signUp, type SignedUp } from '../account/support.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const PAGE = '/account/login-apps';

function cookieValue(res: LightMyRequestResponse, name: string): string {
  const found = (res.cookies as { name: string; value: string }[]).find((c) => c.name === name);
  if (!found) throw new Error(`no ${name} cookie`);
  return found.value;
}

const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;

interface Browser {
  cookie: string;
  csrf: string;
}

/** Signs in through the sign-in form, as a browser would; returns its cookies and a CSRF token. */
async function signIn(app: FastifyInstance, owner: SignedUp): Promise<Browser> {
  const form = await app.inject({ url: '/account/sign-in' });
  const csrfCookie = `csrf=${cookieValue(form, 'csrf')}`;
  const res = await app.inject({
    method: 'POST',
    url: '/account/sign-in',
    headers: { ...FORM, cookie: csrfCookie },
    payload: new URLSearchParams({ _csrf: csrfOf(form.body), email: owner.email, password: PASSWORD }).toString(),
  });
  expect(res.statusCode).toBe(303);
  const cookie = `${csrfCookie}; owner_session=${cookieValue(res, 'owner_session')}`;
  const page = await app.inject({ url: PAGE, headers: { cookie } });
  return { cookie, csrf: csrfOf(page.body) };
}

describe('Login apps settings page', () => {
  let app: FastifyInstance;
  let a: SignedUp;
  let b: SignedUp;
  let browserA: Browser;
  let browserB: Browser;
  beforeAll(async () => {
    app = await buildShared();
    a = await signUp(app, 'page-a');
    b = await signUp(app, 'page-b');
    browserA = await signIn(app, a);
    browserB = await signIn(app, b);
  });

  const open = (browser: Browser) => app.inject({ url: PAGE, headers: { cookie: browser.cookie } });
  const submit = (browser: Browser, path: string, form: Record<string, string> = {}, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url: `${PAGE}${path}`,
      headers: { ...FORM, cookie: browser.cookie, ...headers },
      payload: new URLSearchParams({ _csrf: browser.csrf, ...form }).toString(),
    });
  const appsOf = (owner: SignedUp) =>
    app.platform.store.db.selectFrom('login_apps').selectAll().where('workspace_id', '=', owner.workspace.id).orderBy('created_at', 'desc').execute();

  async function createThroughPage(name: string, extra: Record<string, string> = {}) {
    const res = await submit(browserA, '', { name, phone_source: 'service', webhook_destination: 'hosted', ...extra });
    expect(res.statusCode, res.body).toBe(200);
    const [row] = await appsOf(a);
    return { res, row: row! };
  }

  it('without a session: 303 to sign-in with `next`; a form post too', async () => {
    const res = await app.inject({ url: PAGE });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/account/sign-in?next=${encodeURIComponent(PAGE)}`);
    const csrfOnly = { cookie: browserA.cookie.split(';')[0]!, csrf: browserA.csrf }; // a valid form, no session
    const post = await submit(csrfOnly, '', { name: 'anonymous' });
    expect(post.statusCode).toBe(303);
    expect(post.headers.location).toBe(res.headers.location);
  });

  it("C16/L8 the page carries the sign-in page's headers: CSP without script, no framing, no-store, no referrer", async () => {
    const res = await open(browserA);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(res.headers['content-security-policy']).not.toMatch(/unsafe-inline|script-src/);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.body).toContain(`<form method="post" action="${PAGE}">`);
  });

  it('create: the API key and webhook secret appear in that answer only; later the page shows prefixes', async () => {
    const { res, row } = await createThroughPage('Page app');
    const key = /lk_live_[0-9A-Za-z]{32}/.exec(res.body)?.[0];
    const secret = /whsec_[0-9A-Za-z]{32}/.exec(res.body)?.[0];
    expect(key && app.platform.secrets.matches(key, row.api_key_digest)).toBe(true);
    expect(secret && app.platform.secrets.decrypt(row.webhook_secret_enc)).toBe(secret);
    expect(res.headers['cache-control']).toBe('no-store');
    const later = await open(browserA);
    expect(later.body).not.toContain(key);
    expect(later.body).not.toContain(secret);
    expect(later.body).toContain(row.api_key_prefix);
    expect(later.body).toContain(`/api/chatapp-auth/webhook/${row.id}`);
  });

  it('J3 a Login app named <img …> is escaped wherever it appears', async () => {
    await createThroughPage('<img src=x onerror=alert(1)>');
    const res = await open(browserA);
    expect(res.body).not.toContain('<img');
    expect(res.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it("C15 CSRF token missing or wrong, another session's, or another origin: 403 and nothing created", async () => {
    const before = (await appsOf(a)).length;
    const form = new URLSearchParams({ name: 'csrf', phone_source: 'service' }).toString();
    const cases = [
      app.inject({ method: 'POST', url: PAGE, headers: { ...FORM, cookie: browserA.cookie }, payload: form }),
      app.inject({
        method: 'POST',
        url: PAGE,
        headers: { ...FORM, cookie: browserA.cookie },
        payload: `${form}&_csrf=${encodeURIComponent(`${browserA.csrf.slice(0, -4)}AAAA`)}`,
      }),
      app.inject({
        method: 'POST',
        url: PAGE,
        headers: { ...FORM, cookie: browserA.cookie.replace(/csrf=[^;]+/, browserB.cookie.split(';')[0]!) },
        payload: `${form}&_csrf=${encodeURIComponent(browserA.csrf)}`,
      }),
      submit(browserA, '', { name: 'csrf' }, { origin: 'https://evil.test' }),
      submit(browserA, '', { name: 'csrf' }, { 'sec-fetch-site': 'cross-site' }),
    ];
    for (const res of await Promise.all(cases)) {
      expect(res.statusCode).toBe(403);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.body).not.toMatch(/lk_live_/);
    }
    expect((await appsOf(a)).length).toBe(before);
  });

  it('a refused create re-renders the page with the reason (400, 422-style rules of the API), escaped', async () => {
    const before = (await appsOf(a)).length;
    const res = await submit(browserA, '', { name: 'x', webhook_destination: 'staging' });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('staging_webhook_url');
    const bad = await submit(browserA, '', { name: 'x', phone_number_id: '"><script>' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).not.toContain('<script>');
    expect((await appsOf(a)).length).toBe(before);
  });

  it('rotations show the new value once; the stored digest and ciphertext change', async () => {
    const { row } = await createThroughPage('Rotate me');
    const key = await submit(browserA, `/${row.id}/rotate-api-key`);
    expect(key.statusCode).toBe(200);
    const newKey = /lk_live_[0-9A-Za-z]{32}/.exec(key.body)![0];
    const afterKey = (await appsOf(a)).find((r) => r.id === row.id)!;
    expect(app.platform.secrets.matches(newKey, afterKey.api_key_digest)).toBe(true);
    const secret = await submit(browserA, `/${row.id}/rotate-webhook-secret`, { previous_secret_valid_for: '3600' });
    expect(secret.statusCode).toBe(200);
    const newSecret = /whsec_[0-9A-Za-z]{32}/.exec(secret.body)![0];
    const afterSecret = (await appsOf(a)).find((r) => r.id === row.id)!;
    expect(app.platform.secrets.decrypt(afterSecret.webhook_secret_enc)).toBe(newSecret);
    expect(afterSecret.previous_webhook_secret_enc).toBe(afterKey.webhook_secret_enc);
    expect((await submit(browserA, `/${row.id}/rotate-webhook-secret`, { previous_secret_valid_for: '5' })).statusCode).toBe(400);
  });

  it('provider webhook status with a retry button; a retry that cannot succeed says why', async () => {
    const { row } = await createThroughPage('Own number', { phone_source: 'own' });
    expect(row.provider_webhook_status).toBe('failed');
    const page = await open(browserA);
    expect(page.body).toContain(`action="${PAGE}/${row.id}/retry-webhook"`);
    const retry = await submit(browserA, `/${row.id}/retry-webhook`);
    expect(retry.statusCode).toBe(409);
    expect(retry.body).toContain('cloud-API number');
  });

  it('lists the hosted-webhook receipts of each app', async () => {
    const { row } = await createThroughPage('Receiver');
    const secret = app.platform.secrets.decrypt(row.webhook_secret_enc);
    const data = {
      app_id: row.id,
      session_id: newId('ls'),
      phone: '+15550100202',
      profile_name: '<b>Ana</b>',
      verified_at: '2026-11-23T09:31:00Z',
      verification_token: 'eyJ.a.b',
    };
    const { app_id: _appId, ...topLevel } = data;
    const body = JSON.stringify({ id: newId('evt'), type: 'chatapp.auth.verified', created: 1, data, event: 'chatapp.auth.verified', ...topLevel });
    const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    const received = await app.inject({
      method: 'POST',
      url: `/api/chatapp-auth/webhook/${row.id}`,
      headers: { 'content-type': 'application/json', 'x-login-signature': signature },
      payload: body,
    });
    expect(received.statusCode).toBe(200);
    const page = await open(browserA);
    expect(page.body).toContain(JSON.parse(body).id);
    expect(page.body).toContain('+15550100202');
    expect(page.body).toContain('&lt;b&gt;Ana&lt;/b&gt;');
    expect(page.body).not.toContain('eyJ.a.b'); // tokens are not shown
  });

  it("B1 another workspace's app id (or a malformed one) in a form: 404 page, nothing changes; delete works on one's own", async () => {
    const { row } = await createThroughPage('Mine');
    for (const path of [`/${row.id}/rotate-api-key`, `/${row.id}/rotate-webhook-secret`, `/${row.id}/delete`, `/${row.id}/retry-webhook`, '/abc/delete']) {
      const res = await submit(browserB, path);
      expect(res.statusCode, path).toBe(404);
      expect(res.body).not.toContain('Mine');
    }
    const after = (await appsOf(a)).find((r) => r.id === row.id);
    expect(after).toEqual(row);
    const deleted = await submit(browserA, `/${row.id}/delete`);
    expect(deleted.statusCode).toBe(303);
    expect(deleted.headers.location).toBe(PAGE);
    expect((await appsOf(a)).some((r) => r.id === row.id)).toBe(false);
  });
});
