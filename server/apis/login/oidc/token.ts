// The token and userinfo endpoints of an app's OpenID provider (OpenID Connect Core §3.1.3,
// §5.3), and the bearer scheme of userinfo.
//
// The client is the app: HTTP Basic or `client_id`/`client_secret` in the body with the app id
// and its API key (confidential), or `client_id` alone (public, PKCE required at authorize).
// Codes are single-use: the exchange locks the request row, and a code presented again answers
// `invalid_grant` and revokes the access token the first exchange issued (RFC 6749 §4.1.2). A
// code of another app, or for another redirect URI, or with a wrong PKCE verifier, is
// `invalid_grant` and changes nothing (bad-inputs O4, O5, O6). Errors are RFC 6749 §5.2 JSON, never
// cached.
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { operations } from '#generated/login/types.js';
import { param } from '#server/apis/connect/oauth/client-auth.js';
import { NO_STORE, OAuthFailure, invalidGrant, invalidRequest } from '#server/apis/connect/oauth/oauth-errors.js';
import { pkceMatches } from '#server/apis/connect/oauth/token.js';
import { registerScheme, type AuthContext } from '#server/auth/authenticate.js';
import { authorizationCredential } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { base62, newId } from '#server/lib/ids.js';
import type { Platform } from '#server/platform.js';
import {
  ACCESS_TOKEN_PATTERN,
  ACCESS_TOKEN_TTL_SECONDS,
  CODE_PATTERN,
  ID_TOKEN_TTL_SECONDS,
  findOidcApp,
  oidcIssuer,
  subjectOf,
  type OidcApp,
} from './provider.js';

declare module '../../../auth/authenticate.js' {
  interface AuthKinds {
    login_oidc: true;
  }
  interface AuthContext {
    /** The userinfo access token's row id (kind `login_oidc`). */
    oidcTokenId?: string;
  }
}

const REALM = 'login-oidc';

function sendError(reply: FastifyReply, failure: OAuthFailure): FastifyReply {
  if (failure.status === 401) reply.header('www-authenticate', `Basic realm="${REALM}"`);
  return reply.code(failure.status).headers(NO_STORE).type('application/json').send({ error: failure.error, error_description: failure.description });
}

