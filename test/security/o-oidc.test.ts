// Catalogue group O (OpenID Connect of Login apps, and the Connect options for resource servers
// and platforms): each refusal answers as RFC 6749, OIDC Core, RFC 7662 or RFC 7591 say, and
// changes nothing (`expectNoChange`), except where the RFC asks for a change (a reused code
// revokes what the first exchange issued). The front channel is driven by HTTP alone
// (test/support/oidc.ts); the browser path is test/e2e/login-oidc.e2e.test.ts.
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { buildShared } from '../helper.js';
import { REDIRECT_URI, authorize, basic, cookieOf, oidcApp, pageCall, pageData, pkce, signIn, tokenRequest, type OidcFixture } from '../support/oidc.js';
import { bearer } from '../unit/account/support.js';
import { codeFor, consentSetup, exchange } from '../unit/connect/oauth/support.js';
import { expectNoChange, expectProblem } from './support.js';

const app = await buildShared({ env: { RATE_LIMIT_IP_PER_MINUTE: '100000' } });

const exchangeFor = (f: OidcFixture, code: string, extra: Record<string, string> = {}) =>
  tokenRequest(app, f, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, ...extra }, basic(f.appId, f.apiKey));

function expectErrorPage(res: { statusCode: number; headers: Record<string, unknown>; body: string }) {
  expect(res.statusCode).toBe(400);
  expect(res.headers.location).toBeUndefined();
  expect(String(res.headers['content-type'])).toContain('text/html');
  expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  expect(res.body).not.toContain('code=');
}

function expectOAuthError(res: { statusCode: number; headers: Record<string, unknown>; json: () => any }, status: number, error: string) {
  expect(res.statusCode).toBe(status);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.json().error).toBe(error);
}

