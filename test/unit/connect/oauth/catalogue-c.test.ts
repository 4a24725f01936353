// Catalogue group C (OAuth consent and token), bad-inputs A6 through RFC 7009, and bad-inputs B4, one test per case.
import { describe, expect, it } from 'vitest';
import { bearer, signUp } from '#test/unit/account/support.js';
import { connectBearer } from '#test/support/connect.js';
import {
  ALL_SCOPES,
  Browser,
  REDIRECT,
  authorizeUrl,
  basic,
  buildProbeApp,
  codeFor,
  consent,
  consentSetup,
  createClient,
  exchange,
  hiddenInputs,
  pkce,
  token,
} from './support.js';

const { app, clock, probe } = await buildProbeApp();

const base = (clientId: string, extra: Record<string, string | undefined> = {}) => ({
  client_id: clientId,
  redirect_uri: REDIRECT,
  response_type: 'code',
  scope: 'documents:write',
  state: 'xyz',
  code_challenge: pkce().challenge,
  code_challenge_method: 'S256',
  ...extra,
});

const count = async (table: 'connect_codes' | 'connect_tokens' | 'connect_grants' | 'connect_clients') =>
  Number(
    (
      await app.platform.store.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

function expectErrorPage(res: { statusCode: number; headers: Record<string, unknown>; body: string }) {
  expect(res.statusCode).toBe(400);
  expect(res.headers.location).toBeUndefined();
  expect(String(res.headers['content-type'])).toContain('text/html');
  expect(res.body).not.toContain('ac_');
}

function redirectParams(res: { statusCode: number; headers: Record<string, unknown> }): URLSearchParams {
  expect(res.statusCode).toBe(302);
  const url = new URL(String(res.headers.location));
  expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
  return url.searchParams;
}

function expectOAuthError(res: { statusCode: number; headers: Record<string, unknown>; json: () => any }, status: number, error: string) {
  expect(res.statusCode).toBe(status);
  expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers.pragma).toBe('no-cache');
  expect(res.json().error).toBe(error);
}

describe('C. OAuth consent and token', () => {
  it('C1 unknown client_id, unregistered redirect_uri, or none: 400 HTML page, no Location, no code', async () => {
    const { client, browser } = await consentSetup(app);
    const codes = await count('connect_codes');
    for (const params of [
      base('cli_00000000000000000000'),
      base(client.client_id, { redirect_uri: 'https://evil.test/cb' }),
      base(client.client_id, { redirect_uri: undefined }),
      base(client.client_id, { client_id: undefined }),
      {},
    ]) {
      const res = await browser.get(authorizeUrl(params as Record<string, string>));
      expectErrorPage(res);
      expect(res.headers['x-frame-options']).toBe('DENY');
    }
    expect(await count('connect_codes')).toBe(codes);
  });

  it('C2 look-alikes of the registered redirect URI are refused like C1 (exact string match)', async () => {
    const { client, browser } = await consentSetup(app);
    for (const uri of [
      'https://crm.test/cb/',
      'https://crm.test/cb?x=1',
      'https://crm.test/cb#f',
      'https://crm.test/cb/../x',
      'https://crm.test.evil.test/cb',
      'https://crm.test@evil.test/cb',
      'https://crm.test:8443/cb',
      'http://crm.test/cb',
      'HTTPS://crm.test/cb',
    ]) {
      expectErrorPage(await browser.get(authorizeUrl(base(client.client_id, { redirect_uri: uri }))));
    }
  });

  it('C3 state with markup and non-ASCII: byte-exact in the redirect, escaped in the page', async () => {
    const { client, browser } = await consentSetup(app);
    const state = '"><script>alert(1)</script>&x=é';
    const page = await browser.get(authorizeUrl(base(client.client_id, { state })));
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('<script>');
    expect(page.body).toContain('&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;x=é');
    const url = await consent(browser, base(client.client_id, { state }));
    expect(url.searchParams.get('state')).toBe(state);
    // Encoded once: the raw query holds no `<`, `"` or `%25` (double encoding).
    expect(url.search).not.toMatch(/[<>"]|%25/);
    const denied = await browser.get(authorizeUrl(base(client.client_id, { state, response_type: 'token' })));
    expect(new URL(String(denied.headers.location)).searchParams.get('state')).toBe(state);
  });

  it('C4 response_type=token or none: redirect with unsupported_response_type / invalid_request, state and iss', async () => {
    const { client, browser } = await consentSetup(app);
    const token = redirectParams(await browser.get(authorizeUrl(base(client.client_id, { response_type: 'token' }))));
    expect(token.get('error')).toBe('unsupported_response_type');
    expect(token.get('state')).toBe('xyz');
    expect(token.get('iss')).toBe(app.config.publicUrl);
    const none = redirectParams(await browser.get(authorizeUrl(base(client.client_id, { response_type: undefined }))));
    expect(none.get('error')).toBe('invalid_request');
    expect(none.get('state')).toBe('xyz');
    expect(none.get('iss')).toBe(app.config.publicUrl);
  });

  it('C5 unknown or empty scope: invalid_scope; owner denies: access_denied; never a code', async () => {
    const { client, browser } = await consentSetup(app);
    for (const scope of ['contacts:read', '', 'documents:write admin', undefined]) {
      const params = redirectParams(await browser.get(authorizeUrl(base(client.client_id, { scope }))));
      expect(params.get('error')).toBe('invalid_scope');
      expect(params.get('state')).toBe('xyz');
      expect(params.get('iss')).toBe(app.config.publicUrl);
      expect(params.has('code')).toBe(false);
    }
    const codes = await count('connect_codes');
    const denied = await consent(browser, base(client.client_id), 'deny');
    expect(denied.searchParams.get('error')).toBe('access_denied');
    expect(denied.searchParams.get('state')).toBe('xyz');
    expect(denied.searchParams.get('iss')).toBe(app.config.publicUrl);
    expect(denied.searchParams.has('code')).toBe(false);
    expect(await count('connect_codes')).toBe(codes);
  });

  it('C6 code_challenge_method=plain; public client without code_challenge: invalid_request, no code', async () => {
    const { client, browser } = await consentSetup(app);
    const plain = redirectParams(await browser.get(authorizeUrl(base(client.client_id, { code_challenge_method: 'plain' }))));
    expect(plain.get('error')).toBe('invalid_request');
    expect(plain.has('code')).toBe(false);
    const owner = await signUp(app);
    const pub = await createClient(app, owner, { client_type: 'public' });
    const none = redirectParams(await browser.get(authorizeUrl(base(pub.client_id, { code_challenge: undefined, code_challenge_method: undefined }))));
    expect(none.get('error')).toBe('invalid_request');
    expect(none.get('state')).toBe('xyz');
    expect(none.has('code')).toBe(false);
  });

  it('C7 S256 code exchanged without code_verifier or with a wrong one: invalid_grant', async () => {
    const { client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client);
    expectOAuthError(await exchange(app, client, code, undefined as unknown as string), 400, 'invalid_grant');
    expectOAuthError(await exchange(app, client, code, pkce().verifier), 400, 'invalid_grant');
    // The failed attempts did not use the code up.
    expect((await exchange(app, client, code, verifier)).statusCode).toBe(200);
  });

  it('C8 code reused: invalid_grant, first tokens revoked', async () => {
    const { client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client);
    const first = (await exchange(app, client, code, verifier)).json();
    expect((await probe(bearer(first.access_token))).statusCode).toBe(200);
    expectOAuthError(await exchange(app, client, code, verifier), 400, 'invalid_grant');
    const after = await probe(bearer(first.access_token));
    expect(after.statusCode).toBe(401);
    expect(after.headers['www-authenticate']).toContain('error="invalid_token"');
    const refresh = await token(app, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expectOAuthError(refresh, 400, 'invalid_grant');
  });

  it('C9 a code older than 10 minutes: invalid_grant', async () => {
    const { client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client);
    clock.now += 10 * 60 * 1000 + 1000;
    try {
      expectOAuthError(await exchange(app, client, code, verifier), 400, 'invalid_grant');
    } finally {
      clock.now -= 10 * 60 * 1000 + 1000;
    }
  });

  it("C10 client Y exchanging X's code with Y's secret; redirect_uri differing from authorize: invalid_grant", async () => {
    const { owner, client, browser } = await consentSetup(app, { redirect_uris: [REDIRECT, 'https://crm.test/other'] });
    const other = await createClient(app, owner);
    const { code, verifier } = await codeFor(browser, client);
    expectOAuthError(await exchange(app, other, code, verifier), 400, 'invalid_grant');
    const wrongUri = await token(app, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: 'https://crm.test/other',
      code_verifier: verifier,
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expectOAuthError(wrongUri, 400, 'invalid_grant');
    expect((await exchange(app, client, code, verifier)).statusCode).toBe(200);
  });

  it('C11 wrong client_secret in the body or in HTTP Basic: 401 invalid_client with WWW-Authenticate: Basic, one answer for unknown clients', async () => {
    const { client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client);
    const body = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier };
    const inBody = await token(app, { ...body, client_id: client.client_id, client_secret: `${client.client_secret}x` });
    expectOAuthError(inBody, 401, 'invalid_client');
    expect(inBody.headers['www-authenticate']).toBe('Basic realm="connect"');
    expect(inBody.body).not.toContain(client.client_secret!);
    const inBasic = await token(app, body, true, basic(client.client_id, 'cs_wrong'));
    expectOAuthError(inBasic, 401, 'invalid_client');
    expect(inBasic.headers['www-authenticate']).toBe('Basic realm="connect"');
    const unknown = await token(app, body, true, basic('cli_00000000000000000000', 'x'));
    expect(unknown.json()).toEqual(inBasic.json());
    // Still usable with the right secret: failures do not burn the code.
    expect((await token(app, body, true, basic(client.client_id, client.client_secret!))).statusCode).toBe(200);
  });

  it('C12 grant_type=password, client_credentials: unsupported_grant_type; none: invalid_request', async () => {
    const { client } = await consentSetup(app);
    for (const grant of ['password', 'client_credentials']) {
      expectOAuthError(
        await token(app, { grant_type: grant, client_id: client.client_id, client_secret: client.client_secret! }),
        400,
        'unsupported_grant_type',
      );
      expectOAuthError(await token(app, { grant_type: grant }, false), 400, 'unsupported_grant_type');
    }
    expectOAuthError(await token(app, { client_id: client.client_id, client_secret: client.client_secret! }), 400, 'invalid_request');
    expectOAuthError(await token(app, {}, false), 400, 'invalid_request');
  });

  it('C13 more scope asked at the token step than granted: invalid_scope on refresh; exactly the granted set on exchange', async () => {
    const { client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client, 'links:write');
    const res = await token(app, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      scope: ALL_SCOPES,
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expect(res.json().scope).toBe('links:write');
    const more = await token(app, {
      grant_type: 'refresh_token',
      refresh_token: res.json().refresh_token,
      scope: 'links:write analytics:read',
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expectOAuthError(more, 400, 'invalid_scope');
  });

  it('C14 every token-endpoint answer, to JSON and form requests alike: application/json, no-store, no-cache', async () => {
    const { client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client);
    const answers = [];
    for (const form of [true, false]) {
      answers.push(await token(app, { grant_type: 'password' }, form));
      answers.push(await token(app, {}, form));
      answers.push(await token(app, { grant_type: 'authorization_code', client_id: client.client_id, client_secret: 'nope' }, form));
      answers.push(await token(app, { grant_type: 'authorization_code', client_id: client.client_id, client_secret: client.client_secret! }, form));
      answers.push(
        await token(
          app,
          { grant_type: 'refresh_token', refresh_token: 'x'.repeat(600), client_id: client.client_id, client_secret: client.client_secret! },
          form,
        ),
      );
      answers.push(
        await token(
          app,
          { grant_type: 'authorization_code', code: 'ac_x', redirect_uri: REDIRECT, client_id: client.client_id, client_secret: client.client_secret! },
          form,
        ),
      );
    }
    answers.push(await exchange(app, client, code, verifier));
    for (const res of answers) {
      expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.pragma).toBe('no-cache');
      if (res.statusCode !== 200) expect(Object.keys(res.json()).sort()).toEqual(['error', 'error_description']);
    }
    expect(answers.map((r) => r.statusCode)).toEqual([400, 400, 401, 400, 400, 400, 400, 400, 401, 400, 400, 400, 200]);
  });

  it('C14 refusals before the handler (malformed JSON, a non-object body, a repeated form parameter, a body over the cap) still answer RFC 6749 errors', async () => {
    const sent = [
      ['/api/oauth/token', 'application/json', '{"grant_type":', 400],
      ['/api/oauth/token', 'application/json', '[1]', 400],
      ['/api/oauth/token', 'application/x-www-form-urlencoded', 'grant_type=a&grant_type=b', 400],
      ['/api/oauth/token', 'application/x-www-form-urlencoded', `code=${'x'.repeat(70 * 1024)}`, 413],
      ['/api/oauth/revoke', 'application/json', '{"token":', 400],
      ['/api/oauth/revoke', 'application/x-www-form-urlencoded', `token=${'x'.repeat(70 * 1024)}`, 413],
      ['/api/oauth/revoke', 'application/x-www-form-urlencoded', `token=${'x'.repeat(513)}`, 400],
      ['/api/oauth/token', 'application/x-www-form-urlencoded', `grant_type=${'x'.repeat(65)}`, 400],
    ] as const;
    for (const [url, type, payload, status] of sent) {
      const res = await app.inject({ method: 'POST', url, headers: { 'content-type': type }, payload });
      expect(res.statusCode, `${url} ${payload.slice(0, 30)}`).toBe(status);
      expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.pragma).toBe('no-cache');
      expect(res.json()).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
    }
  });

  it('C1 a parameter repeated in the authorize query: 400 HTML error page, no Location', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/connect/authorize?response_type=code&client_id=a&client_id=b&redirect_uri=https%3A%2F%2Fcrm.test%2Fcb',
    });
    expect(res.statusCode).toBe(400);
    expect(String(res.headers['content-type'])).toMatch(/^text\/html/);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['x-frame-options']).toBe('DENY');
  });

  it('C1 an authorize parameter over its length (the contract bounds all of them to fit 8 KiB): 400 page naming it, no Location', async () => {
    for (const [name, length] of [
      ['state', 1025],
      ['org_name', 101],
      ['client_id', 129],
    ] as const) {
      const res = await app.inject({
        method: 'GET',
        url: `/connect/authorize?response_type=code&client_id=cli_x&redirect_uri=https%3A%2F%2Fcrm.test%2Fcb&${name}=${'a'.repeat(length)}`,
      });
      expect(res.statusCode, name).toBe(400);
      expect(String(res.headers['content-type'])).toMatch(/^text\/html/);
      expect(res.headers.location).toBeUndefined();
      expect(res.body).toContain(`(${name}: `);
    }
  });

  it("C15 consent POST without its CSRF token, with another browser session's, or Origin: https://evil.test: 403 page, no code", async () => {
    const { client, browser } = await consentSetup(app);
    const other = await consentSetup(app);
    const params = base(client.client_id);
    const page = await browser.get(authorizeUrl(params));
    const form = { ...hiddenInputs(page.body), decision: 'approve' };
    const otherPage = await other.browser.get(authorizeUrl(params));
    const codes = await count('connect_codes');
    const attempts = [
      await browser.postForm('/connect/authorize/decision', { ...form, csrf_token: '' }),
      await browser.postForm('/connect/authorize/decision', { ...form, csrf_token: hiddenInputs(otherPage.body).csrf_token! }),
      await browser.postForm('/connect/authorize/decision', form, { 'sec-fetch-site': 'cross-site' }),
      await browser.request({
        method: 'POST',
        url: '/connect/authorize/decision',
        payload: new URLSearchParams(form).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.test' },
      }),
      // The token of another authorization request (scope changed on the form) does not verify either.
      await browser.postForm('/connect/authorize/decision', { ...form, scope: ALL_SCOPES }),
    ];
    for (const res of attempts) {
      expect(res.statusCode).toBe(403);
      expect(String(res.headers['content-type'])).toContain('text/html');
      expect(res.headers.location).toBeUndefined();
    }
    expect(await count('connect_codes')).toBe(codes);
    expect((await browser.postForm('/connect/authorize/decision', form)).statusCode).toBe(303);
  });

  it('C16 consent and authorize error pages: frame-ancestors none and X-Frame-Options DENY', async () => {
    const { client, browser } = await consentSetup(app);
    const pages = [
      await browser.get(authorizeUrl(base(client.client_id))),
      await browser.get(authorizeUrl(base('cli_00000000000000000000'))),
      await browser.postForm('/connect/authorize/decision', { decision: 'approve' }),
      await browser.postForm('/connect/authorize/decision', { ...base(client.client_id), decision: 'approve' }),
    ];
    expect(pages.map((p) => p.statusCode)).toEqual([200, 400, 400, 403]);
    for (const res of pages) {
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
    }
  });

  it("C17 revoke another client's token: 200, still works; without client auth: 401 invalid_client; unknown: 200, no change", async () => {
    const { owner, client, browser } = await consentSetup(app);
    const other = await createClient(app, owner);
    const { code, verifier } = await codeFor(browser, client);
    const tokens = (await exchange(app, client, code, verifier)).json();
    const revoke = (body: Record<string, string>, headers: Record<string, string> = {}) =>
      app.inject({
        method: 'POST',
        url: '/api/oauth/revoke',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: new URLSearchParams(body).toString(),
      });
    const foreign = await revoke({ token: tokens.access_token, client_id: other.client_id, client_secret: other.client_secret! });
    expect(foreign.statusCode).toBe(200);
    expect(foreign.headers['cache-control']).toBe('no-store');
    expect((await probe(bearer(tokens.access_token))).statusCode).toBe(200);
    const anonymous = await revoke({ token: tokens.access_token });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().error).toBe('invalid_client');
    expect((await probe(bearer(tokens.access_token))).statusCode).toBe(200);
    const before = await app.platform.store.db.selectFrom('connect_tokens').select(['id', 'revoked_at']).orderBy('id').execute();
    const unknown = await revoke({ token: 'cat_0000000000000000000000000000000000000000', client_id: client.client_id, client_secret: client.client_secret! });
    expect(unknown.statusCode).toBe(200);
    expect(await app.platform.store.db.selectFrom('connect_tokens').select(['id', 'revoked_at']).orderBy('id').execute()).toEqual(before);
  });

  it('A6 bearer revoked through RFC 7009: 401 invalid_token on the next call; refresh token revocation takes its family', async () => {
    const { client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client);
    const tokens = (await exchange(app, client, code, verifier)).json();
    const revoke = (value: string) =>
      app.inject({ method: 'POST', url: '/api/oauth/revoke', headers: basic(client.client_id, client.client_secret!), payload: { token: value } });
    expect((await revoke(tokens.access_token)).statusCode).toBe(200);
    const res = await probe(bearer(tokens.access_token));
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="connect", error="invalid_token"');
    const refreshed = (
      await token(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id, client_secret: client.client_secret! })
    ).json();
    expect((await probe(bearer(refreshed.access_token))).statusCode).toBe(200);
    expect((await revoke(refreshed.refresh_token)).statusCode).toBe(200);
    expect((await probe(bearer(refreshed.access_token))).statusCode).toBe(401);
  });

  it('B4 an organisation id in a Connect body is refused: 400 validation, nothing created', async () => {
    const a = await signUp(app);
    const b = await signUp(app);
    const clients = await count('connect_clients');
    for (const key of ['org_id', 'organization_id', 'tenant_id']) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/connect/clients',
        headers: bearer(a.token),
        payload: { name: 'X', redirect_uris: [REDIRECT], [key]: b.workspace.id },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().type).toBe('https://chatapp.example/problems/validation');
      expect(res.json().errors).toEqual([{ pointer: `/body/${key}`, detail: 'is not a known field' }]);
    }
    expect(await count('connect_clients')).toBe(clients);
    // A Connect bearer names its workspace itself: the token answers for A whatever is sent.
    const tokenA = await connectBearer(app, a.workspace.id);
    expect((await probe(bearer(tokenA))).json().auth.workspaceId).toBe(a.workspace.id);
  });
});

describe('browser session', () => {
  it('a consent form cannot be replayed after signing out (the token is bound to the session)', async () => {
    const { client, browser } = await consentSetup(app);
    const page = await browser.get(authorizeUrl(base(client.client_id)));
    const form = { ...hiddenInputs(page.body), decision: 'approve' };
    const fresh = new Browser(app);
    expect((await fresh.postForm('/connect/authorize/decision', form)).statusCode).toBe(403);
  });
});
