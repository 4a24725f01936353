// A real OAuth client against the server: oauth4webapi discovers the metadata (RFC 8414), runs
// the authorization-code flow with PKCE S256 and `iss` checking (RFC 9207), refreshes and
// revokes. The consent page in between is driven over HTTP with cookies and the scraped token.
import * as oauth from 'oauth4webapi';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildShared } from '#test/helper.js';
import { freePort } from '#test/support/free-port.js';
import { signUp } from '#test/unit/account/support.js';
import { ALL_SCOPES, Browser, REDIRECT, createClient, hiddenInputs } from './support.js';

let app: FastifyInstance;
let issuerUrl: string;

// The issuer must be the URL the client discovers it at, so the port is chosen before the build.
beforeAll(async () => {
  const port = await freePort();
  issuerUrl = `http://127.0.0.1:${port}`;
  app = await buildShared({ env: { PORT: String(port), PUBLIC_URL: issuerUrl, RATE_LIMIT_IP_PER_MINUTE: '10000' } });
  await app.listen({ port, host: '127.0.0.1' });
});

describe('oauth4webapi', () => {
  it('discovery, authorization code with PKCE, refresh and revocation', { timeout: 60_000 }, async () => {
    const insecure = { [oauth.allowInsecureRequests]: true };

    const issuer = new URL(issuerUrl);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
    expect(as.code_challenge_methods_supported).toEqual(['S256']);
    expect(as.grant_types_supported).toEqual(['authorization_code', 'refresh_token']);
    expect(as.revocation_endpoint).toBe(`${issuerUrl}/api/oauth/revoke`);

    const owner = await signUp(app);
    const registered = await createClient(app, owner);
    const client: oauth.Client = { client_id: registered.client_id };
    const clientAuth = oauth.ClientSecretBasic(registered.client_secret!);

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorizationUrl = new URL(as.authorization_endpoint!);
    authorizationUrl.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: ALL_SCOPES,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();

    const browser = new Browser(app);
    await browser.signIn(owner.email);
    const page = await browser.get(`${authorizationUrl.pathname}${authorizationUrl.search}`);
    expect(page.statusCode).toBe(200);
    const approved = await browser.postForm('/connect/authorize/decision', { ...hiddenInputs(page.body), decision: 'approve' });
    expect(approved.statusCode).toBe(303);

    const callback = new URL(String(approved.headers.location));
    const params = oauth.validateAuthResponse(as, client, callback, state);
    const response = await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, REDIRECT, verifier, insecure);
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
    expect(tokens.token_type).toBe('bearer'); // oauth4webapi lower-cases it
    expect(tokens.scope).toBe(ALL_SCOPES);
    expect(tokens.org_id).toBe(owner.workspace.id);
    expect(tokens.org_slug).toBe(owner.workspace.slug);

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure),
    );
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, clientAuth, refreshed.refresh_token!, insecure));
    await expect(
      oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshed.refresh_token!, insecure)),
    ).rejects.toMatchObject({ error: 'invalid_grant' });

    // A tampered `iss` in the callback is caught by the client (RFC 9207).
    const forged = new URL(callback);
    forged.searchParams.set('iss', 'https://evil.test');
    expect(() => oauth.validateAuthResponse(as, client, forged, state)).toThrow();
  });
});
