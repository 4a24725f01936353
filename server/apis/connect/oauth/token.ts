// The token endpoint (RFC 6749 §4.1.3, §6) and revocation (RFC 7009). Every answer carries
// `Cache-Control: no-store` and `Pragma: no-cache`; errors are RFC 6749 §5.2 JSON.
//
// Codes are single-use: the exchange locks the code row, and a code already used answers
// `invalid_grant` and revokes every token of its family (the tokens it issued and those refreshed
// from them, bad-inputs C8). Refresh tokens rotate the same way: a retired one presented again revokes the
// family (RFC 9700 §4.14), unless its own client presents it again within the grace period
// (REFRESH_TOKEN_REUSE_GRACE_MS, RFC 9700 §4.14.2), as concurrent workers of one client do.
// PKCE S256 is checked when the code was issued with a challenge; a verifier sent for a code
// without one is refused too (PKCE downgrade, RFC 9700 §4.8.2).
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { operations } from '#generated/connect/types.js';
import type { Handler } from '#server/lib/handler-types.js';
import { sameText } from '#server/lib/signatures.js';
import type { Platform } from '#server/platform.js';
import { authenticateClient, param } from './client-auth.js';
import type { ClientRow } from './clients.js';
import { NO_STORE, OAuthFailure, invalidGrant, invalidRequest, sendOAuthError } from './oauth-errors.js';
import { endGrantIfIdle } from './grants.js';
import { CODE_PATTERN, REFRESH_TOKEN_PATTERN, findToken, issueTokens, lifetimesOf, orderScopes, revokeFamily, type Db, type IssuedTokens } from './tokens.js';

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** base64url(SHA-256(verifier)) compared in constant time with the stored challenge. */
export function pkceMatches(verifier: string, challenge: string): boolean {
  return sameText(createHash('sha256').update(verifier, 'ascii').digest('base64url'), challenge);
}

async function exchangeCode(platform: Platform, client: ClientRow, body: unknown): Promise<{ tokens: IssuedTokens; workspaceId: string }> {
  const code = param(body, 'code', 512);
  const redirectUri = param(body, 'redirect_uri', 2048);
  const verifier = param(body, 'code_verifier', 128);
  if (!code) throw invalidRequest('code is required.');
  if (!redirectUri) throw invalidRequest('redirect_uri is required.');
  if (!CODE_PATTERN.test(code)) throw invalidGrant();
  const now = platform.now();
  const { secrets } = platform;
  // A reused code must leave its family revoked even though the request fails, so the
  // transaction returns the failure instead of throwing (which would roll the revocation back).
  const outcome = await platform.store.db.transaction().execute(async (tx): Promise<OAuthFailure | { tokens: IssuedTokens; workspaceId: string }> => {
    const row = await tx.selectFrom('connect_codes').selectAll().where('digest', '=', secrets.digest(code)).forUpdate().executeTakeFirst();
    if (!row || !secrets.matches(code, row.digest) || row.client_id !== client.id) return invalidGrant();
    if (row.used_at) {
      await revokeFamily(tx, row.id, now);
      await endGrantIfIdle(tx, row.grant_id, 'refresh_token_reuse', now);
      return invalidGrant();
    }
    if (row.expires_at.getTime() <= now.getTime()) return invalidGrant();
    if (row.redirect_uri !== redirectUri || !client.redirect_uris.includes(redirectUri))
      return invalidGrant('redirect_uri differs from the one sent to authorize.');
    if (row.code_challenge) {
      if (!verifier || !VERIFIER.test(verifier) || !pkceMatches(verifier, row.code_challenge))
        return invalidGrant('The code_verifier does not match the code_challenge.');
    } else if (verifier) {
      return invalidGrant('This code was issued without a code_challenge.');
    }
    const grant = await tx.selectFrom('connect_grants').select(['id', 'workspace_id', 'client_id', 'status']).where('id', '=', row.grant_id).executeTakeFirst();
    if (grant?.status !== 'active') return invalidGrant();
    await tx.updateTable('connect_codes').set({ used_at: now }).where('id', '=', row.id).execute();
    return { tokens: await issueTokens(tx, secrets, now, grant, row.id, row.scopes, null, lifetimesOf(client)), workspaceId: grant.workspace_id };
  });
  if (outcome instanceof OAuthFailure) throw outcome;
  return outcome;
}

/**
 * Whether a retired refresh token, presented again by its own client, is inside its grace period
 * (REFRESH_TOKEN_REUSE_GRACE_MS): rotated less than the window ago, and none of the refresh tokens
 * issued from it used yet. The second condition keeps the grace to the latest generation: once the
 * chain has moved on, an older token coming back is reuse, however recent.
 */
async function inGracePeriod(tx: Db, row: { id: string; rotated_at: Date | null }, now: Date, graceMs: number): Promise<boolean> {
  if (!row.rotated_at || now.getTime() - row.rotated_at.getTime() >= graceMs) return false;
  const usedChild = await tx
    .selectFrom('connect_tokens')
    .select('id')
    .where('parent_id', '=', row.id)
    .where('kind', '=', 'refresh')
    .where('rotated_at', 'is not', null)
    .executeTakeFirst();
  return !usedChild;
}