function formDecode(value: string): string | undefined {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** The authenticated client: the app itself. Every failure is the same `invalid_client`. */
async function authenticateApp(platform: Platform, request: FastifyRequest, appId: string): Promise<OidcApp> {
  const failed = new OAuthFailure('invalid_client', 'Client authentication failed.');
  let clientId = param(request.body, 'client_id', 128);
  let secret = param(request.body, 'client_secret', 256);
  const header = request.headers.authorization;
  if (typeof header === 'string' && /^basic\s/i.test(header)) {
    if (secret !== undefined) throw invalidRequest('Use one client authentication method: HTTP Basic or the body, not both.');
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const basicId = colon < 0 ? undefined : formDecode(decoded.slice(0, colon));
    const basicSecret = colon < 0 ? undefined : formDecode(decoded.slice(colon + 1));
    if (!basicId || basicSecret === undefined) throw failed;
    if (clientId !== undefined && clientId !== basicId) throw invalidRequest('client_id in the body differs from the one in HTTP Basic.');
    clientId = basicId;
    secret = basicSecret;
  }
  if (!clientId) throw new OAuthFailure('invalid_client', 'Client authentication is required.');
  if (clientId !== appId) throw failed;
  const app = await findOidcApp(platform, appId);
  if (!app) throw failed;
  if (app.oidc_client_type === 'public') {
    if (secret) throw failed;
    return app;
  }
  if (!secret || !platform.secrets.matches(secret, app.api_key_digest)) throw failed;
  return app;
}

export const createOidcToken: Handler<operations['createOidcToken']> = async (request, reply) => {
  reply.headers(NO_STORE);
  try {
    return await exchange(request as FastifyRequest, request.params.appId);
  } catch (error) {
    if (error instanceof OAuthFailure) return sendError(reply, error) as never;
    throw error;
  }
};

async function exchange(request: FastifyRequest, appId: string) {
  const server = request.server;
  const { platform } = server;
  const body = request.body;
  const grantType = param(body, 'grant_type', 64);
  if (!grantType) throw invalidRequest('grant_type is required.');
  if (grantType !== 'authorization_code') throw new OAuthFailure('unsupported_grant_type', 'grant_type must be authorization_code.');
  const app = await authenticateApp(platform, request, appId);
  const code = param(body, 'code', 512);
  const redirectUri = param(body, 'redirect_uri', 2048);
  const verifier = param(body, 'code_verifier', 128);
  if (!code) throw invalidRequest('code is required.');
  if (!redirectUri) throw invalidRequest('redirect_uri is required.');
  if (!CODE_PATTERN.test(code)) throw invalidGrant('The authorization code is invalid, expired or already used.');
  const now = platform.now();
  const accessToken = `lat_${base62(40)}`;
  const outcome = await platform.store.db.transaction().execute(async (tx) => {
    const row = await tx.selectFrom('login_oidc_requests').selectAll().where('code_digest', '=', platform.secrets.digest(code)).forUpdate().executeTakeFirst();
    const refused = invalidGrant('The authorization code is invalid, expired or already used.');
    // Another app's code is refused without touching it: its own client may still exchange it.
    if (!row || row.app_id !== app.id || !platform.secrets.matches(code, row.code_digest!)) return refused;
    if (row.code_used_at) {
      await tx.updateTable('login_oidc_tokens').set({ revoked_at: now }).where('request_id', '=', row.id).where('revoked_at', 'is', null).execute();
      return refused;
    }
    if (!row.code_expires_at || row.code_expires_at.getTime() <= now.getTime() || !row.phone || !row.auth_time) return refused;
    if (row.redirect_uri !== redirectUri) return invalidGrant('redirect_uri differs from the one sent to authorize.');
    if (row.code_challenge) {
      if (!verifier || !/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || !pkceMatches(verifier, row.code_challenge)) {
        return invalidGrant('The PKCE code_verifier does not match the code_challenge.');
      }
    } else if (verifier) {
      return invalidGrant('code_verifier was sent for a code issued without code_challenge.');
    }
    await tx.updateTable('login_oidc_requests').set({ code_used_at: now }).where('id', '=', row.id).execute();
    const sub = subjectOf(platform, app.id, row.phone);
    await tx
      .insertInto('login_oidc_tokens')
      .values({
        id: newId('lot'),
        digest: platform.secrets.digest(accessToken),
        app_id: app.id,
        request_id: row.id,
        sub,
        phone: row.phone,
        name: row.name,
        scopes: row.scopes,
        expires_at: new Date(now.getTime() + ACCESS_TOKEN_TTL_SECONDS * 1000),
        created_at: now,
      })
      .execute();
    return { row, sub };
  });
  if (outcome instanceof OAuthFailure) throw outcome;
  const { row, sub } = outcome;
  const iat = Math.floor(now.getTime() / 1000);
  const ring = await server.loginSigningKeys.ring();
  const idToken = ring.sign({
    iss: oidcIssuer(platform, app.id),
    sub,
    aud: app.id,
    iat,
    exp: iat + ID_TOKEN_TTL_SECONDS,
    jti: randomUUID(),
    auth_time: Math.floor(row.auth_time!.getTime() / 1000),
    amr: row.amr ?? [],
    ...(row.nonce !== null ? { nonce: row.nonce } : {}),
    ...userClaims(row.scopes, row),
  });
  return {
    access_token: accessToken,
    token_type: 'Bearer' as const,
    expires_in: ACCESS_TOKEN_TTL_SECONDS,
    id_token: idToken,
    scope: row.scopes.join(' '),
  };
}

/** The claims the scopes release: `phone` the verified number, `profile` the chat profile name. */
function userClaims(scopes: string[], user: { phone: string | null; name: string | null }) {
  return {
    ...(scopes.includes('phone') && user.phone ? { phone_number: user.phone, phone_number_verified: true } : {}),
    ...(scopes.includes('profile') && user.name ? { name: user.name } : {}),
  };
}

export const getOidcUserInfo: Handler<operations['getOidcUserInfo']> = async (request, reply) => {
  const { platform } = request.server;
  const row = await platform.store.db
    .selectFrom('login_oidc_tokens')
    .select(['sub', 'phone', 'name', 'scopes'])
    .where('id', '=', request.auth!.oidcTokenId!)
    .executeTakeFirstOrThrow();
  reply.header('cache-control', 'no-store');
  return { sub: row.sub, ...userClaims(row.scopes, row) };
};

/** A live access token of the app in the path, or null: another app's token is no token here. */
async function verifyAccessToken(platform: Platform, appId: string | undefined, value: string | undefined): Promise<AuthContext | null> {
  if (!value || !appId || !ACCESS_TOKEN_PATTERN.test(value)) return null;
  const row = await platform.store.db
    .selectFrom('login_oidc_tokens as t')
    .innerJoin('login_apps as a', 'a.id', 't.app_id')
    .select(['t.id', 't.digest', 't.app_id', 't.scopes', 't.expires_at', 't.revoked_at', 'a.workspace_id'])
    .where('t.digest', '=', platform.secrets.digest(value))
    .executeTakeFirst();
  if (!row || !platform.secrets.matches(value, row.digest) || row.app_id !== appId) return null;
  if (row.revoked_at || row.expires_at.getTime() <= platform.now().getTime()) return null;
  return { workspaceId: row.workspace_id, kind: 'login_oidc', scopes: row.scopes, appId: row.app_id, oidcTokenId: row.id };
}

registerScheme(
  'OidcAccessToken',
  {
    verify: (request, { app }) => verifyAccessToken(app.platform, (request.params as { appId?: string }).appId, authorizationCredential(request, 'Bearer')),
    challenge: () => `Bearer realm="${REALM}", error="invalid_token"`,
  },
  { api: 'login' },
);
