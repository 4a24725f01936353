// Catalogue group C (OAuth consent and token, Connect) against the shared fixture: workspace A's
// owner drives the consent page in a browser (cookie jar), its client exchanges codes, and each
// refusal is checked with `expectNoChange`. The flow helpers come from the unit tests
// (test/unit/connect/oauth/support.ts); the happy path is proven with a real client, oauth4webapi.
// Bearers are checked on a real Connect operation (GET /api/connect/documents).
// Added cases: bad-inputs C18 (a client registered by workspace A, consented to by B's owner: the grant is B's);
// bad-inputs C19-C22, the refresh grace period (REFRESH_TOKEN_REUSE_GRACE_MS, default 10 s): bad-inputs C22's five
// concurrent refreshes are a real race under `npm run test:pg`.
import * as oauth from 'oauth4webapi';
import { describe, expect, it } from 'vitest';
import { buildShared } from '../helper.js';
import { issueOwnerToken } from '#server/auth/owner-jwt.js';
import { ALL_SCOPES, Browser, REDIRECT, authorizeUrl, basic, consent, hiddenInputs, pkce, token, type Client } from '../unit/connect/oauth/support.js';
import { expectNoChange, expectNoLeak, expectProblem, workspace, type Workspace } from './support.js';

const ISSUER = 'https://connect.test';
const clock = { now: Date.now() };
const app = await buildShared({ env: { PUBLIC_URL: ISSUER, RATE_LIMIT_IP_PER_MINUTE: '100000' }, overrides: { now: () => new Date(clock.now) } });
const UNKNOWN_CLIENT = 'cli_00000000000000000000';

/** Workspace A with a confidential client and its owner signed in (session cookie minted, not typed in). */
async function setup(clientBody: Record<string, unknown> = {}) {
  const a = await workspace(app);
  const client = await newClient(a, clientBody);
  const browser = await browserOf(a);
  return { a, client, browser };
}

async function newClient(w: Workspace, body: Record<string, unknown> = {}): Promise<Client> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/connect/clients',
    headers: { authorization: w.owner },
    payload: { name: 'Acme CRM', redirect_uris: [REDIRECT], ...body },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

async function browserOf(w: Workspace): Promise<Browser> {
  const browser = new Browser(app);
  const { token: session } = await issueOwnerToken(app.platform, { workspaceId: w.workspaceId, ownerId: w.ownerId }, 'owner-browser');
  browser.cookies.set('owner_session', app.signCookie(session));
  return browser;
}

const params = (clientId: string | undefined, extra: Record<string, string | undefined> = {}) => ({
  client_id: clientId,
  redirect_uri: REDIRECT,
  response_type: 'code',
  scope: 'documents:write',
  state: 'xyz',
  code_challenge: pkce().challenge,
  code_challenge_method: 'S256',
  ...extra,
});

async function code(browser: Browser, client: Client, scope = ALL_SCOPES) {
  const { verifier, challenge } = pkce();
  const url = await consent(browser, params(client.client_id, { scope, code_challenge: challenge }));
  return { code: url.searchParams.get('code')!, verifier };
}

const exchange = (client: Client, c: string, verifier: string | undefined, extra: Record<string, string> = {}) =>
  token(app, {
    grant_type: 'authorization_code',
    code: c,
    redirect_uri: REDIRECT,
    code_verifier: verifier,
    client_id: client.client_id,
    client_secret: client.client_secret ?? undefined,
    ...extra,
  });

const refreshWith = (client: Client, refreshToken: string, extra: Record<string, string> = {}) =>
  token(app, {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: client.client_id,
    client_secret: client.client_secret ?? undefined,
    ...extra,
  });

