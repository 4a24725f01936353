// Connect OAuth for a client app: the authorize URL with PKCE (RFC 7636, S256 only), reading the
// redirect back (state, error and RFC 9207 `iss`), and the token endpoint (RFC 6749 §4.1.3, §6)
// and revocation (RFC 7009) through the typed Connect client, form-encoded as RFC 6749 asks.
// A confidential client authenticates with HTTP Basic (RFC 6749 §2.3.1: each part form-encoded
// first); a public client sends only `client_id` in the body.
import type { components } from '../generated/connect/types.js';
import { createConnectClient } from './connect.js';
import type { ClientOptions } from './core.js';
import { OAuthError, unwrap } from './problems.js';

export type TokenResponse = components['schemas']['TokenResponse'];

// btoa rather than Buffer: these helpers also run in a browser (a public client's SPA).
const b64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const random = (n: number) => b64url(globalThis.crypto.getRandomValues(new Uint8Array(n)));

async function s256(verifier: string): Promise<string> {
  return b64url(new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
}

export interface AuthorizeRequest {
  baseUrl: string;
  clientId: string;
  redirectUri: string;
  scopes: readonly string[];
  /** Generated (32 random bytes) when left out; keep it to compare on the way back. */
  state?: string;
}

/** The URL to send the owner's browser to, and the `state` and `codeVerifier` to keep for the callback. */
export async function buildAuthorizeUrl({
  baseUrl,
  clientId,
  redirectUri,
  scopes,
  state = random(32),
}: AuthorizeRequest): Promise<{ url: string; state: string; codeVerifier: string }> {
  const codeVerifier = random(32); // 43 characters, the RFC 7636 minimum with 256 bits of entropy
  const url = new URL('/connect/authorize', baseUrl);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: scopes.join(' '),
    state,
    code_challenge: await s256(codeVerifier),
    code_challenge_method: 'S256',
  }).toString();
  return { url: url.toString(), state, codeVerifier };
}

/**
 * The `code` of the redirect back to your `redirect_uri`, after checking `state` (and `iss` when
 * `issuer` is given); an `error` redirect (e.g. `access_denied`) throws OAuthError.
 */
export function parseCallback(callbackUrl: string | URL, expected: { state: string; issuer?: string }): string {
  const query = new URL(callbackUrl).searchParams;
  if (query.get('state') !== expected.state)
    throw new OAuthError({ error: 'invalid_state', error_description: 'The state does not match the one sent to authorize.' }, 0);
  if (expected.issuer !== undefined && query.get('iss') !== expected.issuer) {
    throw new OAuthError({ error: 'invalid_issuer', error_description: `iss is not ${expected.issuer} (RFC 9207).` }, 0);
  }
  const error = query.get('error');
  if (error) throw new OAuthError({ error, error_description: query.get('error_description') ?? undefined }, 0);
  const code = query.get('code');
  if (!code) throw new OAuthError({ error: 'invalid_request', error_description: 'The redirect carries no code.' }, 0);
  return code;
}

export interface ClientCredentials {
  baseUrl: string;
  clientId: string;
  /** A confidential client's secret; none for a public client (which must use PKCE). */
  clientSecret?: string | null;
  fetch?: ClientOptions['fetch'];
}

const formEncode = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');

function endpointCall({ baseUrl, clientId, clientSecret, fetch }: ClientCredentials, body: Record<string, string | undefined>) {
  const client = createConnectClient({ baseUrl, fetch });
  const form: Record<string, string> = {};
  for (const [k, v] of Object.entries(body)) if (v !== undefined) form[k] = v;
  const headers: Record<string, string> = { 'Content-Type': 'application/x-www-form-urlencoded' };
  if (clientSecret)
    headers.Authorization = `Basic ${btoa(`${formEncode(clientId)}:${formEncode(clientSecret)}`)}`; // form-encoded: ASCII
  else form.client_id = clientId;
  return { client, form, headers, bodySerializer: (b: unknown) => new URLSearchParams(b as Record<string, string>).toString() };
}

/** Exchanges the authorization code (with the PKCE verifier) for tokens. Errors throw OAuthError. */
export async function exchangeCode(args: ClientCredentials & { code: string; codeVerifier: string; redirectUri: string }): Promise<TokenResponse> {
  const { client, form, headers, bodySerializer } = endpointCall(args, {
    grant_type: 'authorization_code',
    code: args.code,
    code_verifier: args.codeVerifier,
    redirect_uri: args.redirectUri,
  });
  return unwrap(await client.POST('/api/oauth/token', { body: form, headers, bodySerializer }));
}

/** Trades a refresh token for new tokens (the old refresh token stops working: rotation). */
export async function refreshToken(args: ClientCredentials & { refreshToken: string; scope?: string }): Promise<TokenResponse> {
  const { client, form, headers, bodySerializer } = endpointCall(args, { grant_type: 'refresh_token', refresh_token: args.refreshToken, scope: args.scope });
  return unwrap(await client.POST('/api/oauth/token', { body: form, headers, bodySerializer }));
}

/** Revokes an access or refresh token (RFC 7009: an unknown token also succeeds). */
export async function revokeToken(args: ClientCredentials & { token: string; tokenTypeHint?: 'access_token' | 'refresh_token' }): Promise<void> {
  const { client, form, headers, bodySerializer } = endpointCall(args, { token: args.token, token_type_hint: args.tokenTypeHint });
  const result = await client.POST('/api/oauth/revoke', { body: form, headers, bodySerializer, parseAs: 'text' });
  unwrap(result);
}

/**
 * An `auth` function for createConnectClient that refreshes the access token shortly before it
 * expires (or when told it was rejected) and reports the new pair to `onTokens` to store.
 */
export function refreshingTokenAuth(
  args: ClientCredentials & { tokens: TokenResponse; onTokens?: (tokens: TokenResponse) => void | Promise<void>; skewSec?: number },
) {
  let tokens = args.tokens;
  let expiresAt = Date.now() + tokens.expires_in * 1000;
  let pending: Promise<string> | undefined;
  const skew = (args.skewSec ?? 30) * 1000;
  return async (): Promise<string> => {
    if (Date.now() < expiresAt - skew) return tokens.access_token;
    // One refresh at a time: concurrent requests share it (a refresh token is single-use).
    pending ??= (async () => {
      try {
        if (!tokens.refresh_token)
          throw new OAuthError({ error: 'invalid_grant', error_description: 'The access token expired and there is no refresh token.' }, 0);
        const next = await refreshToken({ ...args, refreshToken: tokens.refresh_token });
        tokens = next;
        expiresAt = Date.now() + next.expires_in * 1000;
        await args.onTokens?.(next);
        return next.access_token;
      } finally {
        pending = undefined;
      }
    })();
    return pending;
  };
}
