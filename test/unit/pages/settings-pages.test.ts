// The settings pages other than webhooks: layout and sign-in on every page (redirect with
// `next`), the security headers (bad-inputs C16/L8), API keys (bad-inputs L1 shown once, bad-inputs C15 forged posts, bad-inputs B1 foreign
// ids, revoke with a confirmation step), numbers (sandbox connect, re-check, disconnect), usage
// and the overview, escaping (bad-inputs J3).
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { forgedPosts, signedInBrowser, type Browser } from './settings-support.js';

const PAGES = ['/account', '/account/api-keys', '/account/connect-clients', '/account/webhooks', '/account/login-apps', '/account/numbers', '/account/usage'];
const KEY = /ck_[0-9A-Za-z_]+|[a-z]+_live_[0-9A-Za-z]{20,}/;

let app: FastifyInstance;
let a: Browser;
let b: Browser;
beforeAll(async () => {
  app = await buildShared();
  a = await signedInBrowser(app);
  b = await signedInBrowser(app);
});

const keysOf = (browser: Browser) =>
  app.platform.store.db.selectFrom('api_keys').selectAll().where('workspace_id', '=', browser.owner.workspace.id).orderBy('created_at', 'desc').execute();
const accountsOf = (browser: Browser) =>
  app.platform.store.db.selectFrom('business_accounts').selectAll().where('workspace_id', '=', browser.owner.workspace.id).execute();

describe('every settings page', () => {
  it('without a session: 303 to sign-in with `next` naming the page', async () => {
    for (const path of PAGES) {
      const res = await app.inject({ url: path });
      expect(res.statusCode, path).toBe(303);
      expect(res.headers.location).toBe(`/account/sign-in?next=${encodeURIComponent(path)}`);
    }
  });

  it('C16/L8 renders for the owner on one layout: nav, who is signed in, sign-out form; CSP without script, no framing, no-store', async () => {
    for (const path of PAGES) {
      const res = await a.open(path);
      expect(res.statusCode, `${path} ${res.body.slice(0, 500)}`).toBe(200);
      expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
      expect(res.headers['content-security-policy']).not.toMatch(/unsafe-inline|script-src/);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.body).not.toContain('<script');
      for (const link of PAGES) expect(res.body).toContain(`href="${link}"`);
      expect(res.body).toContain(`href="${path}" aria-current="page"`);
      expect(res.body).toContain(a.owner.email);
      expect(res.body).toContain('action="/account/sign-out"');
    }
  });

  it('the sign-out button of the layout ends the session', async () => {
    const c = await signedInBrowser(app);
    const res = await c.submit('/account/sign-out');
    expect(res.statusCode).toBe(303);
    const cleared = (res.cookies as { name: string; value: string }[]).find((k) => k.name === 'owner_session');
    expect(cleared?.value).toBe('');
  });

  it('the overview names the workspace, plan and counts of this workspace only', async () => {
    await a.submit('/account/api-keys', { name: 'counted', scopes: ['messaging:read'] });
    const res = await a.open('/account');
    expect(res.body).toContain(a.owner.workspace.slug);
    expect(res.body).not.toContain(b.owner.workspace.slug);
    expect(res.body).toMatch(/Plan <strong>Free<\/strong>/);
    const active = (await keysOf(a)).filter((k) => !k.revoked_at).length;
    expect(res.body).toContain(`API keys (not revoked)</a></td><td>${active}</td>`);
  });
});