describe('O OpenID Connect and OAuth options', () => {
  it('O1 redirect_uri not registered exactly (prefix, suffix, case, query): the error page, never a redirect, nothing stored', async () => {
    const f = await oidcApp(app);
    for (const uri of [`${REDIRECT_URI}/x`, REDIRECT_URI.slice(0, -1), REDIRECT_URI.toUpperCase(), `${REDIRECT_URI}?a=1`, 'https://evil.test/cb', undefined]) {
      expectErrorPage(await expectNoChange(app, () => authorize(app, f, { redirect_uri: uri, state: 's' })));
    }
    // client_id missing or another app's: the same page.
    const other = await oidcApp(app);
    expectErrorPage(await expectNoChange(app, () => authorize(app, f, { client_id: other.appId })));
    expectErrorPage(await expectNoChange(app, () => authorize(app, f, { client_id: undefined })));
  });

  it('O2 redirect_uri (or nonce, state) repeated: the error page naming it, nothing stored', async () => {
    const f = await oidcApp(app);
    for (const name of ['redirect_uri', 'nonce', 'state']) {
      const res = await expectNoChange(app, () => authorize(app, f, { [name]: [REDIRECT_URI, REDIRECT_URI] }));
      expectErrorPage(res);
      expect(res.body).toContain(name);
    }
  });

  it('O3 nonce: never invented, never another request’s; over-long refused', async () => {
    const f = await oidcApp(app);
    const keys = createLocalJWKSet((await app.inject({ url: '/v1/auth/.well-known/jwks.json' })).json());
    // Without a nonce the ID token carries none: a client that sent one and finds none refuses it.
    const plain = await signIn(app, f, {});
    const noNonce = decodeJwt((await exchangeFor(f, plain.code)).json().id_token);
    expect(noNonce.nonce).toBeUndefined();
    // Two requests of one browser with different nonces: each ID token carries its own, byte for byte.
    const one = await signIn(app, f, { nonce: 'n-1 ü' });
    const two = await signIn(app, f, { nonce: 'n-2' }, '+15550109999');
    const t2 = await jwtVerify((await exchangeFor(f, two.code)).json().id_token, keys, { issuer: f.issuer, audience: f.appId });
    const t1 = await jwtVerify((await exchangeFor(f, one.code)).json().id_token, keys, { issuer: f.issuer, audience: f.appId });
    expect([t1.payload.nonce, t2.payload.nonce]).toEqual(['n-1 ü', 'n-2']);
    expect(t1.payload.nonce).not.toBe('n-2'); // a client comparing with its own nonce refuses the other's token
    expectErrorPage(await expectNoChange(app, () => authorize(app, f, { nonce: 'n'.repeat(257) })));
  });

  it('O4 a code reused: invalid_grant, and the access token of the first exchange is revoked', async () => {
    const f = await oidcApp(app);
    const { code } = await signIn(app, f, {});
    const first = await exchangeFor(f, code);
    expect(first.statusCode).toBe(200);
    const access = first.json().access_token;
    expectOAuthError(await exchangeFor(f, code), 400, 'invalid_grant');
    const info = await app.inject({ url: `/login/oidc/${f.appId}/userinfo`, headers: { authorization: `Bearer ${access}` } });
    expectProblem(info, 401, 'unauthorized');
    expect(info.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('O5 PKCE verifier wrong, missing or sent for a code without a challenge: invalid_grant, the code left to its client', async () => {
    const f = await oidcApp(app);
    const { verifier, challenge } = pkce();
    const { code } = await signIn(app, f, { code_challenge: challenge, code_challenge_method: 'S256' });
    for (const extra of [{ code_verifier: pkce().verifier }, {}, { code_verifier: 'short' }] as Record<string, string>[]) {
      expectOAuthError(await expectNoChange(app, () => exchangeFor(f, code, extra)), 400, 'invalid_grant');
    }
    expectOAuthError(
      await expectNoChange(app, () => exchangeFor(f, code, { code_verifier: verifier, redirect_uri: `${REDIRECT_URI}/x` })),
      400,
      'invalid_grant',
    );
    expect((await exchangeFor(f, code, { code_verifier: verifier })).statusCode).toBe(200);
    const plain = await signIn(app, f, {});
    expectOAuthError(await expectNoChange(app, () => exchangeFor(f, plain.code, { code_verifier: verifier })), 400, 'invalid_grant');
    // `plain` is refused at authorize.
    const res = await authorize(app, f, { code_challenge: challenge, code_challenge_method: 'plain', state: 's' });
    expect(new URL(String(res.headers.location)).searchParams.get('error')).toBe('invalid_request');
  });

  it('O6 an ID token or access token replayed to another client: refused everywhere', async () => {
    const a = await oidcApp(app);
    const b = await oidcApp(app);
    const { code } = await signIn(app, a, { nonce: 'n' });
    const tokens = (await exchangeFor(a, code)).json();
    const keys = createLocalJWKSet((await app.inject({ url: '/v1/auth/.well-known/jwks.json' })).json());
    // B's client validates iss and aud: A's ID token names A's issuer and A only.
    await expect(jwtVerify(tokens.id_token, keys, { issuer: b.issuer, audience: b.appId })).rejects.toThrow();
    await expect(jwtVerify(tokens.id_token, keys, { issuer: a.issuer, audience: b.appId })).rejects.toThrow();
    // Presented to verify-token as a verification token, by either app: refused and nothing consumed.
    for (const f of [a, b]) {
      const res = await expectNoChange(app, () =>
        app.inject({
          method: 'POST',
          url: '/v1/auth/verify-token',
          headers: { 'x-api-key': f.apiKey, 'content-type': 'application/json' },
          payload: JSON.stringify({ token: tokens.id_token }),
        }),
      );
      expect(res.json()).toMatchObject({ valid: false });
    }
    // A's access token at B's userinfo: 401; A's code at B's token endpoint: refused, A's client unaffected.
    expectProblem(
      await app.inject({ url: `/login/oidc/${b.appId}/userinfo`, headers: { authorization: `Bearer ${tokens.access_token}` } }),
      401,
      'unauthorized',
    );
    const second = await signIn(app, a, {});
    expectOAuthError(await expectNoChange(app, () => exchangeFor(b, second.code)), 400, 'invalid_grant');
    expectOAuthError(
      await expectNoChange(app, () =>
        tokenRequest(app, b, { grant_type: 'authorization_code', code: second.code, redirect_uri: REDIRECT_URI }, basic(a.appId, a.apiKey)),
      ),
      401,
      'invalid_client',
    );
    expect((await exchangeFor(a, second.code)).statusCode).toBe(200);
  });

  it('O7 the sign-in page’s calls from another browser, or with another app’s request: 404, no code', async () => {
    const f = await oidcApp(app);
    const page = await authorize(app, f, {});
    const { requestId } = pageData(page.body);
    const other = cookieOf((await authorize(app, f, {})).headers['set-cookie']);
    for (const cookie of [undefined, other]) {
      const res = await expectNoChange(app, () => pageCall(app, f, 'complete', cookie, { request: requestId }));
      expectProblem(res, 404, 'not-found');
    }
    const cross = await expectNoChange(app, () =>
      pageCall(app, f, 'complete', cookieOf(page.headers['set-cookie']), { request: requestId }).then(() =>
        app.inject({
          method: 'POST',
          url: `/login/oidc/${f.appId}/authorize/complete`,
          headers: { 'content-type': 'application/json', 'sec-fetch-site': 'cross-site', cookie: cookieOf(page.headers['set-cookie'])! },
          payload: JSON.stringify({ request: requestId }),
        }),
      ),
    );
    expectProblem(cross, 403, 'forbidden');
  });

  it('O8 introspection unauthenticated, or by another client: 401 invalid_client, or active:false alone', async () => {
    const one = await consentSetup(app);
    const { code, verifier } = await codeFor(one.browser, one.client);
    const tokens = (await exchange(app, one.client, code, verifier)).json();
    const introspect = (headers: Record<string, string>, form: Record<string, string> = { token: tokens.access_token }) =>
      app.inject({
        method: 'POST',
        url: '/api/oauth/introspect',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: new URLSearchParams(form).toString(),
      });
    const none = await expectNoChange(app, () => introspect({}));
    expectOAuthError(none, 401, 'invalid_client');
    expect(none.headers['www-authenticate']).toContain('Basic');
    const wrong = await expectNoChange(app, () => introspect({ authorization: `Basic ${Buffer.from(`${one.client.client_id}:cs_wrong`).toString('base64')}` }));
    expectOAuthError(wrong, 401, 'invalid_client');
    const other = await consentSetup(app);
    const foreign = await expectNoChange(app, () =>
      introspect({ authorization: `Basic ${Buffer.from(`${other.client.client_id}:${other.client.client_secret}`).toString('base64')}` }),
    );
    expect(foreign.statusCode).toBe(200);
    expect(foreign.json()).toEqual({ active: false });
    const own = await introspect({ authorization: `Basic ${Buffer.from(`${one.client.client_id}:${one.client.client_secret}`).toString('base64')}` });
    expect(own.json().active).toBe(true);
  });

  it('O9 registration without a valid initial access token: 401, no client', async () => {
    const { owner } = await consentSetup(app);
    const body = JSON.stringify({ redirect_uris: ['https://client.example.org/callback'], client_name: 'X' });
    const register = (authorization?: string) =>
      app.inject({
        method: 'POST',
        url: '/api/oauth/register',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        payload: body,
      });
    const issued = (
      await app.inject({ method: 'POST', url: '/api/connect/registration-tokens', headers: bearer(owner.token), payload: { expires_in_days: 1 } })
    ).json();
    await app.inject({ method: 'DELETE', url: `/api/connect/registration-tokens/${issued.id}`, headers: bearer(owner.token) });
    for (const authorization of [
      undefined,
      'Bearer rit_0000000000000000000000000000000000000000',
      `Bearer ${issued.token}`,
      bearer(owner.token).authorization,
      `Basic ${issued.token}`,
    ]) {
      const res = await expectNoChange(app, () => register(authorization));
      expectProblem(res, 401, 'unauthorized');
    }
  });
});
