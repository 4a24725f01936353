// The OAuth helpers through the real consent flow: buildAuthorizeUrl (PKCE S256, random state),
// the owner approving on the consent page, parseCallback (state, iss, error), exchangeCode,
// refreshToken (rotation), revokeToken (RFC 7009) and refreshingTokenAuth.
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  buildAuthorizeUrl,
  createConnectClient,
  exchangeCode,
  isProblem,
  OAuthError,
  parseCallback,
  refreshingTokenAuth,
  refreshToken,
  revokeToken,
  unwrap,
  type TokenResponse,
} from '../../../clients/index.js';
import { ALL_SCOPES, type Browser, consentSetup, hiddenInputs, REDIRECT, type Client } from '../connect/oauth/support.js';
import { serve, type Served } from './support.js';

let s: Served;
let client: Client;
let browser: Browser;
let issuer: string;

beforeAll(async () => {
  s = await serve();
  ({ client, browser } = await consentSetup(s.app));
  const metadata = unwrap(await createConnectClient({ baseUrl: s.baseUrl }).GET('/.well-known/oauth-authorization-server'));
  issuer = metadata.issuer;
});

/** The owner's browser opens the authorize URL and decides; answers the redirect back. */
async function ownerDecides(url: string, decision: 'approve' | 'deny' = 'approve', who = browser): Promise<URL> {
  const { pathname, search } = new URL(url);
  const page = await who.get(`${pathname}${search}`);
  expect(page.statusCode, page.body.slice(0, 300)).toBe(200);
  const res = await who.postForm('/connect/authorize/decision', { ...hiddenInputs(page.body), decision });
  expect(res.statusCode).toBe(303);
  return new URL(String(res.headers.location));
}

async function authorizedCode(c: Client = client, who = browser) {
  const auth = await buildAuthorizeUrl({ baseUrl: s.baseUrl, clientId: c.client_id, redirectUri: REDIRECT, scopes: ALL_SCOPES.split(' ') });
  const back = await ownerDecides(auth.url, 'approve', who);
  return { ...auth, code: parseCallback(back, { state: auth.state, issuer }) };
}

const creds = (c: Client = client) => ({ baseUrl: s.baseUrl, clientId: c.client_id, clientSecret: c.client_secret });

describe('buildAuthorizeUrl', () => {
  it('S256 challenge of a 43-character verifier, a random state, every parameter of RFC 6749 4.1.1', async () => {
    const a = await buildAuthorizeUrl({ baseUrl: s.baseUrl, clientId: client.client_id, redirectUri: REDIRECT, scopes: ['links:write', 'analytics:read'] });
    const b = await buildAuthorizeUrl({ baseUrl: s.baseUrl, clientId: client.client_id, redirectUri: REDIRECT, scopes: ['links:write'], state: 'mine' });
    const q = new URL(a.url).searchParams;
    expect(new URL(a.url).pathname).toBe('/connect/authorize');
    expect(Object.fromEntries(q)).toMatchObject({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      scope: 'links:write analytics:read',
      state: a.state,
      code_challenge_method: 'S256',
    });
    expect(q.get('code_challenge')).toBe(createHash('sha256').update(a.codeVerifier).digest('base64url'));
    expect(a.codeVerifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.state).not.toBe(b.state);
    expect(a.codeVerifier).not.toBe(b.codeVerifier);
    expect(b.state).toBe('mine');
  });
});

