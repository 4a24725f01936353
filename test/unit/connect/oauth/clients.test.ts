// Connect clients and grants on the owner API, and the settings page that uses the same functions.
import { describe, expect, it } from 'vitest';
import { bearer, signUp } from '#test/unit/account/support.js';
import { Browser, REDIRECT, basic, buildProbeApp, codeFor, consentSetup, createClient, exchange, hiddenInputs, token } from './support.js';

// The probe app's clock stands still unless a test moves it.
const { app, clock, probe } = await buildProbeApp();

const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, ownerToken: string, payload?: unknown) =>
  app.inject({ method, url, headers: bearer(ownerToken), ...(payload !== undefined ? { payload: payload as object } : {}) });

describe('Connect clients', () => {
  it('create shows the secret once; get and list show only its prefix; the digest is stored, not the secret', async () => {
    const owner = await signUp(app);
    const res = await api('POST', '/api/connect/clients', owner.token, {
      name: 'Acme CRM',
      redirect_uris: [REDIRECT, 'https://crm.test/v2/cb', 'http://127.0.0.1:8080/cb'],
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    const created = res.json();
    expect(created).toMatchObject({
      name: 'Acme CRM',
      client_type: 'confidential',
      redirect_uris: [REDIRECT, 'https://crm.test/v2/cb', 'http://127.0.0.1:8080/cb'],
    });
    expect(created.client_secret).toMatch(/^cs_[0-9A-Za-z]{32}$/);
    expect(created.secret_prefix).toBe(created.client_secret.slice(0, 11));
    const got = (await api('GET', `/api/connect/clients/${created.client_id}`, owner.token)).json();
    expect(got.client_secret).toBeUndefined();
    expect(got.secret_prefix).toBe(created.secret_prefix);
    const list = (await api('GET', '/api/connect/clients', owner.token)).json();
    expect(list.data).toEqual([got]);
    const row = await app.platform.store.db.selectFrom('connect_clients').selectAll().where('id', '=', created.client_id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(created.client_secret);
  });

  it('redirect URIs: https only (http for loopback), no user info, no fragment, distinct: 400 naming the entry', async () => {
    const owner = await signUp(app);
    for (const [uris, pointer] of [
      [['http://crm.test/cb'], '/body/redirect_uris/0'],
      [[REDIRECT, 'https://user@crm.test/cb'], '/body/redirect_uris/1'],
      [['https://crm.test/cb#x'], '/body/redirect_uris/0'],
      [[REDIRECT, REDIRECT], '/body/redirect_uris'],
      [['javascript:alert(1)'], '/body/redirect_uris/0'],
    ] as [string[], string][]) {
      const res = await api('POST', '/api/connect/clients', owner.token, { name: 'X', redirect_uris: uris });
      expect(res.statusCode, JSON.stringify(uris)).toBe(400);
      expect(res.json().errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
    }
    expect((await api('GET', '/api/connect/clients', owner.token)).json().data).toEqual([]);
  });

  it("B1 another workspace's client id answers 404 like an unknown one, for every client operation", async () => {
    const a = await signUp(app);
    const b = await signUp(app);
    const clientA = await createClient(app, a);
    const unknown = 'cli_00000000000000000000';
    for (const [method, path, body] of [
      ['GET', '', undefined],
      ['PATCH', '', { name: 'Y' }],
      ['POST', '/rotate-secret', undefined],
      ['DELETE', '', undefined],
    ] as const) {
      const foreign = await api(method, `/api/connect/clients/${clientA.client_id}${path}`, b.token, body);
      const missing = await api(method, `/api/connect/clients/${unknown}${path}`, b.token, body);
      expect(foreign.statusCode).toBe(404);
      expect(missing.statusCode).toBe(404);
      expect(foreign.json().detail).toBe(missing.json().detail);
    }
    expect((await api('GET', `/api/connect/clients/${clientA.client_id}`, a.token)).statusCode).toBe(200);
  });

  it('update renames and replaces redirect URIs; a code for a removed URI can no longer be exchanged', async () => {
    const { owner, client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client);
    const res = await api('PATCH', `/api/connect/clients/${client.client_id}`, owner.token, {
      name: 'Acme CRM (EU)',
      redirect_uris: ['https://crm.test/v2/cb'],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ name: 'Acme CRM (EU)', redirect_uris: ['https://crm.test/v2/cb'] });
    expect((await exchange(app, client, code, verifier)).json().error).toBe('invalid_grant');
  });

  it('L5 rotate: the new secret works, the old one is refused at once; tokens already issued stay valid', async () => {
    const { owner, client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client);
    const tokens = (await exchange(app, client, code, verifier)).json();
    const rotated = (await api('POST', `/api/connect/clients/${client.client_id}/rotate-secret`, owner.token)).json();
    expect(rotated.client_secret).not.toBe(client.client_secret);
    const refresh = (secret: string) => token(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, true, basic(client.client_id, secret));
    expect((await refresh(client.client_secret!)).json().error).toBe('invalid_client');
    expect((await probe(bearer(tokens.access_token))).statusCode).toBe(200);
    expect((await refresh(rotated.client_secret)).statusCode).toBe(200);
  });

  it("rotating a public client's secret: 409 conflict", async () => {
    const owner = await signUp(app);
    const pub = await createClient(app, owner, { client_type: 'public' });
    const res = await api('POST', `/api/connect/clients/${pub.client_id}/rotate-secret`, owner.token);
    expect(res.statusCode).toBe(409);
    expect(res.json().type).toBe('https://chatapp.example/problems/conflict');
  });

  it('delete revokes its grants and tokens and invalidates its codes', async () => {
    const { owner, client, browser } = await consentSetup(app);
    const first = await codeFor(browser, client);
    const tokens = (await exchange(app, client, first.code, first.verifier)).json();
    const pending = await codeFor(browser, client);
    expect((await api('DELETE', `/api/connect/clients/${client.client_id}`, owner.token)).statusCode).toBe(204);
    expect((await probe(bearer(tokens.access_token))).statusCode).toBe(401);
    expect((await exchange(app, client, pending.code, pending.verifier)).json().error).toBe('invalid_client');
    expect((await api('GET', '/api/connect/grants', owner.token)).json().data).toEqual([]);
    expect((await api('DELETE', `/api/connect/clients/${client.client_id}`, owner.token)).statusCode).toBe(404);
  });

  it('lists page with signed cursors; a cursor of another workspace is refused (B6)', async () => {
    const owner = await signUp(app);
    for (let i = 0; i < 3; i++) {
      clock.now += 1000;
      await createClient(app, owner, { name: `C${i}` });
    }
    const first = (await api('GET', '/api/connect/clients?limit=2', owner.token)).json();
    expect(first.data.map((c: { name: string }) => c.name)).toEqual(['C2', 'C1']);
    expect(first.has_more).toBe(true);
    const second = (await api('GET', `/api/connect/clients?limit=2&cursor=${first.next_cursor}`, owner.token)).json();
    expect(second.data.map((c: { name: string }) => c.name)).toEqual(['C0']);
    const other = await signUp(app);
    expect((await api('GET', `/api/connect/clients?cursor=${first.next_cursor}`, other.token)).statusCode).toBe(400);
  });
});

describe('grants', () => {
  it('list with filters; an unknown client filter answers 404; revoke makes every token 401 and is idempotent', async () => {
    const { owner, client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client, 'links:write analytics:read');
    const tokens = (await exchange(app, client, code, verifier)).json();
    const list = (await api('GET', `/api/connect/grants?client_id=${client.client_id}&status=active`, owner.token)).json();
    expect(list.data).toHaveLength(1);
    const grant = list.data[0];
    expect(grant).toMatchObject({ client_name: 'Acme CRM', scopes: ['links:write', 'analytics:read'], status: 'active', revoked_at: null });
    expect((await probe(bearer(tokens.access_token))).statusCode).toBe(200);
    expect((await api('GET', '/api/connect/grants?client_id=cli_00000000000000000000', owner.token)).statusCode).toBe(404);
    const revoked = await api('POST', `/api/connect/grants/${grant.id}/revoke`, owner.token);
    expect(revoked.json()).toMatchObject({ id: grant.id, status: 'revoked' });
    expect(revoked.json().revoked_at).not.toBeNull();
    expect((await probe(bearer(tokens.access_token))).statusCode).toBe(401);
    const refresh = await token(
      app,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      true,
      basic(client.client_id, client.client_secret!),
    );
    expect(refresh.json().error).toBe('invalid_grant');
    const again = await api('POST', `/api/connect/grants/${grant.id}/revoke`, owner.token);
    expect(again.json().revoked_at).toBe(revoked.json().revoked_at);
    const other = await signUp(app);
    expect((await api('POST', `/api/connect/grants/${grant.id}/revoke`, other.token)).statusCode).toBe(404);
    expect((await api('GET', '/api/connect/grants?status=revoked', owner.token)).json().data).toHaveLength(1);
  });

  it("consent by another workspace: its grant is in its own list, not the registering workspace's", async () => {
    const { owner, client } = await consentSetup(app);
    const other = await signUp(app);
    const browser = new Browser(app);
    await browser.signIn(other.email);
    await codeFor(browser, client, 'links:write');
    expect((await api('GET', '/api/connect/grants', owner.token)).json().data).toEqual([]);
    expect((await api('GET', '/api/connect/grants', other.token)).json().data).toMatchObject([{ client_id: client.client_id }]);
    expect((await api('GET', `/api/connect/grants?client_id=${client.client_id}`, other.token)).statusCode).toBe(200);
  });
});

describe('settings page', () => {
  it('creates a client in the browser, shows the secret once and escapes names (J3)', async () => {
    const owner = await signUp(app);
    const browser = new Browser(app);
    await browser.signIn(owner.email);
    const page = await browser.get('/account/connect-clients');
    expect(page.statusCode).toBe(200);
    const csrf = hiddenInputs(page.body)._csrf!;
    const created = await browser.postForm('/account/connect-clients', {
      _csrf: csrf,
      name: '<img src=x onerror=alert(1)>',
      client_type: 'confidential',
      redirect_uris: REDIRECT,
    });
    expect(created.statusCode).toBe(200);
    expect(created.body).not.toContain('<img');
    expect(created.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
    const secret = /Client secret: <code>(cs_[0-9A-Za-z]{32})<\/code>/.exec(created.body)?.[1];
    expect(secret).toBeDefined();
    const again = await browser.get('/account/connect-clients');
    expect(again.body).not.toContain(secret!);
    expect((await api('GET', '/api/connect/clients', owner.token)).json().data).toHaveLength(1);
  });

  it('refuses a post without the CSRF token or from another site, and sends strangers to sign-in', async () => {
    const owner = await signUp(app);
    const browser = new Browser(app);
    await browser.signIn(owner.email);
    await browser.get('/account/connect-clients');
    const noToken = await browser.postForm('/account/connect-clients', { name: 'X', redirect_uris: REDIRECT });
    expect(noToken.statusCode).toBe(403);
    const page = await browser.get('/account/connect-clients');
    const crossSite = await browser.postForm(
      '/account/connect-clients',
      { _csrf: hiddenInputs(page.body)._csrf!, name: 'X', redirect_uris: REDIRECT },
      { 'sec-fetch-site': 'cross-site' },
    );
    expect(crossSite.statusCode).toBe(403);
    expect((await api('GET', '/api/connect/clients', owner.token)).json().data).toEqual([]);
    const stranger = await new Browser(app).get('/account/connect-clients');
    expect(stranger.statusCode).toBe(303);
    expect(String(stranger.headers.location)).toContain('/account/sign-in');
  });
});
