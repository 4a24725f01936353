// Token introspection (RFC 7662) for resource servers that do not parse Connect tokens. The
// caller authenticates as a client, as at the token endpoint, and learns about its own tokens
// only: anything else (unknown, malformed, expired, revoked, rotated, of an ended grant, or of
// another client) is `{"active": false}` alone, the same answer in every case, so a client cannot
// probe which tokens exist (bad-inputs O8).
import type { FastifyRequest } from 'fastify';
import type { operations } from '#generated/connect/types.js';
import type { Handler } from '#server/lib/handler-types.js';
import { authenticateClient, param } from './client-auth.js';
import { NO_STORE, OAuthFailure, invalidRequest, sendOAuthError } from './oauth-errors.js';
import { findToken } from './tokens.js';

export const introspectToken: Handler<operations['introspectToken']> = async (request, reply) => {
  reply.headers(NO_STORE);
  try {
    const platform = request.server.platform;
    const client = await authenticateClient(platform, request as FastifyRequest);
    const value = param(request.body, 'token', 512);
    param(request.body, 'token_type_hint', 64); // a hint only; both kinds are looked up by digest
    if (!value) throw invalidRequest('token is required.');
    const inactive = { active: false };
    const token = await findToken(platform.store.db, platform.secrets, value);
    const now = platform.now();
    if (!token || token.client_id !== client.id || token.revoked_at || token.rotated_at || token.expires_at.getTime() <= now.getTime()) return inactive;
    const grant = await platform.store.db.selectFrom('connect_grants').select('status').where('id', '=', token.grant_id).executeTakeFirst();
    if (grant?.status !== 'active') return inactive;
    return {
      active: true,
      scope: token.scopes.join(' '),
      client_id: client.id,
      token_type: token.kind === 'access' ? ('access_token' as const) : ('refresh_token' as const),
      exp: Math.floor(token.expires_at.getTime() / 1000),
      iat: Math.floor(token.created_at.getTime() / 1000),
      iss: platform.config.publicUrl,
      sub: token.workspace_id,
      org_id: token.workspace_id,
    };
  } catch (error) {
    if (error instanceof OAuthFailure) return sendOAuthError(reply, error) as never;
    throw error;
  }
};
