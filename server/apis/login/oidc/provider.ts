// Each Login app is an OpenID provider of its own: issuer `{PUBLIC_URL}/login/oidc/{appId}`,
// whose one client is the app itself (client id: the app id; client secret: the app's API key,
// or none for a public app, which must use PKCE). One issuer per app keeps every ID token's
// `iss` and `aud` naming the same app, so a token of one app never validates for another.
//
// `sub` is a keyed hash of (app, phone number): stable for a person across sign-ins to one app,
// different between apps (pairwise), and never the number itself. It is keyed with the server's
// digest key (DATA_DIR's master key): a new master key changes every `sub`.
import { createHmac } from 'node:crypto';
import type { Selectable } from 'kysely';
import { RESOURCE_ID } from '#server/lib/ids.js';
import type { Platform } from '#server/platform.js';
import type { LoginAppsTable } from '#server/store/schema.js';

export type OidcApp = Selectable<LoginAppsTable>;

export const OIDC_BASE_PATH = '/login/oidc';
/** Codes are exchanged at once by the client's backend: one minute is plenty (RFC 6749 §4.1.2 allows up to 10). */
export const CODE_TTL_SECONDS = 60;
export const ACCESS_TOKEN_TTL_SECONDS = 600;
export const ID_TOKEN_TTL_SECONDS = 600;
/** How long the sign-in page's request lives: the session's own expiry bounds each attempt. */
export const REQUEST_TTL_SECONDS = 30 * 60;
export const SCOPES_SUPPORTED = ['openid', 'phone', 'profile'] as const;
export const CLAIMS_SUPPORTED = ['iss', 'sub', 'aud', 'iat', 'exp', 'auth_time', 'amr', 'nonce', 'phone_number', 'phone_number_verified', 'name'];
/** `amr` names the chat channel the phone was proven by; a typed code adds `otp` (RFC 8176). */
export const AMR_CHANNEL = 'whatsapp';

export const CODE_PATTERN = /^loc_[0-9A-Za-z]{32}$/;
export const ACCESS_TOKEN_PATTERN = /^lat_[0-9A-Za-z]{40}$/;

export function oidcIssuer(platform: Pick<Platform, 'config'>, appId: string): string {
  return `${platform.config.publicUrl}${OIDC_BASE_PATH}/${appId}`;
}

/** The app behind an issuer path, or undefined (unknown, malformed, or the workspace's own links app). */
export async function findOidcApp(platform: Platform, appId: string): Promise<OidcApp | undefined> {
  if (!RESOURCE_ID.test(appId)) return undefined;
  return platform.store.db.selectFrom('login_apps').selectAll().where('id', '=', appId).where('purpose', '=', 'client').executeTakeFirst();
}

/** The pairwise subject of `phone` at `appId`: 32 base64url characters of an HMAC, never the number. */
export function subjectOf(platform: Platform, appId: string, phone: string): string {
  // A key of its own, derived from the digest key: a `sub` is public, digests of secrets are not.
  const key = createHmac('sha256', platform.secrets.digest('login-oidc-subject-key')).update(appId).digest();
  return createHmac('sha256', key).update(phone).digest('base64url').slice(0, 32);
}

/** The granted scopes: `openid` first, then what the request asked for among the supported ones. */
export function grantedScopes(asked: string[]): string[] {
  return SCOPES_SUPPORTED.filter((s) => asked.includes(s));
}

export function providerMetadata(platform: Platform, appId: string) {
  const issuer = oidcIssuer(platform, appId);
  const base = platform.config.publicUrl;
  return {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    userinfo_endpoint: `${issuer}/userinfo`,
    jwks_uri: `${base}/v1/auth/.well-known/jwks.json`,
    scopes_supported: [...SCOPES_SUPPORTED],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code'],
    subject_types_supported: ['pairwise'],
    id_token_signing_alg_values_supported: ['ES256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    code_challenge_methods_supported: ['S256'],
    claims_supported: CLAIMS_SUPPORTED,
    amr_values_supported: [AMR_CHANNEL, 'otp'],
    authorization_response_iss_parameter_supported: true,
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    service_documentation: `${base}/docs/login/getting-started`,
  };
}
