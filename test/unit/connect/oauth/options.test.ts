// Connect OAuth for resource servers and platforms, with a plain HTTP client: introspection as
// RFC 7662 §2.1's example sends it (form body, HTTP Basic), per-client token lifetimes, the
// first-party `skip_consent`, and dynamic registration (RFC 7591 §3.1's example body) with the
// client configuration endpoint (RFC 7592) behind an owner-issued initial access token.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { bearer } from '#test/unit/account/support.js';
import { ALL_SCOPES, Browser, REDIRECT, authorizeUrl, basic, codeFor, consentSetup, exchange, pkce } from './support.js';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared({ env: { RATE_LIMIT_IP_PER_MINUTE: '100000' } });
});

const introspect = (form: Record<string, string>, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/api/oauth/introspect',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', ...headers },
    payload: new URLSearchParams(form).toString(),
  });

describe('introspection (RFC 7662)', () => {
  it('describes the caller’s live tokens; anything else is active:false alone', async () => {
    const { owner, client, browser } = await consentSetup(app);
    const { code, verifier } = await codeFor(browser, client);
    const tokens = (await exchange(app, client, code, verifier)).json();
    const auth = basic(client.client_id, client.client_secret!);
    // RFC 7662 §2.1: POST /introspect, form body `token=…&token_type_hint=access_token`, Basic.
    const res = await introspect({ token: tokens.access_token, token_type_hint: 'access_token' }, auth);
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json();
    expect(body).toMatchObject({
      active: true,
      scope: ALL_SCOPES,
      client_id: client.client_id,
      token_type: 'access_token',
      sub: owner.workspace.id,
      org_id: owner.workspace.id,
    });
    expect(body.exp - body.iat).toBe(3600);
    expect((await introspect({ token: tokens.refresh_token }, auth)).json()).toMatchObject({ active: true, token_type: 'refresh_token' });
    // Unknown, malformed, revoked: the same answer.
    expect((await introspect({ token: 'cat_0000000000000000000000000000000000000000' }, auth)).json()).toEqual({ active: false });
    expect((await introspect({ token: 'nonsense' }, auth)).json()).toEqual({ active: false });
    await app.inject({
      method: 'POST',
      url: '/api/oauth/revoke',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...auth },
      payload: `token=${tokens.access_token}`,
    });
    expect((await introspect({ token: tokens.access_token }, auth)).json()).toEqual({ active: false });
  });

  it('per-client lifetimes within bounds; the token answer and introspection follow them', async () => {
    const { owner, client, browser } = await consentSetup(app, { access_token_ttl_seconds: 600, refresh_token_ttl_seconds: 86400 });
    const view = await app.inject({ url: `/api/connect/clients/${client.client_id}`, headers: bearer(owner.token) });
    expect(view.json()).toMatchObject({ access_token_ttl_seconds: 600, refresh_token_ttl_seconds: 86400, skip_consent: false, dynamically_registered: false });
    const { code, verifier } = await codeFor(browser, client);
    const tokens = (await exchange(app, client, code, verifier)).json();
    expect(tokens.expires_in).toBe(600);
    const refresh = (await introspect({ token: tokens.refresh_token }, basic(client.client_id, client.client_secret!))).json();
    expect(refresh.exp - refresh.iat).toBe(86400);
    const patch = (payload: object) => app.inject({ method: 'PATCH', url: `/api/connect/clients/${client.client_id}`, headers: bearer(owner.token), payload });
    expect((await patch({ access_token_ttl_seconds: 60 })).statusCode).toBe(400);
    expect((await patch({ refresh_token_ttl_seconds: 100 * 86400 })).statusCode).toBe(400);
    const shorter = await patch({ access_token_ttl_seconds: 7200, refresh_token_ttl_seconds: 3600 });
    expect(shorter.statusCode).toBe(400);
    expect(shorter.json().errors[0].pointer).toBe('/body/refresh_token_ttl_seconds');
  });
});

describe('skip_consent', () => {
  it('the workspace’s own client skips the page for its owner; another workspace’s owner still sees it', async () => {
    const { owner, client, browser } = await consentSetup(app, { skip_consent: true });
    const { challenge } = pkce();
    const params = {
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'links:write',
      state: 'st',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    };
    const res = await browser.get(authorizeUrl(params));
    expect(res.statusCode).toBe(302);
    const location = new URL(String(res.headers.location));
    expect(location.searchParams.get('code')).toMatch(/^ac_/);
    expect(location.searchParams.get('state')).toBe('st');
    const grants = await app.inject({ url: '/api/connect/grants', headers: bearer(owner.token) });
    expect(grants.json().data).toHaveLength(1);

    const other = await consentSetup(app);
    const page = await other.browser.get(authorizeUrl(params));
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Approve');
  });
});

