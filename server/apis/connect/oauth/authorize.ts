// The authorize step (RFC 6749 §4.1.1–4.1.2, PKCE RFC 7636, `iss` RFC 9207): checking the
// request, the consent decision and the code it issues.
//
// While `client_id` or `redirect_uri` is missing, unknown or not registered for the client
// character for character, nothing is redirected (bad-inputs C1, C2): the browser gets an error page.
// Every other problem goes back to the client's redirect URI with `error`, `state` and `iss`.
// `state` is returned byte for byte (URL-encoded once by URLSearchParams).
import { base62, newId } from '#server/lib/ids.js';
import { sameText } from '#server/lib/signatures.js';
import type { Platform } from '#server/platform.js';
import { clientById, type ClientRow } from './clients.js';
import { upsertGrant } from './grants.js';
import { CODE_TTL_SECONDS, SCOPES, newCode, orderScopes } from './tokens.js';

/** Parameters of the authorization request that the consent form carries through its post. */
export const CARRIED = ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'code_challenge', 'code_challenge_method'] as const;
// The lengths are the contract's (AuthorizeQuery), which GET /connect/authorize validates before
// this runs; the decision form's post has no schema, so they are checked here too.
const PREFILL_LIMITS = { org_name: 100, slug: 40, email: 254, name: 100 } as const;
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export interface AuthRequest {
  client: ClientRow;
  redirectUri: string;
  scopes: string[];
  state?: string;
  codeChallenge?: string;
  /** The request's own parameters, as received, for the form and the return after sign-in. */
  carried: Record<(typeof CARRIED)[number], string | undefined>;
  prefill: Partial<Record<keyof typeof PREFILL_LIMITS, string>>;
}

export type AuthorizeOutcome =
  | { kind: 'invalid_client'; message: string }
  | { kind: 'error_redirect'; location: string }
  | { kind: 'ok'; request: AuthRequest };

/** The redirect URI with our parameters appended (after any query it was registered with). */
export function redirectTo(redirectUri: string, params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.append(name, value);
  return `${redirectUri}${redirectUri.includes('?') ? '&' : '?'}${query.toString()}`;
}

/** A single string parameter; repeated parameters (arrays) count as invalid. */
function single(params: Record<string, unknown>, name: string): { value?: string; invalid: boolean } {
  const value = params[name];
  if (value === undefined || value === '') return { invalid: false };
  return typeof value === 'string' ? { value, invalid: false } : { invalid: true };
}

