// The authorization-code flow end to end over HTTP: consent page, approval, exchange, bearer use,
// refresh with rotation, and the sign-up of a new workspace in the same step.
import { describe, expect, it } from 'vitest';
import { buildShared } from '#test/helper.js';
import { bearer } from '#test/unit/account/support.js';
import { ALL_SCOPES, Browser, REDIRECT, authorizeUrl, codeFor, consentSetup, createClient, exchange, hiddenInputs, pkce, token } from './support.js';

// Many public requests (authorize, token, sign-in) from one address: the per-IP limit is raised.
const app = await buildShared({ env: { RATE_LIMIT_IP_PER_MINUTE: '10000' } });

describe('authorization code flow', () => {
  it('approve: code, state and iss in the redirect; the exchange answers tokens for the workspace', async () => {
    const { owner, client, browser } = await consentSetup(app);
    const { code, verifier, url } = await codeFor(browser, client);
    expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
    expect(url.searchParams.get('state')).toBe('st');
    expect(url.searchParams.get('iss')).toBe(app.config.publicUrl);
    expect(code).toMatch(/^ac_/);
    const res = await exchange(app, client, code, verifier);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    const body = res.json();
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: ALL_SCOPES, org_id: owner.workspace.id, org_slug: owner.workspace.slug });
    expect(body.access_token).toMatch(/^cat_/);
    expect(body.refresh_token).toMatch(/^crt_/);
    const grants = await app.inject({ method: 'GET', url: '/api/connect/grants', headers: bearer(owner.token) });
    expect(grants.json().data).toMatchObject([{ client_id: client.client_id, status: 'active', scopes: ALL_SCOPES.split(' ') }]);
  });

  it('the consent page names the client, the workspace and the scopes, with the security headers', async () => {
    const { client, browser } = await consentSetup(app, { name: 'Acme <b>CRM</b>' });
    const page = await browser.get(
      authorizeUrl({ client_id: client.client_id, redirect_uri: REDIRECT, response_type: 'code', scope: 'links:write', state: 'x' }),
    );
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Acme &lt;b&gt;CRM&lt;/b&gt; wants to access');
    expect(page.body).toContain('<code>links:write</code>');
    expect(page.body).not.toContain('documents:write');
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['content-security-policy']).toContain("form-action 'self' https://crm.test");
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['cache-control']).toBe('no-store');
  });

  it('not signed in: redirected to the sign-in page, which returns to the same authorize request', async () => {
    const owner = await (await import('#test/unit/account/support.js')).signUp(app);
    const client = await createClient(app, owner);
    const browser = new Browser(app);
    const params = { client_id: client.client_id, redirect_uri: REDIRECT, response_type: 'code', scope: 'links:write', state: 's1' };
    const res = await browser.get(authorizeUrl(params));
    expect(res.statusCode).toBe(302);
    const location = new URL(String(res.headers.location));
    expect(location.pathname).toBe('/account/sign-in');
    const next = location.searchParams.get('next')!;
    expect(next.startsWith('/connect/authorize?')).toBe(true);
    await browser.signIn(owner.email);
    const page = await browser.get(next);
    expect(page.statusCode).toBe(200);
    expect(hiddenInputs(page.body)).toMatchObject(params);
  });

  it('sign-up in the same step: the prefilled form creates the workspace and owner, then consent', async () => {
    const owner = await (await import('#test/unit/account/support.js')).signUp(app);
    const client = await createClient(app, owner);
    const browser = new Browser(app);
    const slug = `new-${Date.now().toString(36)}`;
    const { verifier, challenge } = pkce();
    const params = {
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'documents:write',
      state: 's2',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      org_name: 'New Travel',
      slug,
      email: `${slug}@example.test`,
      name: 'Nia New',
    };
    const page = await browser.get(authorizeUrl(params));
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`value="${slug}"`);
    expect(page.body).toContain('value="New Travel"');
    const form = hiddenInputs(page.body);
    const created = await browser.postForm('/connect/authorize/decision', {
      ...form,
      org_name: 'New Travel',
      slug,
      email: `${slug}@example.test`,
      name: 'Nia New',
      password: 'correct horse battery staple',
    });
    expect(created.statusCode, created.body.slice(0, 500)).toBe(303);
    const consentPage = await browser.get(String(created.headers.location));
    expect(consentPage.statusCode).toBe(200);
    expect(consentPage.body).toContain('wants to access New Travel');
    const approved = await browser.postForm('/connect/authorize/decision', { ...hiddenInputs(consentPage.body), decision: 'approve' });
    const code = new URL(String(approved.headers.location)).searchParams.get('code')!;
    const res = await exchange(app, client, code, verifier);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ org_slug: slug, scope: 'documents:write' });
    expect(res.json().org_id).not.toBe(owner.workspace.id);
  });

  it('sign-up errors re-render the form with the reason and create nothing', async () => {
    const owner = await (await import('#test/unit/account/support.js')).signUp(app);
    const client = await createClient(app, owner);
    const browser = new Browser(app);
    const params = {
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'documents:write',
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
      org_name: 'Taken',
      slug: owner.workspace.slug,
    };
    const page = await browser.get(authorizeUrl(params));
    const before = await app.platform.store.db
      .selectFrom('workspaces')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    const res = await browser.postForm('/connect/authorize/decision', {
      ...hiddenInputs(page.body),
      org_name: 'Taken',
      slug: owner.workspace.slug,
      email: 'other@example.test',
      name: 'X',
      password: 'correct horse battery staple',
    });
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain('already in use');
    const after = await app.platform.store.db
      .selectFrom('workspaces')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    expect(after.n).toBe(before.n);
  });

  it('refresh rotates: new pair, narrower scope on request, a retired refresh token reused revokes the family', async () => {
    const { client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client);
    const first = (await exchange(app, client, code, verifier)).json();
    const refreshed = await token(app, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    const second = refreshed.json();
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.scope).toBe(ALL_SCOPES);
    const narrowed = await token(app, {
      grant_type: 'refresh_token',
      refresh_token: second.refresh_token,
      scope: 'links:write',
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expect(narrowed.json().scope).toBe('links:write');
    const reuse = await token(app, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expect(reuse.statusCode).toBe(400);
    expect(reuse.json().error).toBe('invalid_grant');
    const latest = await token(app, {
      grant_type: 'refresh_token',
      refresh_token: narrowed.json().refresh_token,
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expect(latest.json().error).toBe('invalid_grant');
  });

  it('public client: no secret, PKCE required, exchange with client_id only', async () => {
    const { client, browser } = await consentSetup(app, { client_type: 'public' });
    expect(client.client_secret).toBeNull();
    const { code, verifier } = await codeFor(browser, client, 'links:write');
    const res = await token(app, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier, client_id: client.client_id });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('JSON and HTTP Basic client authentication work as the form does', async () => {
    const { client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client);
    const auth = { authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}` };
    const res = await token(
      app,
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier, unknown_param: 'ignored' },
      false,
      auth,
    );
    expect(res.statusCode, res.body).toBe(200);
  });
});