/** Every token of the family that `refreshToken` belongs to, with its state. */
async function familyOf(refreshToken: string) {
  const { db } = app.platform.store;
  const row = await db
    .selectFrom('connect_tokens')
    .select('family_id')
    .where('digest', '=', app.platform.secrets.digest(refreshToken))
    .executeTakeFirstOrThrow();
  return db.selectFrom('connect_tokens').select(['id', 'kind', 'revoked_at', 'rotated_at', 'parent_id']).where('family_id', '=', row.family_id).execute();
}

/** Runs `act` with the app's clock moved forward by `ms`, then moves it back. */
async function later<T>(ms: number, act: () => Promise<T>): Promise<T> {
  clock.now += ms;
  try {
    return await act();
  } finally {
    clock.now -= ms;
  }
}

const documents = (accessToken: string) => app.inject({ url: '/api/connect/documents', headers: { authorization: `Bearer ${accessToken}` } });

function expectErrorPage(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status = 400) {
  expect(res.statusCode, res.body.slice(0, 200)).toBe(status);
  expect(res.headers.location).toBeUndefined();
  expect(String(res.headers['content-type'])).toMatch(/^text\/html/);
  expect(res.body).not.toMatch(/ac_[A-Za-z0-9]/);
  expectNoLeak(res.body);
}

/** The error redirect of authorize: to the registered URI, with `error`, `state`, `iss` and no code. */
function expectErrorRedirect(res: { statusCode: number; headers: Record<string, unknown> }, error: string, state = 'xyz') {
  expect([302, 303]).toContain(res.statusCode);
  const url = new URL(String(res.headers.location));
  expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
  expect(url.searchParams.get('error')).toBe(error);
  expect(url.searchParams.get('state')).toBe(state);
  expect(url.searchParams.get('iss')).toBe(ISSUER);
  expect(url.searchParams.has('code')).toBe(false);
}

function expectOAuthError(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number, error: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers.pragma).toBe('no-cache');
  expect(JSON.parse(res.body)).toEqual({ error, error_description: expect.any(String) });
  expectNoLeak(res.body);
}

