// The ConnectOAuth scheme: `Authorization: Bearer cat_…` on the Connect API. The token is looked
// up by digest on every call (no cache), so expiry, revocation (RFC 7009, grant revocation,
// client deletion, code reuse) takes effect on the very next request (bad-inputs A6).
import { markDeadCredential } from '#server/auth/auth-failures.js';
import { authorizationCredential, registerScheme, type AuthContext } from '#server/auth/authenticate.js';
import type { Platform } from '#server/platform.js';
import { ACCESS_TOKEN_PATTERN } from './tokens.js';

declare module '../../../auth/authenticate.js' {
  interface AuthKinds {
    connect_token: true;
  }
  interface AuthContext {
    /** The Connect client the token was issued to (kind `connect_token`). */
    clientId?: string;
    /** The grant the token belongs to (kind `connect_token`). */
    grantId?: string;
    /** The access token's row id (kind `connect_token`). */
    tokenId?: string;
  }
}

/** `last_used_at` of a grant is written at most this often. */
const TOUCH_EVERY_MS = 60_000;

/**
 * The caller a live access token proves, or null. `onDead` hears the workspace of a token we
 * issued that is revoked (by RFC 7009, its grant, a reused code or refresh token) or expired.
 */
export async function verifyAccessToken(platform: Platform, value: string | undefined, onDead?: (workspaceId: string) => void): Promise<AuthContext | null> {
  if (!value || !ACCESS_TOKEN_PATTERN.test(value)) return null;
  const { db } = platform.store;
  const now = platform.now();
  const row = await db
    .selectFrom('connect_tokens as t')
    .innerJoin('connect_grants as g', 'g.id', 't.grant_id')
    .select(['t.id', 't.digest', 't.workspace_id', 't.client_id', 't.grant_id', 't.scopes', 't.expires_at', 't.revoked_at', 'g.status', 'g.last_used_at'])
    .where('t.digest', '=', platform.secrets.digest(value))
    .where('t.kind', '=', 'access')
    .executeTakeFirst();
  if (!row || !platform.secrets.matches(value, row.digest)) return null;
  if (row.revoked_at || row.status !== 'active' || row.expires_at.getTime() <= now.getTime()) {
    onDead?.(row.workspace_id);
    return null;
  }
  if (!row.last_used_at || now.getTime() - row.last_used_at.getTime() >= TOUCH_EVERY_MS) {
    await db.updateTable('connect_grants').set({ last_used_at: now }).where('id', '=', row.grant_id).execute();
  }
  return { workspaceId: row.workspace_id, kind: 'connect_token', scopes: row.scopes, clientId: row.client_id, grantId: row.grant_id, tokenId: row.id };
}

registerScheme(
  'ConnectOAuth',
  {
    verify: (request, { app }) =>
      verifyAccessToken(app.platform, authorizationCredential(request, 'Bearer'), (workspaceId) => markDeadCredential(request, 'authorization', workspaceId)),
    // The contract documents the same challenge for a missing, expired or revoked token.
    challenge: (api) => `Bearer realm="${api}", error="invalid_token"`,
    insufficientScope: (api, scope) => `Bearer realm="${api}", error="insufficient_scope", scope="${scope}"`,
  },
  { api: 'connect' },
);