describe('consent, exchange, use, refresh, revoke', () => {
  let tokens: TokenResponse;

  it('exchangeCode: the code from the real consent page gives tokens that call the API', async () => {
    const { code, codeVerifier } = await authorizedCode();
    const sent: Request[] = [];
    tokens = await exchangeCode({ ...creds(), code, codeVerifier, redirectUri: REDIRECT, fetch: (r) => (sent.push(r.clone()), fetch(r)) });
    // RFC 6749: form-encoded body; a confidential client in HTTP Basic, its secret not in the body
    expect(sent[0]!.headers.get('content-type')).toBe('application/x-www-form-urlencoded');
    expect(sent[0]!.headers.get('authorization')).toBe(`Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`);
    expect(Object.fromEntries(new URLSearchParams(await sent[0]!.text()))).toEqual({
      grant_type: 'authorization_code',
      code,
      code_verifier: codeVerifier,
      redirect_uri: REDIRECT,
    });
    expect(tokens).toMatchObject({ token_type: 'Bearer', scope: ALL_SCOPES });
    const connect = createConnectClient({ baseUrl: s.baseUrl, auth: { bearer: tokens.access_token } });
    expect(unwrap(await connect.GET('/api/connect/documents')).data).toEqual([]);
  });

  it('the same code twice: OAuthError invalid_grant', async () => {
    const { code, codeVerifier } = await authorizedCode();
    await exchangeCode({ ...creds(), code, codeVerifier, redirectUri: REDIRECT });
    const error = await exchangeCode({ ...creds(), code, codeVerifier, redirectUri: REDIRECT }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OAuthError);
    expect(error).toMatchObject({ status: 400, error: 'invalid_grant' });
  });

  it('a wrong code_verifier: invalid_grant; a wrong client secret: invalid_client 401', async () => {
    const first = await authorizedCode();
    const wrong = await exchangeCode({ ...creds(), code: first.code, codeVerifier: 'x'.repeat(43), redirectUri: REDIRECT }).catch((e: unknown) => e);
    expect(wrong).toMatchObject({ error: 'invalid_grant' });
    const second = await authorizedCode();
    const badClient = await exchangeCode({
      ...creds(),
      clientSecret: 'cs_wrong',
      code: second.code,
      codeVerifier: second.codeVerifier,
      redirectUri: REDIRECT,
    }).catch((e: unknown) => e);
    expect(badClient).toMatchObject({ status: 401, error: 'invalid_client' });
  });

  it('refreshToken rotates: new tokens work; the old refresh token again within the grace window gets a pair too; an unknown one is invalid_grant', async () => {
    const next = await refreshToken({ ...creds(), refreshToken: tokens.refresh_token! });
    expect(next.access_token).not.toBe(tokens.access_token);
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    const connect = createConnectClient({ baseUrl: s.baseUrl, auth: { bearer: next.access_token } });
    expect(unwrap(await connect.GET('/api/connect/documents')).data).toEqual([]);
    // A second worker of the same client refreshing at once (REFRESH_TOKEN_REUSE_GRACE_MS); reuse
    // after the window revokes the grant (bad-inputs C20), which the tests after this one still use.
    const sibling = await refreshToken({ ...creds(), refreshToken: tokens.refresh_token! });
    expect(sibling.refresh_token).not.toBe(next.refresh_token);
    await expect(refreshToken({ ...creds(), refreshToken: 'crt_NotARefreshTokenOfThisServer0000000000' })).rejects.toMatchObject({ error: 'invalid_grant' });
    tokens = next;
  });

  it('revokeToken: the access token stops working (401 ProblemError); an unknown token is revoked too (RFC 7009)', async () => {
    await revokeToken({ ...creds(), token: tokens.access_token, tokenTypeHint: 'access_token' });
    const connect = createConnectClient({ baseUrl: s.baseUrl, auth: { bearer: tokens.access_token } });
    const error = await connect
      .GET('/api/connect/documents')
      .then(unwrap)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isProblem(error, 'unauthorized')).toBe(true);
    await expect(revokeToken({ ...creds(), token: 'crt_unknown' })).resolves.toBeUndefined();
  });
});

describe('parseCallback', () => {
  it('denied: OAuthError access_denied; another state or issuer: refused before any exchange', async () => {
    const auth = await buildAuthorizeUrl({ baseUrl: s.baseUrl, clientId: client.client_id, redirectUri: REDIRECT, scopes: ['links:write'] });
    const denied = await ownerDecides(auth.url, 'deny');
    expect(() => parseCallback(denied, { state: auth.state, issuer })).toThrow(expect.objectContaining({ error: 'access_denied' }));
    const approved = await ownerDecides(auth.url);
    expect(() => parseCallback(approved, { state: 'not-mine' })).toThrow(expect.objectContaining({ error: 'invalid_state' }));
    expect(() => parseCallback(approved, { state: auth.state, issuer: 'https://evil.example' })).toThrow(expect.objectContaining({ error: 'invalid_issuer' }));
    expect(parseCallback(approved, { state: auth.state, issuer })).toMatch(/^ac_/);
  });
});

describe('public client and refreshingTokenAuth', () => {
  it('a public client (no secret) exchanges with PKCE alone; refreshingTokenAuth refreshes an expired token once for concurrent calls', async () => {
    const setup = await consentSetup(s.app, { client_type: 'public' });
    expect(setup.client.client_secret).toBeNull();
    const { code, codeVerifier } = await authorizedCode(setup.client, setup.browser);
    const first = await exchangeCode({ ...creds(setup.client), code, codeVerifier, redirectUri: REDIRECT });
    const stored: TokenResponse[] = [];
    const auth = refreshingTokenAuth({ ...creds(setup.client), tokens: { ...first, expires_in: 0 }, onTokens: (t) => void stored.push(t) });
    const connect = createConnectClient({ baseUrl: s.baseUrl, auth });
    const results = await Promise.all([connect.GET('/api/connect/documents'), connect.GET('/api/connect/documents')]);
    expect(results.map((r) => r.response.status)).toEqual([200, 200]);
    expect(stored).toHaveLength(1);
    expect(stored[0]!.access_token).not.toBe(first.access_token);
  });
});