async function refresh(platform: Platform, client: ClientRow, body: unknown): Promise<{ tokens: IssuedTokens; workspaceId: string }> {
  const value = param(body, 'refresh_token', 512);
  const scope = param(body, 'scope', 512);
  if (!value) throw invalidRequest('refresh_token is required.');
  if (!REFRESH_TOKEN_PATTERN.test(value)) throw invalidGrant();
  const now = platform.now();
  const { secrets } = platform;
  const outcome = await platform.store.db.transaction().execute(async (tx): Promise<OAuthFailure | { tokens: IssuedTokens; workspaceId: string }> => {
    const found = await findToken(tx, secrets, value);
    if (found?.kind !== 'refresh') return invalidGrant();
    // The row lock orders concurrent refreshes of one token: the first rotates it, the others
    // then see `rotated_at` and are answered by the grace period or revoke the family.
    const row = await tx.selectFrom('connect_tokens').selectAll().where('id', '=', found.id).forUpdate().executeTakeFirstOrThrow();
    if (row.client_id !== client.id) {
      // Another client's token: refused. A retired one has escaped its client, so it revokes
      // the family as a reuse does; a live one changes nothing (bad-inputs C10's rule for codes).
      if (row.rotated_at) {
        await revokeFamily(tx, row.family_id, now);
        await endGrantIfIdle(tx, row.grant_id, 'refresh_token_reuse', now);
      }
      return invalidGrant();
    }
    if (row.revoked_at) return invalidGrant();
    if (row.rotated_at && !(await inGracePeriod(tx, row, now, platform.config.refreshTokenReuseGraceMs))) {
      await revokeFamily(tx, row.family_id, now); // a retired refresh token came back: stolen or replayed
      await endGrantIfIdle(tx, row.grant_id, 'refresh_token_reuse', now);
      return invalidGrant();
    }
    if (row.expires_at.getTime() <= now.getTime()) return invalidGrant();
    const grant = await tx.selectFrom('connect_grants').select(['id', 'workspace_id', 'client_id', 'status']).where('id', '=', row.grant_id).executeTakeFirst();
    if (grant?.status !== 'active') return invalidGrant();
    let scopes = row.scopes;
    if (scope !== undefined) {
      const asked = scope.split(' ').filter(Boolean);
      if (!asked.length || asked.some((s) => !row.scopes.includes(s)))
        return new OAuthFailure('invalid_scope', 'scope must be a subset of the scopes granted.');
      scopes = orderScopes(asked);
    }
    // Inside the grace period the token stays retired at its first rotation, and the answer is
    // a new pair in the same family beside the one that rotation issued: both stay valid, and a
    // later reuse or revocation takes every pair of the family (docs/connect-oauth.md).
    if (!row.rotated_at) await tx.updateTable('connect_tokens').set({ rotated_at: now }).where('id', '=', row.id).execute();
    return { tokens: await issueTokens(tx, secrets, now, grant, row.family_id, scopes, row.id, lifetimesOf(client)), workspaceId: grant.workspace_id };
  });
  if (outcome instanceof OAuthFailure) throw outcome;
  return outcome;
}

async function oauthAnswer(reply: FastifyReply, work: () => Promise<unknown>) {
  reply.headers(NO_STORE);
  try {
    return await work();
  } catch (error) {
    if (error instanceof OAuthFailure) return sendOAuthError(reply, error);
    throw error;
  }
}

export const createToken: Handler<operations['createToken']> = async (request, reply) =>
  oauthAnswer(reply, async () => {
    const platform = request.server.platform;
    const grantType = param(request.body, 'grant_type', 64);
    if (!grantType) throw invalidRequest('grant_type is required.');
    if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
      throw new OAuthFailure('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.');
    }
    const client = await authenticateClient(platform, request as FastifyRequest);
    const { tokens, workspaceId } =
      grantType === 'authorization_code' ? await exchangeCode(platform, client, request.body) : await refresh(platform, client, request.body);
    const workspace = await platform.store.db.selectFrom('workspaces').select(['id', 'slug']).where('id', '=', workspaceId).executeTakeFirstOrThrow();
    return {
      access_token: tokens.access_token,
      token_type: 'Bearer' as const,
      expires_in: tokens.expires_in,
      scope: tokens.scopes.join(' '),
      refresh_token: tokens.refresh_token,
      org_id: workspace.id,
      org_slug: workspace.slug,
    };
  }) as never;

/**
 * RFC 7009: a refresh token takes its whole family with it (the access tokens issued with it and
 * from it); an access token only itself. Unknown tokens and other clients' tokens answer 200 and
 * change nothing, so the answer reveals nothing.
 */
export const revokeToken: Handler<operations['revokeToken']> = async (request, reply) =>
  oauthAnswer(reply, async () => {
    const platform = request.server.platform;
    const client = await authenticateClient(platform, request as FastifyRequest);
    const value = param(request.body, 'token', 512);
    if (!value) throw invalidRequest('token is required.');
    const token = await findToken(platform.store.db, platform.secrets, value);
    if (token && token.client_id === client.id && !token.revoked_at) {
      const now = platform.now();
      if (token.kind === 'refresh') {
        await platform.store.db.transaction().execute(async (tx) => {
          await revokeFamily(tx, token.family_id, now);
          await endGrantIfIdle(tx, token.grant_id, 'client_revoked', now);
        });
      } else
        await platform.store.db.updateTable('connect_tokens').set({ revoked_at: now }).where('id', '=', token.id).where('revoked_at', 'is', null).execute();
    }
    return reply.code(200).header('cache-control', 'no-store').send();
  }) as never;