export async function checkAuthorizeRequest(platform: Platform, params: Record<string, unknown>): Promise<AuthorizeOutcome> {
  const clientId = single(params, 'client_id');
  const redirect = single(params, 'redirect_uri');
  if (!clientId.value || clientId.value.length > 128)
    return { kind: 'invalid_client', message: 'The app that sent you here is not known (client_id is missing or unknown).' };
  const client = await clientById(platform, clientId.value);
  if (!client) return { kind: 'invalid_client', message: 'The app that sent you here is not known (client_id is missing or unknown).' };
  if (!redirect.value || !client.redirect_uris.includes(redirect.value)) {
    return { kind: 'invalid_client', message: 'The redirect URI is not registered for this app.' };
  }
  const redirectUri = redirect.value;
  const stateParam = single(params, 'state');
  const state = stateParam.value !== undefined && stateParam.value.length <= 1024 ? stateParam.value : undefined;
  const iss = platform.config.publicUrl;
  const fail = (error: string, description: string): AuthorizeOutcome => ({
    kind: 'error_redirect',
    location: redirectTo(redirectUri, { error, error_description: description, state, iss }),
  });
  if (stateParam.invalid || (stateParam.value?.length ?? 0) > 1024) return fail('invalid_request', 'state must be one value of at most 1024 characters.');
  const responseType = single(params, 'response_type');
  if (responseType.invalid || !responseType.value) return fail('invalid_request', 'response_type is required and must be code.');
  if (responseType.value !== 'code') return fail('unsupported_response_type', 'response_type must be code.');
  const challenge = single(params, 'code_challenge');
  const method = single(params, 'code_challenge_method');
  if (challenge.invalid || method.invalid) return fail('invalid_request', 'code_challenge and code_challenge_method must be single values.');
  if (method.value !== undefined && method.value !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256; plain is not supported.');
  if (challenge.value !== undefined) {
    if (method.value !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256.');
    if (!CHALLENGE.test(challenge.value)) return fail('invalid_request', 'code_challenge must be 43 base64url characters.');
  } else if (method.value !== undefined) {
    return fail('invalid_request', 'code_challenge_method was sent without code_challenge.');
  } else if (client.client_type === 'public') {
    return fail('invalid_request', 'Public clients must use PKCE (code_challenge with S256).');
  }
  const scope = single(params, 'scope');
  if (scope.invalid || (scope.value?.length ?? 0) > 512) return fail('invalid_request', 'scope must be one value of at most 512 characters.');
  const asked = (scope.value ?? '').split(' ').filter(Boolean);
  if (!asked.length) return fail('invalid_scope', 'scope is required: a space-separated list of Connect scopes.');
  const unknown = asked.find((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown !== undefined) return fail('invalid_scope', `Unknown scope '${unknown.slice(0, 64)}'.`);
  const carried = Object.fromEntries(CARRIED.map((name) => [name, single(params, name).value])) as AuthRequest['carried'];
  const prefill: AuthRequest['prefill'] = {};
  for (const [name, max] of Object.entries(PREFILL_LIMITS) as [keyof typeof PREFILL_LIMITS, number][]) {
    const value = single(params, name).value;
    if (value !== undefined && value.length <= max) prefill[name] = value;
  }
  return { kind: 'ok', request: { client, redirectUri, scopes: orderScopes(asked), state, codeChallenge: challenge.value, carried, prefill } };
}

/** The query string that repeats this authorization request (for `next` after sign-in). */
export function authorizeQuery(request: AuthRequest): string {
  const query = new URLSearchParams();
  for (const name of CARRIED) if (request.carried[name] !== undefined) query.append(name, request.carried[name]!);
  return query.toString();
}

// ---- Form tokens ------------------------------------------------------------------------------

const FORM_TOKEN_TTL_SECONDS = 30 * 60;

/**
 * A form token bound to `binding` (the browser's session cookie for consent, a nonce cookie for
 * sign-up) and to the authorization request: another browser's token, or the token of another
 * request, does not verify (bad-inputs C15). `exp.hmac`, stateless.
 */
export function formToken(platform: Platform, purpose: string, binding: string, request: AuthRequest): string {
  const exp = Math.floor(platform.now().getTime() / 1000) + FORM_TOKEN_TTL_SECONDS;
  return `${exp}.${mac(platform, purpose, binding, request, exp)}`;
}

export function checkFormToken(platform: Platform, purpose: string, binding: string | undefined, request: AuthRequest, token: unknown): boolean {
  if (!binding || typeof token !== 'string') return false;
  const [expText, given, extra] = token.split('.');
  const exp = Number(expText);
  if (!given || extra !== undefined || !Number.isInteger(exp) || exp * 1000 < platform.now().getTime()) return false;
  return sameText(given, mac(platform, purpose, binding, request, exp));
}

function mac(platform: Platform, purpose: string, binding: string, request: AuthRequest, exp: number): string {
  return platform.secrets.digest(['connect-form', purpose, binding, authorizeQuery(request), String(exp)].join('\0'));
}

export const newNonce = () => base62(32);

// ---- Decision -----------------------------------------------------------------------------------

/** The owner approved: the grant (created or updated) and a code for it, returned in the redirect. */
export async function approve(platform: Platform, request: AuthRequest, owner: { ownerId: string; workspaceId: string }): Promise<string> {
  const grant = await upsertGrant(platform, { workspaceId: owner.workspaceId, clientId: request.client.id, ownerId: owner.ownerId, scopes: request.scopes });
  const code = newCode();
  const now = platform.now();
  await platform.store.db
    .insertInto('connect_codes')
    .values({
      id: newId('code'),
      digest: platform.secrets.digest(code),
      workspace_id: owner.workspaceId,
      client_id: request.client.id,
      grant_id: grant.id,
      redirect_uri: request.redirectUri,
      code_challenge: request.codeChallenge ?? null,
      scopes: request.scopes,
      expires_at: new Date(now.getTime() + CODE_TTL_SECONDS * 1000),
      created_at: now,
    })
    .execute();
  return redirectTo(request.redirectUri, { code, state: request.state, iss: platform.config.publicUrl });
}

export function denied(platform: Platform, request: AuthRequest): string {
  return redirectTo(request.redirectUri, {
    error: 'access_denied',
    error_description: 'The owner denied access.',
    state: request.state,
    iss: platform.config.publicUrl,
  });
}