describe('dynamic registration (RFC 7591, 7592)', () => {
  /** RFC 7591 §3.1's example request, with a Connect scope. */
  const metadata = {
    redirect_uris: ['https://client.example.org/callback', 'https://client.example.org/callback2'],
    client_name: 'My Example Client',
    token_endpoint_auth_method: 'client_secret_basic',
    logo_uri: 'https://client.example.org/logo.png',
    jwks_uri: 'https://client.example.org/my_public_keys.jwks',
    example_extension_parameter: 'example_value',
    scope: 'documents:write',
  };
  const register = (body: object, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: '/api/oauth/register', headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) });

  it('off until the owner issues an initial access token; then register, read, update, delete', async () => {
    const { owner } = await consentSetup(app);
    const none = await register(metadata);
    expect(none.statusCode).toBe(401);
    expect((await register(metadata, { authorization: 'Bearer rit_0000000000000000000000000000000000000000' })).statusCode).toBe(401);

    const issued = await app.inject({
      method: 'POST',
      url: '/api/connect/registration-tokens',
      headers: bearer(owner.token),
      payload: { description: 'Partner' },
    });
    expect(issued.statusCode).toBe(201);
    const initial = issued.json().token as string;
    const res = await register(metadata, { authorization: `Bearer ${initial}` });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    const client = res.json();
    expect(client).toMatchObject({
      client_name: 'My Example Client',
      token_endpoint_auth_method: 'client_secret_basic',
      redirect_uris: metadata.redirect_uris,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      client_secret_expires_at: 0,
      registration_client_uri: `${app.platform.config.publicUrl}/api/oauth/register/${client.client_id}`,
    });
    expect(client.client_secret).toMatch(/^cs_/);
    expect(client.registration_access_token).toMatch(/^rat_/);

    // The owner sees it among the workspace's clients; it cannot be made to skip consent.
    const listed = await app.inject({ url: `/api/connect/clients/${client.client_id}`, headers: bearer(owner.token) });
    expect(listed.json()).toMatchObject({ dynamically_registered: true, skip_consent: false });
    const skip = await app.inject({
      method: 'PATCH',
      url: `/api/connect/clients/${client.client_id}`,
      headers: bearer(owner.token),
      payload: { skip_consent: true },
    });
    expect(skip.statusCode).toBe(409);

    const rat = { authorization: `Bearer ${client.registration_access_token}` };
    const read = await app.inject({ url: `/api/oauth/register/${client.client_id}`, headers: rat });
    expect(read.statusCode).toBe(200);
    expect(read.json().client_secret).toBeUndefined();
    const updated = await app.inject({
      method: 'PUT',
      url: `/api/oauth/register/${client.client_id}`,
      headers: { ...rat, 'content-type': 'application/json' },
      payload: JSON.stringify({ ...metadata, client_id: client.client_id, client_name: 'Renamed' }),
    });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json().client_name).toBe('Renamed');
    // The client authenticates at the token endpoint with what registration gave it.
    const wrongClient = await app.inject({ url: `/api/oauth/register/${client.client_id}`, headers: { authorization: `Bearer ${initial}` } });
    expect(wrongClient.statusCode).toBe(401);
    const deleted = await app.inject({ method: 'DELETE', url: `/api/oauth/register/${client.client_id}`, headers: rat });
    expect(deleted.statusCode).toBe(204);
    expect((await app.inject({ url: `/api/oauth/register/${client.client_id}`, headers: rat })).statusCode).toBe(401);

    // Revoked, the initial token opens nothing.
    const id = issued.json().id;
    expect((await app.inject({ method: 'DELETE', url: `/api/connect/registration-tokens/${id}`, headers: bearer(owner.token) })).statusCode).toBe(204);
    expect((await register(metadata, { authorization: `Bearer ${initial}` })).statusCode).toBe(401);
  });

  it('RFC 7591 §3.2.2 errors for bad metadata', async () => {
    const { owner } = await consentSetup(app);
    const initial = (await app.inject({ method: 'POST', url: '/api/connect/registration-tokens', headers: bearer(owner.token), payload: {} })).json().token;
    const auth = { authorization: `Bearer ${initial}` };
    const cases: [object, string][] = [
      [{ ...metadata, redirect_uris: ['http://client.example.org/cb'] }, 'invalid_redirect_uri'],
      [{ ...metadata, redirect_uris: [] }, 'invalid_redirect_uri'],
      [{ ...metadata, grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
      [{ ...metadata, token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata'],
      [{ ...metadata, scope: 'admin' }, 'invalid_client_metadata'],
      [{ ...metadata, client_name: 42 }, 'invalid_client_metadata'],
    ];
    for (const [body, error] of cases) {
      const res = await register(body, auth);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toBe(error);
    }
    const empty = await app.inject({ method: 'POST', url: '/api/oauth/register', headers: auth });
    expect(empty.statusCode).toBe(400);
    expect(empty.headers['cache-control']).toBe('no-store');
    expect(empty.json().error).toBe('invalid_client_metadata');
    // A public client: no secret, and PKCE at authorize as for any public client.
    const pub = (await register({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }, auth)).json();
    expect(pub.client_secret).toBeUndefined();
    const browser = new Browser(app);
    await browser.signIn(owner.email);
    const { code, verifier } = await codeFor(browser, { client_id: pub.client_id, client_secret: null });
    expect((await exchange(app, { client_id: pub.client_id, client_secret: null }, code, verifier)).statusCode).toBe(200);
  });
});
