// Connecting a Google account: the start of an OAuth 2.0 authorization-code flow with PKCE
// (RFC 7636, S256) for the configured client. The state is random, stored as a digest with the
// workspace and the sealed code verifier, and accepted for 10 minutes by the callback.
import { createHash, randomBytes } from 'node:crypto';
import type { operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newSecret } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';

export const GOOGLE_AUTHORIZE_URL = 'https://accounts.google.com/o/oauth2/v2/auth';
export const GOOGLE_SCOPES = ['openid', 'email', 'https://www.googleapis.com/auth/spreadsheets'];
const STATE_TTL_MS = 10 * 60 * 1000;

export const getGoogleConnectUrl: Handler<operations['getGoogleConnectUrl']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const { googleClientId, googleRedirectUri } = platform.config;
  if (!googleClientId || !googleRedirectUri) {
    throw new HttpProblem(422, 'unprocessable', 'This server has no Google OAuth client configured; set GOOGLE_CLIENT_ID and GOOGLE_REDIRECT_URI.');
  }
  const now = platform.now();
  const state = newSecret('gst_');
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const expiresAt = new Date(now.getTime() + STATE_TTL_MS);
  const db = platform.store.db;
  // Expired states of the workspace go as new ones come: the table stays small without a sweeper.
  await db.deleteFrom('google_connect_states').where('workspace_id', '=', workspaceId).where('expires_at', '<', now).execute();
  await db
    .insertInto('google_connect_states')
    .values({
      state_digest: platform.secrets.digest(state),
      workspace_id: workspaceId,
      code_verifier_enc: platform.secrets.encrypt(verifier),
      redirect_uri: googleRedirectUri,
      scopes: GOOGLE_SCOPES.join(' '),
      expires_at: expiresAt,
      created_at: now,
    })
    .execute();
  const url = new URL(GOOGLE_AUTHORIZE_URL);
  url.search = new URLSearchParams({
    client_id: googleClientId,
    redirect_uri: googleRedirectUri,
    response_type: 'code',
    scope: GOOGLE_SCOPES.join(' '),
    access_type: 'offline',
    // Without consent Google sends a refresh token only the first time an account connects.
    prompt: 'consent',
    include_granted_scopes: 'true',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
  }).toString();
  return { authorization_url: url.toString(), state, scopes: GOOGLE_SCOPES, expires_at: expiresAt.toISOString() };
};