describe('API keys page', () => {
  it('L1 create: the key appears in that answer only, is the stored digest; later GETs show the prefix', async () => {
    const res = await a.submit('/account/api-keys', { name: 'Page key', scopes: ['messaging:read', 'messaging:write'] });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const [row] = await keysOf(a);
    const secret = /<code>([^<]+)<\/code>/.exec(res.body.slice(res.body.indexOf('role="status"')))![1]!;
    expect(app.platform.secrets.matches(secret, row!.digest)).toBe(true);
    expect(row!.name).toBe('Page key');
    const later = await a.open('/account/api-keys');
    expect(later.body).not.toContain(secret);
    expect(later.body).toContain(row!.prefix);
    // The key works against the Messaging API, in each of the two headers the page names.
    expect(later.body).toContain('<code>Authorization: ApiKey mk_…</code>');
    expect((await app.inject({ url: '/api/chatapp/phone-numbers', headers: { 'x-api-key': secret } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/api/chatapp/phone-numbers', headers: { authorization: `ApiKey ${secret}` } })).statusCode).toBe(200);
  });

  it('a refused create (no scope, past expiry) keeps the form and says why; nothing is created', async () => {
    const before = (await keysOf(a)).length;
    const none = await a.submit('/account/api-keys', { name: 'kept name' });
    expect(none.statusCode).toBe(400);
    expect(none.body).toContain('Choose at least one scope');
    expect(none.body).toContain('value="kept name"');
    const past = await a.submit('/account/api-keys', { name: 'old', scopes: 'messaging:read', expires_at: '2001-01-01T00:00' });
    expect(past.statusCode).toBe(400);
    expect(past.body).toContain('expires_at: must be in the future');
    expect((await keysOf(a)).length).toBe(before);
  });

  it('J3 a key named <img …> is escaped', async () => {
    await a.submit('/account/api-keys', { name: '<img src=x onerror=alert(1)>', scopes: 'messaging:read' });
    const res = await a.open('/account/api-keys');
    expect(res.body).not.toContain('<img');
    expect(res.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('C15 create without the CSRF token, with a wrong one, or from another origin: 403, nothing created', async () => {
    const before = (await keysOf(a)).length;
    for (const res of await forgedPosts(app, a, '/account/api-keys', { name: 'forged', scopes: 'messaging:read' })) {
      expect(res.statusCode).toBe(403);
      expect(res.body).not.toMatch(KEY);
    }
    expect((await keysOf(a)).length).toBe(before);
  });

  it('revoke asks for confirmation first, then revokes; the revoked key is refused by the API', async () => {
    const created = await a.submit('/account/api-keys', { name: 'to revoke', scopes: 'messaging:read' });
    const secret = /<code>([^<]+)<\/code>/.exec(created.body.slice(created.body.indexOf('role="status"')))![1]!;
    const [row] = await keysOf(a);
    const ask = await a.submit(`/account/api-keys/${row!.id}/revoke`);
    expect(ask.statusCode).toBe(200);
    expect(ask.body).toContain('Yes, revoke it');
    expect((await keysOf(a)).find((k) => k.id === row!.id)!.revoked_at).toBeNull();
    const done = await a.submit(`/account/api-keys/${row!.id}/revoke`, { confirm: 'yes' });
    expect(done.statusCode).toBe(303);
    expect((await keysOf(a)).find((k) => k.id === row!.id)!.revoked_at).not.toBeNull();
    expect((await app.inject({ url: '/api/chatapp/phone-numbers', headers: { 'x-api-key': secret } })).statusCode).toBe(401);
  });

  it('rotate shows the new key once; the old one is refused', async () => {
    const created = await a.submit('/account/api-keys', { name: 'to rotate', scopes: 'messaging:read' });
    const old = /<code>([^<]+)<\/code>/.exec(created.body.slice(created.body.indexOf('role="status"')))![1]!;
    const [row] = await keysOf(a);
    const rotated = await a.submit(`/account/api-keys/${row!.id}/rotate`);
    expect(rotated.statusCode).toBe(200);
    const fresh = /<code>([^<]+)<\/code>/.exec(rotated.body.slice(rotated.body.indexOf('role="status"')))![1]!;
    expect(fresh).not.toBe(old);
    expect((await app.inject({ url: '/api/chatapp/phone-numbers', headers: { 'x-api-key': old } })).statusCode).toBe(401);
    expect((await app.inject({ url: '/api/chatapp/phone-numbers', headers: { 'x-api-key': fresh } })).statusCode).toBe(200);
    expect((await a.open('/account/api-keys')).body).not.toContain(fresh);
  });

  it("B1/B8 another workspace's key id, or a malformed one: 404 on the page, the key unchanged", async () => {
    await a.submit('/account/api-keys', { name: 'not yours', scopes: 'messaging:read' });
    const [row] = await keysOf(a);
    for (const path of [`/account/api-keys/${row!.id}/revoke`, `/account/api-keys/${row!.id}/rotate`, '/account/api-keys/abc/revoke']) {
      const res = await b.submit(path, { confirm: 'yes' });
      expect(res.statusCode, path).toBe(404);
      expect(res.body).not.toContain('not yours');
    }
    expect((await keysOf(a)).find((k) => k.id === row!.id)).toEqual(row);
  });
});

describe('numbers page', () => {
  it('connects a sandbox account and lists its numbers with status and quality', async () => {
    const res = await a.submit('/account/numbers/sandbox', { name: 'Page sandbox' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain('Connected Page sandbox');
    const page = await a.open('/account/numbers');
    const [account] = await accountsOf(a);
    expect(page.body).toContain(account!.id);
    const number = await app.platform.store.db.selectFrom('phone_numbers').selectAll().where('business_account_id', '=', account!.id).executeTakeFirstOrThrow();
    expect(page.body).toContain(number.display_phone_number);
    expect(page.body).toContain(number.quality_rating);
    expect(page.body).toContain('not needed (sandbox)');
  });

  it('C15 connect and disconnect from another origin or without the token: 403, nothing changed', async () => {
    const before = await accountsOf(a);
    for (const res of await forgedPosts(app, a, '/account/numbers/sandbox', { name: 'forged' })) expect(res.statusCode).toBe(403);
    for (const res of await forgedPosts(app, a, `/account/numbers/${before[0]!.id}/disconnect`, { confirm: 'yes' })) expect(res.statusCode).toBe(403);
    expect(await accountsOf(a)).toEqual(before);
  });

  it("B1 another workspace's account: 404 for disconnect and re-check; nothing changed", async () => {
    const before = await accountsOf(a);
    for (const path of [`/account/numbers/${before[0]!.id}/disconnect`, `/account/numbers/${before[0]!.id}/webhooks`]) {
      const res = await b.submit(path, { confirm: 'yes' });
      expect(res.statusCode, path).toBe(404);
    }
    expect(await accountsOf(a)).toEqual(before);
  });

  it("the provider-webhook re-check of a sandbox account shows the API's refusal as a message", async () => {
    const [account] = await accountsOf(a);
    const res = await a.submit(`/account/numbers/${account!.id}/webhooks`);
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('is a sandbox account');
    expect(res.body).not.toMatch(/at .*\.ts:\d+/); // no stack
  });

  it('disconnect asks first, then disconnects (numbers marked DISCONNECTED, no longer listed)', async () => {
    const [account] = await accountsOf(a);
    const ask = await a.submit(`/account/numbers/${account!.id}/disconnect`);
    expect(ask.body).toContain('Yes, disconnect');
    expect((await accountsOf(a))[0]!.disconnected_at).toBeNull();
    const done = await a.submit(`/account/numbers/${account!.id}/disconnect`, { confirm: 'yes' });
    expect(done.statusCode).toBe(303);
    expect((await accountsOf(a))[0]!.disconnected_at).not.toBeNull();
    expect((await a.open('/account/numbers')).body).toContain('No account connected yet.');
  });
});

describe('usage page', () => {
  it('shows the plan and the counters the usage operation computes', async () => {
    const api = await app.inject({ url: '/api/subscriptions/usage', headers: { authorization: `Bearer ${a.owner.token}` } });
    expect(api.statusCode).toBe(200);
    const usage = api.json();
    expect(usage.upgrade_url).toMatch(/\/account\/usage$/);
    const page = await a.open('/account/usage');
    expect(page.body).toContain(`Plan <strong>${usage.plan.name}</strong>`);
    expect(page.body).toContain(
      `<td data-label="Counter">Contacts stored</td><td data-label="Used">${usage.counters.contacts.used}</td><td data-label="Limit">${usage.counters.contacts.limit.toLocaleString('en-US')}</td>`,
    );
  });
});
