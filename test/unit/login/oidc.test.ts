// Login apps as OpenID providers, by HTTP alone: discovery, the authorization request and the
// hosted page, the LOGIN message from the sandbox phone, the page's completion, the token
// endpoint's ID token (checked with jose against the published JWKS) and userinfo; the code
// mode; and the refusals a client library relies on. The browser path is test/e2e/login-oidc.
import { createLocalJWKSet, jwtVerify } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { bearer, signUp } from '../account/support.js';
import { REDIRECT_URI, authorize, basic, cookieOf, oidcApp, pageCall, pageData, pkce, signIn, tokenRequest, lastCodeSent } from '#test/support/oidc.js';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
});

async function jwks() {
  const res = await app.inject({ url: '/v1/auth/.well-known/jwks.json' });
  return createLocalJWKSet(res.json());
}

describe('OpenID Connect provider of a Login app', () => {
  it('publishes its metadata under the issuer', async () => {
    const f = await oidcApp(app);
    const res = await app.inject({ url: `/login/oidc/${f.appId}/.well-known/openid-configuration` });
    expect(res.statusCode).toBe(200);
    const meta = res.json();
    expect(meta).toMatchObject({
      issuer: f.issuer,
      authorization_endpoint: `${f.issuer}/authorize`,
      token_endpoint: `${f.issuer}/token`,
      userinfo_endpoint: `${f.issuer}/userinfo`,
      id_token_signing_alg_values_supported: ['ES256'],
      code_challenge_methods_supported: ['S256'],
      request_uri_parameter_supported: false,
    });
    expect((await app.inject({ url: '/login/oidc/app_0000000000000000/.well-known/openid-configuration' })).statusCode).toBe(404);
  });

  it('signs in by a LOGIN message: code, ID token, userinfo; the code is single-use', async () => {
    const f = await oidcApp(app);
    const { verifier, challenge } = pkce();
    const { url, code } = await signIn(app, f, { state: 's-1 2', nonce: 'n-abc', code_challenge: challenge, code_challenge_method: 'S256' });
    expect(`${url.origin}${url.pathname}`).toBe(REDIRECT_URI);
    expect(url.searchParams.get('state')).toBe('s-1 2');
    expect(url.searchParams.get('iss')).toBe(f.issuer);

    const res = await tokenRequest(
      app,
      f,
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
      basic(f.appId, f.apiKey),
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const tokens = res.json();
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 600, scope: 'openid phone profile' });
    const { payload, protectedHeader } = await jwtVerify(tokens.id_token, await jwks(), { issuer: f.issuer, audience: f.appId, algorithms: ['ES256'] });
    expect(protectedHeader.alg).toBe('ES256');
    expect(payload).toMatchObject({ nonce: 'n-abc', phone_number: '+15550104321', phone_number_verified: true, name: 'Ana Souza', amr: ['whatsapp'] });
    expect(payload.sub).toMatch(/^[\w-]{32}$/);
    expect(JSON.stringify(payload.sub)).not.toContain('15550104321');
    expect(typeof payload.auth_time).toBe('number');

    const info = await app.inject({ url: `/login/oidc/${f.appId}/userinfo`, headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(info.statusCode, info.body).toBe(200);
    expect(info.json()).toEqual({ sub: payload.sub, phone_number: '+15550104321', phone_number_verified: true, name: 'Ana Souza' });

    // The same person signs in again: the same sub. The first code again: invalid_grant, and its access token is revoked.
    const again = await signIn(app, f, { nonce: 'n-2' });
    const second = await tokenRequest(app, f, { grant_type: 'authorization_code', code: again.code, redirect_uri: REDIRECT_URI }, basic(f.appId, f.apiKey));
    const { payload: p2 } = await jwtVerify(second.json().id_token, await jwks(), { issuer: f.issuer, audience: f.appId });
    expect(p2.sub).toBe(payload.sub);
    const reuse = await tokenRequest(
      app,
      f,
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
      basic(f.appId, f.apiKey),
    );
    expect(reuse.statusCode).toBe(400);
    expect(reuse.json().error).toBe('invalid_grant');
    const revoked = await app.inject({ url: `/login/oidc/${f.appId}/userinfo`, headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(revoked.statusCode).toBe(401);
    expect(revoked.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('releases only what the scopes ask for; the sub differs between apps', async () => {
    const f = await oidcApp(app);
    const other = await oidcApp(app);
    const one = await signIn(app, f, { scope: 'openid email' });
    const t1 = (await tokenRequest(app, f, { grant_type: 'authorization_code', code: one.code, redirect_uri: REDIRECT_URI }, basic(f.appId, f.apiKey))).json();
    expect(t1.scope).toBe('openid');
    const { payload } = await jwtVerify(t1.id_token, await jwks(), { issuer: f.issuer, audience: f.appId });
    expect(payload.phone_number).toBeUndefined();
    expect(payload.nonce).toBeUndefined();
    const two = await signIn(app, other, { scope: 'openid' });
    const t2 = (
      await tokenRequest(app, other, { grant_type: 'authorization_code', code: two.code, redirect_uri: REDIRECT_URI }, basic(other.appId, other.apiKey))
    ).json();
    const { payload: p2 } = await jwtVerify(t2.id_token, await jwks(), { issuer: other.issuer, audience: other.appId });
    expect(p2.sub).not.toBe(payload.sub);
  });

  it('a public app: PKCE required at authorize, no secret at the token endpoint', async () => {
    const f = await oidcApp(app, { clientType: 'public' });
    const res = await authorize(app, f, { state: 'x' });
    expect(res.statusCode).toBe(302);
    const location = new URL(res.headers.location as string);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('state')).toBe('x');
    const { verifier, challenge } = pkce();
    const { code } = await signIn(app, f, { code_challenge: challenge, code_challenge_method: 'S256' });
    const withSecret = await tokenRequest(app, f, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      client_id: f.appId,
      client_secret: f.apiKey,
    });
    expect(withSecret.statusCode).toBe(401);
    const ok = await tokenRequest(app, f, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier, client_id: f.appId });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('the code mode: a code sent to the number, typed on the page, amr otp', async () => {
    const f = await oidcApp(app);
    const page = await authorize(app, f, { login_hint: '+15550107777' });
    expect(page.body).toContain('value="+15550107777"');
    const cookie = cookieOf(page.headers['set-cookie']);
    const { requestId } = pageData(page.body);
    const started = await pageCall(app, f, 'start-code', cookie, { request: requestId, phone: '+15550107777' });
    expect(started.statusCode, started.body).toBe(200);
    const typed = await lastCodeSent(app, f.workspaceId, '+15550107777');
    const wrong = await pageCall(app, f, 'check-code', cookie, { request: requestId, code: typed === '000000' ? '111111' : '000000' });
    expect(wrong.statusCode).toBe(422);
    const right = await pageCall(app, f, 'check-code', cookie, { request: requestId, code: typed });
    expect(right.statusCode, right.body).toBe(200);
    const redirect = new URL(right.json().redirect);
    const tokens = (
      await tokenRequest(
        app,
        f,
        { grant_type: 'authorization_code', code: redirect.searchParams.get('code')!, redirect_uri: REDIRECT_URI },
        basic(f.appId, f.apiKey),
      )
    ).json();
    const { payload } = await jwtVerify(tokens.id_token, await jwks(), { issuer: f.issuer, audience: f.appId });
    expect(payload).toMatchObject({ amr: ['whatsapp', 'otp'], phone_number: '+15550107777' });
  });

  it('the owner registers redirect URIs and the client type through the Login apps API', async () => {
    const owner = await signUp(app);
    const created = await app.inject({
      method: 'POST',
      url: '/api/login/apps',
      headers: bearer(owner.token),
      payload: { name: 'Shop', oidc_redirect_uris: ['https://shop.test/cb', 'http://127.0.0.1:8080/cb'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const body = created.json();
    expect(body).toMatchObject({
      oidc_issuer: `${app.platform.config.publicUrl}/login/oidc/${body.id}`,
      oidc_redirect_uris: ['https://shop.test/cb', 'http://127.0.0.1:8080/cb'],
      oidc_client_type: 'confidential',
    });
    const patch = (payload: object) => app.inject({ method: 'PATCH', url: `/api/login/apps/${body.id}`, headers: bearer(owner.token), payload });
    const changed = await patch({ oidc_client_type: 'public', oidc_redirect_uris: ['com.shop.app:/cb'] });
    expect(changed.statusCode).toBe(400);
    expect(changed.json().errors[0].pointer).toBe('/body/oidc_redirect_uris/0');
    for (const bad of [['http://shop.test/cb'], ['https://shop.test/cb#x'], ['https://u:p@shop.test/cb'], ['https://a.test/cb', 'https://a.test/cb']]) {
      expect((await patch({ oidc_redirect_uris: bad })).statusCode).toBe(400);
    }
    const ok = await patch({ oidc_client_type: 'public', oidc_redirect_uris: ['https://shop.test/other'] });
    expect(ok.json()).toMatchObject({ oidc_client_type: 'public', oidc_redirect_uris: ['https://shop.test/other'] });
  });
});