describe('C. OAuth consent and token', () => {
  it('C happy path with a real client (oauth4webapi): discovery, PKCE S256, iss check, refresh, revoke', async () => {
    const { client: registered, browser } = await setup();
    // oauth4webapi talks to the app through inject: no port, the issuer is PUBLIC_URL.
    const viaInject = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const res = await app.inject({
        method: (init?.method ?? 'GET') as 'GET',
        url: url.pathname + url.search,
        headers: Object.fromEntries(new Headers(init?.headers)),
        payload: init?.body ? String(init.body) : undefined,
      });
      return new Response(res.statusCode === 204 ? null : new Uint8Array(res.rawPayload), {
        status: res.statusCode,
        headers: res.headers as Record<string, string>,
      });
    };
    const opts = { [oauth.customFetch]: viaInject };
    const issuer = new URL(ISSUER);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...opts }));
    const client: oauth.Client = { client_id: registered.client_id };
    const auth = oauth.ClientSecretBasic(registered.client_secret!);
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const redirect = await consent(browser, {
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: ALL_SCOPES,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const callback = oauth.validateAuthResponse(as, client, redirect, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, auth, callback, REDIRECT, verifier, opts),
    );
    expect(tokens.scope).toBe(ALL_SCOPES);
    expect((await documents(tokens.access_token)).statusCode).toBe(200);
    const refreshed = await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, opts));
    expect((await documents(refreshed.access_token)).statusCode).toBe(200);
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, auth, refreshed.access_token, opts));
    expect((await documents(refreshed.access_token)).statusCode).toBe(401);
  });

  it('C1 unknown client_id, unregistered redirect_uri, or none: 400 HTML error page, no Location, no code', async () => {
    const { client, browser } = await setup();
    const cases = [
      params(UNKNOWN_CLIENT),
      params(client.client_id, { redirect_uri: 'https://evil.test/cb' }),
      params(client.client_id, { redirect_uri: undefined }),
      params(undefined),
      {},
    ];
    await expectNoChange(app, async () => {
      for (const p of cases) expectErrorPage(await browser.get(authorizeUrl(p)));
      // A repeated parameter is ambiguous: refused the same way.
      expectErrorPage(
        await browser.get(
          `/connect/authorize?response_type=code&client_id=${client.client_id}&client_id=${UNKNOWN_CLIENT}&redirect_uri=${encodeURIComponent(REDIRECT)}`,
        ),
      );
    });
  });

  it('C2 look-alikes of https://crm.test/cb: refused as C1 (exact string match, RFC 9700)', async () => {
    const { client, browser } = await setup();
    const lookAlikes = ['/cb/', '/cb?x=1', '/cb#f', '/cb/../x'].map((p) => `https://crm.test${p}`);
    lookAlikes.push('https://crm.test.evil.test/cb', 'https://crm.test@evil.test/cb', 'https://crm.test:8443/cb', 'http://crm.test/cb', 'HTTPS://CRM.TEST/cb');
    await expectNoChange(app, async () => {
      for (const uri of lookAlikes) expectErrorPage(await browser.get(authorizeUrl(params(client.client_id, { redirect_uri: uri }))));
    });
  });

  it('C3 state "><script>alert(1)</script>&x=é: byte-exact in the redirect (encoded once), escaped in the page', async () => {
    const { client, browser } = await setup();
    const state = '"><script>alert(1)</script>&x=é';
    const page = await browser.get(authorizeUrl(params(client.client_id, { state })));
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('<script>alert');
    expect(hiddenInputs(page.body).state).toBe(state);
    const url = await consent(browser, params(client.client_id, { state }));
    expect(url.searchParams.get('state')).toBe(state);
    expect(url.search).not.toMatch(/[<>"]|%25/);
    const refused = await browser.get(authorizeUrl(params(client.client_id, { state, response_type: 'token' })));
    expect(new URL(String(refused.headers.location)).searchParams.get('state')).toBe(state);
  });

  it('C4 response_type=token: unsupported_response_type; none: invalid_request; with state and iss', async () => {
    const { client, browser } = await setup();
    await expectNoChange(app, async () => {
      expectErrorRedirect(await browser.get(authorizeUrl(params(client.client_id, { response_type: 'token' }))), 'unsupported_response_type');
      expectErrorRedirect(await browser.get(authorizeUrl(params(client.client_id, { response_type: undefined }))), 'invalid_request');
    });
  });

  it('C5 unknown or empty scope: invalid_scope; owner denies: access_denied; state, iss, no code', async () => {
    const { client, browser } = await setup();
    await expectNoChange(app, async () => {
      for (const scope of ['contacts:read', '', 'documents:write admin', undefined]) {
        expectErrorRedirect(await browser.get(authorizeUrl(params(client.client_id, { scope }))), 'invalid_scope');
      }
      const page = await browser.get(authorizeUrl(params(client.client_id)));
      expectErrorRedirect(await browser.postForm('/connect/authorize/decision', { ...hiddenInputs(page.body), decision: 'deny' }), 'access_denied');
    });
  });

  it('C6 code_challenge_method=plain; public client without code_challenge: invalid_request, no code', async () => {
    const { a, client, browser } = await setup();
    const pub = await newClient(a, { client_type: 'public' });
    await expectNoChange(app, async () => {
      expectErrorRedirect(await browser.get(authorizeUrl(params(client.client_id, { code_challenge_method: 'plain' }))), 'invalid_request');
      expectErrorRedirect(
        await browser.get(authorizeUrl(params(pub.client_id, { code_challenge: undefined, code_challenge_method: undefined }))),
        'invalid_request',
      );
    });
  });

  it('C7 S256 code exchanged without code_verifier or with a wrong one: invalid_grant, code not used up', async () => {
    const { client, browser } = await setup();
    const { code: c, verifier } = await code(browser, client);
    await expectNoChange(app, async () => {
      expectOAuthError(await exchange(client, c, undefined), 400, 'invalid_grant');
      expectOAuthError(await exchange(client, c, pkce().verifier), 400, 'invalid_grant');
    });
    expect((await exchange(client, c, verifier)).statusCode).toBe(200);
  });

  it('C8 code reused: invalid_grant, first tokens revoked (access and refresh)', async () => {
    const { client, browser } = await setup();
    const { code: c, verifier } = await code(browser, client);
    const first = (await exchange(client, c, verifier)).json();
    expect((await documents(first.access_token)).statusCode).toBe(200);
    const tokensBefore = await app.platform.store.db.selectFrom('connect_tokens').select('id').execute();
    expectOAuthError(await exchange(client, c, verifier), 400, 'invalid_grant');
    // No new token was issued by the replay.
    expect(await app.platform.store.db.selectFrom('connect_tokens').select('id').execute()).toHaveLength(tokensBefore.length);
    const after = await documents(first.access_token);
    expect(after.statusCode).toBe(401);
    expect(after.headers['www-authenticate']).toContain('error="invalid_token"');
    expectOAuthError(
      await token(app, { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: client.client_id, client_secret: client.client_secret! }),
      400,
      'invalid_grant',
    );
  });

  it('C9 a code older than 10 minutes: invalid_grant', async () => {
    const { client, browser } = await setup();
    const { code: c, verifier } = await code(browser, client);
    clock.now += 10 * 60_000 + 1000;
    try {
      await expectNoChange(app, async () => expectOAuthError(await exchange(client, c, verifier), 400, 'invalid_grant'));
    } finally {
      clock.now -= 10 * 60_000 + 1000;
    }
  });

  it("C10 client Y exchanging X's code with Y's secret; redirect_uri differing from authorize: invalid_grant", async () => {
    const { a, client, browser } = await setup({ redirect_uris: [REDIRECT, 'https://crm.test/other'] });
    const y = await newClient(a);
    const { code: c, verifier } = await code(browser, client);
    await expectNoChange(app, async () => {
      expectOAuthError(await exchange(y, c, verifier), 400, 'invalid_grant');
      expectOAuthError(await exchange(client, c, verifier, { redirect_uri: 'https://crm.test/other' }), 400, 'invalid_grant');
    });
    // B's client cannot redeem A's code either.
    const b = await workspace(app);
    expectOAuthError(await exchange(await newClient(b), c, verifier), 400, 'invalid_grant');
    expect((await exchange(client, c, verifier)).statusCode).toBe(200);
  });

  it('C11 wrong client_secret in the body; in HTTP Basic: 401 invalid_client, WWW-Authenticate: Basic, secret not echoed', async () => {
    const { client, browser } = await setup();
    const { code: c, verifier } = await code(browser, client);
    const body = { grant_type: 'authorization_code', code: c, redirect_uri: REDIRECT, code_verifier: verifier };
    const wrong = `${client.client_secret}x`;
    await expectNoChange(app, async () => {
      const inBody = await token(app, { ...body, client_id: client.client_id, client_secret: wrong });
      expectOAuthError(inBody, 401, 'invalid_client');
      expect(inBody.body).not.toContain(wrong);
      const inBasic = await token(app, body, true, basic(client.client_id, wrong));
      expectOAuthError(inBasic, 401, 'invalid_client');
      expect(String(inBasic.headers['www-authenticate'])).toMatch(/^Basic /);
      // An unknown client gets the same answer (no enumeration).
      expect((await token(app, body, true, basic(UNKNOWN_CLIENT, wrong))).json()).toEqual(inBasic.json());
    });
  });

  it('C12 grant_type=password, client_credentials: unsupported_grant_type; none: invalid_request', async () => {
    const { client } = await setup();
    const auth = { client_id: client.client_id, client_secret: client.client_secret! };
    await expectNoChange(app, async () => {
      for (const grant of ['password', 'client_credentials']) expectOAuthError(await token(app, { grant_type: grant, ...auth }), 400, 'unsupported_grant_type');
      expectOAuthError(await token(app, auth), 400, 'invalid_request');
    });
  });

  it('C13 more scope at the token step than granted: exactly the granted set on exchange, invalid_scope on refresh', async () => {
    const { client, browser } = await setup();
    const { code: c, verifier } = await code(browser, client, 'links:write');
    const res = await exchange(client, c, verifier, { scope: ALL_SCOPES });
    expect(res.json().scope).toBe('links:write');
    const outside = await app.inject({ url: '/api/connect/webhook-endpoints', headers: { authorization: `Bearer ${res.json().access_token}` } });
    expectProblem(outside, 403, 'forbidden');
    await expectNoChange(app, async () => {
      expectOAuthError(
        await token(app, {
          grant_type: 'refresh_token',
          refresh_token: res.json().refresh_token,
          scope: 'links:write analytics:read',
          client_id: client.client_id,
          client_secret: client.client_secret!,
        }),
        400,
        'invalid_scope',
      );
    });
  });

  it('C14 every token-endpoint answer but 429/5xx, JSON and form alike: application/json, RFC 6749 §5.2, no-store, no-cache', async () => {
    const { client } = await setup();
    const auth = { client_id: client.client_id, client_secret: client.client_secret! };
    const answers = [];
    for (const form of [true, false]) {
      answers.push(await token(app, { grant_type: 'password' }, form));
      answers.push(await token(app, {}, form));
      answers.push(await token(app, { grant_type: 'authorization_code', client_id: client.client_id, client_secret: 'nope' }, form));
      answers.push(await token(app, { grant_type: 'authorization_code', code: 'ac_x', redirect_uri: REDIRECT, ...auth }, form));
      answers.push(await token(app, { grant_type: 'refresh_token', refresh_token: 'x'.repeat(600), ...auth }, form));
    }
    for (const [type, payload] of [
      ['application/json', '{"grant_type":'],
      ['application/json', '[1]'],
      ['application/x-www-form-urlencoded', 'grant_type=a&grant_type=b'],
      ['text/plain', 'grant_type=password'],
    ]) {
      answers.push(await app.inject({ method: 'POST', url: '/api/oauth/token', headers: { 'content-type': type! }, payload }));
    }
    for (const res of answers) {
      expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
      expect(res.statusCode).toBeLessThan(429);
      expect(String(res.headers['content-type']), `${res.statusCode} ${res.body}`).toMatch(/^application\/json/);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.pragma).toBe('no-cache');
      expect(Object.keys(res.json()).sort()).toEqual(['error', 'error_description']);
    }
  });

  it("C15 consent POST without its CSRF token, with another browser session's, or Origin: https://evil.test: 403 page, no code", async () => {
    const { client, browser } = await setup();
    const other = await browserOf(await workspace(app));
    const p = params(client.client_id);
    const form = { ...hiddenInputs((await browser.get(authorizeUrl(p))).body), decision: 'approve' };
    const foreign = hiddenInputs((await other.get(authorizeUrl(p))).body);
    const csrfField = Object.keys(form).find((k) => /csrf/i.test(k))!;
    await expectNoChange(app, async () => {
      const attempts = [
        await browser.postForm('/connect/authorize/decision', { ...form, [csrfField]: '' }),
        await browser.postForm('/connect/authorize/decision', { ...form, [csrfField]: foreign[csrfField]! }),
        await browser.request({
          method: 'POST',
          url: '/connect/authorize/decision',
          payload: new URLSearchParams(form).toString(),
          headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.test' },
        }),
        await browser.postForm('/connect/authorize/decision', form, { 'sec-fetch-site': 'cross-site' }),
      ];
      for (const res of attempts) expectErrorPage(res, 403);
    });
    expect((await browser.postForm('/connect/authorize/decision', form)).statusCode).toBe(303);
  });

  it('C16 consent and authorize error pages: frame-ancestors none and X-Frame-Options: DENY', async () => {
    const { client, browser } = await setup();
    const pages = [
      await browser.get(authorizeUrl(params(client.client_id))),
      await browser.get(authorizeUrl(params(UNKNOWN_CLIENT))),
      await browser.postForm('/connect/authorize/decision', { decision: 'approve' }),
    ];
    expect(pages.map((p) => p.statusCode)).toEqual([200, 400, 400]);
    for (const res of pages) {
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(res.headers['x-frame-options']).toBe('DENY');
    }
  });

  it("C17 revoke another client's token: 200, still works; without client auth: 401 invalid_client; unknown token: 200, no change", async () => {
    const { a, client, browser } = await setup();
    const other = await newClient(a);
    const { code: c, verifier } = await code(browser, client);
    const tokens = (await exchange(client, c, verifier)).json();
    const revoke = (body: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: '/api/oauth/revoke',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(body).toString(),
      });
    const revokedAt = () => app.platform.store.db.selectFrom('connect_tokens').select(['id', 'revoked_at']).orderBy('id').execute();
    const before = await revokedAt();
    await expectNoChange(app, async () => {
      expect((await revoke({ token: tokens.access_token, client_id: other.client_id, client_secret: other.client_secret! })).statusCode).toBe(200);
      expectOAuthError(await revoke({ token: tokens.access_token }), 401, 'invalid_client');
      expect(
        (await revoke({ token: 'cat_0000000000000000000000000000000000000000', client_id: client.client_id, client_secret: client.client_secret! })).statusCode,
      ).toBe(200);
    });
    expect(await revokedAt()).toEqual(before);
    expect((await documents(tokens.access_token)).statusCode).toBe(200);
  });

  it("C18 B's owner consenting to A's client: the grant and tokens are B's; none in A", async () => {
    const { a, client } = await setup();
    const b = await workspace(app);
    const { code: c, verifier } = await code(await browserOf(b), client);
    const tokens = (await exchange(client, c, verifier)).json();
    const grants = await app.platform.store.db.selectFrom('connect_grants').select('workspace_id').where('client_id', '=', client.client_id).execute();
    expect(grants).toEqual([{ workspace_id: b.workspaceId }]);
    const list = await documents(tokens.access_token);
    expect(list.statusCode).toBe(200);
    expect(grants.some((g) => g.workspace_id === a.workspaceId)).toBe(false);
  });

  // The refresh grace period (server/apis/connect/oauth/token.ts, docs/connect-oauth.md): the
  // answer is a new pair in the same family, beside the one the first rotation issued.
  const GRACE = app.config.refreshTokenReuseGraceMs;

  it('C19 a rotated refresh token sent again by its client within the grace period: a new pair, both pairs work; a reuse after it revokes every pair', async () => {
    expect(GRACE).toBe(10_000); // the default
    const { client, browser } = await setup();
    const { code: c, verifier } = await code(browser, client);
    const first = (await exchange(client, c, verifier)).json();
    const rotated = await refreshWith(client, first.refresh_token);
    expect(rotated.statusCode, rotated.body).toBe(200);
    const again = await later(GRACE - 1_000, () => refreshWith(client, first.refresh_token));
    expect(again.statusCode, again.body).toBe(200);
    const pairs = [rotated.json(), again.json()];
    expect(pairs[1].access_token).not.toBe(pairs[0].access_token);
    expect(pairs[1].refresh_token).not.toBe(pairs[0].refresh_token);
    expect(pairs[1]).toMatchObject({ token_type: 'Bearer', scope: ALL_SCOPES, org_id: pairs[0].org_id });
    for (const pair of pairs) expect((await documents(pair.access_token)).statusCode).toBe(200);
    const family = await familyOf(first.refresh_token);
    expect(family.filter((t) => t.revoked_at)).toEqual([]);
    expect(family.filter((t) => t.rotated_at).map((t) => t.id)).toHaveLength(1); // the first token, retired once
    // After the window the same token is a reuse: the family goes, both pairs included (no orphan).
    expectOAuthError(await later(GRACE, () => refreshWith(client, first.refresh_token)), 400, 'invalid_grant');
    for (const pair of pairs) {
      expect((await documents(pair.access_token)).statusCode).toBe(401);
      expectOAuthError(await refreshWith(client, pair.refresh_token), 400, 'invalid_grant');
    }
    expect((await familyOf(first.refresh_token)).filter((t) => !t.revoked_at)).toEqual([]);
  });

  it('C20 reuse after the grace period, or of a token whose successor was already used: invalid_grant, family revoked', async () => {
    const { client, browser } = await setup();
    for (const moveOn of [false, true]) {
      const { code: c, verifier } = await code(browser, client);
      const first = (await exchange(client, c, verifier)).json();
      const second = (await refreshWith(client, first.refresh_token)).json();
      let latest = second;
      let reuse;
      if (moveOn) {
        // Still inside the window, but the chain moved on: the older token coming back is reuse.
        latest = (await refreshWith(client, second.refresh_token)).json();
        reuse = await later(1_000, () => refreshWith(client, first.refresh_token));
      } else {
        reuse = await later(GRACE, () => refreshWith(client, first.refresh_token));
      }
      expectOAuthError(reuse, 400, 'invalid_grant');
      expect((await documents(latest.access_token)).statusCode, `moveOn=${moveOn}`).toBe(401);
      expectOAuthError(await refreshWith(client, latest.refresh_token), 400, 'invalid_grant');
      expect((await familyOf(first.refresh_token)).filter((t) => !t.revoked_at)).toEqual([]);
    }
  });

  it('C21 another client sending a rotated refresh token within the grace period: invalid_grant, family revoked; a live one: invalid_grant, no change', async () => {
    const { a, client, browser } = await setup();
    const other = await newClient(a);
    const { code: c, verifier } = await code(browser, client);
    const first = (await exchange(client, c, verifier)).json();
    const second = (await refreshWith(client, first.refresh_token)).json();
    await expectNoChange(app, async () => expectOAuthError(await refreshWith(other, second.refresh_token), 400, 'invalid_grant'));
    expect((await documents(second.access_token)).statusCode).toBe(200);
    expectOAuthError(await later(1_000, () => refreshWith(other, first.refresh_token)), 400, 'invalid_grant');
    expect((await documents(second.access_token)).statusCode).toBe(401);
    expectOAuthError(await refreshWith(client, second.refresh_token), 400, 'invalid_grant');
  });

  it('C22 five concurrent refreshes of one token (a real race on PostgreSQL): all succeed, every access token works, the family stays alive', async () => {
    const { client, browser } = await setup();
    const { code: c, verifier } = await code(browser, client);
    const first = (await exchange(client, c, verifier)).json();
    const answers = await Promise.all(Array.from({ length: 5 }, () => refreshWith(client, first.refresh_token)));
    for (const res of answers) expect(res.statusCode, res.body).toBe(200);
    const pairs = answers.map((res) => res.json());
    expect(new Set(pairs.map((p) => p.access_token)).size).toBe(5);
    expect(new Set(pairs.map((p) => p.refresh_token)).size).toBe(5);
    for (const pair of pairs) expect((await documents(pair.access_token)).statusCode).toBe(200);
    const family = await familyOf(first.refresh_token);
    expect(family.filter((t) => t.revoked_at)).toEqual([]);
    expect(family.filter((t) => t.rotated_at)).toHaveLength(1);
    // Each pair refreshes on: the family is alive, not merely unrevoked.
    for (const pair of pairs.slice(0, 2)) expect((await refreshWith(client, pair.refresh_token)).statusCode).toBe(200);
  });
});
