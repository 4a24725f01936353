// The authorization endpoint of an app's OpenID provider (OpenID Connect Core §3.1.2): checks
// the request, records it, starts a login session and shows the hosted sign-in page.
//
// While the app is unknown, `client_id` is not the app, or `redirect_uri` is missing or not one
// of the app's registered URIs character for character, nothing is redirected: the browser gets
// the error page (a parameter repeated or too long is refused by the contract's schema and gets
// it too, from `oidcAuthorizeErrorHandler`). Every other problem goes back to the redirect URI
// with `error`, `error_description`, `state` and `iss` (RFC 6749 §4.1.2.1, RFC 9207)
// (bad-inputs O1, O2).
//
// The request is bound to this browser by a random cookie whose keyed digest the request row
// keeps: the page's calls (complete, codes) need it, so a request id seen elsewhere is no use.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { operations } from '#generated/login/types.js';
import { redirectTo } from '#server/apis/connect/oauth/authorize.js';
import type { Handler } from '#server/lib/handler-types.js';
import { base62, newId } from '#server/lib/ids.js';
import { sendProblem } from '#server/lib/problems.js';
import { toProblem } from '#server/plugins/problems.js';
import type { Platform } from '#server/platform.js';
import { toE164 } from '#server/lib/phone.js';
import { createLoginSession } from '../sessions.js';
import { sendOidcErrorPage, sendSignInPage, signInView } from './page.js';
import { OIDC_BASE_PATH, REQUEST_TTL_SECONDS, findOidcApp, grantedScopes, oidcIssuer, type OidcApp } from './provider.js';

const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
const BROWSER_COOKIE = (production: boolean) => (production ? '__Secure-login_oidc' : 'login_oidc');
const BROWSER_NONCE = /^[0-9A-Za-z]{32}$/;
const REDIRECT_HEADERS = { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' };

export interface OidcAuthRequest {
  app: OidcApp;
  redirectUri: string;
  scopes: string[];
  state?: string;
  nonce?: string;
  codeChallenge?: string;
  loginHint?: string;
}

type Outcome = { kind: 'error_page'; message: string } | { kind: 'error_redirect'; location: string } | { kind: 'ok'; request: OidcAuthRequest };

const text = (params: Record<string, unknown>, name: string): string | undefined => {
  const value = params[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
};

export async function checkOidcRequest(platform: Platform, appId: string, params: Record<string, unknown>): Promise<Outcome> {
  const app = await findOidcApp(platform, appId);
  if (!app) return { kind: 'error_page', message: 'The app that sent you here is not known.' };
  const clientId = text(params, 'client_id');
  if (clientId !== app.id) return { kind: 'error_page', message: 'client_id is missing or is not this app.' };
  const redirectUri = text(params, 'redirect_uri');
  if (!redirectUri || !app.oidc_redirect_uris.includes(redirectUri)) {
    return { kind: 'error_page', message: 'The redirect URI is not registered for this app.' };
  }
  const state = text(params, 'state');
  const fail = (error: string, description: string): Outcome => ({
    kind: 'error_redirect',
    location: redirectTo(redirectUri, { error, error_description: description, state, iss: oidcIssuer(platform, app.id) }),
  });
  if (params.request !== undefined) return fail('request_not_supported', 'Request objects (request) are not supported.');
  if (params.request_uri !== undefined) return fail('request_uri_not_supported', 'request_uri is not supported.');
  const responseType = text(params, 'response_type');
  if (!responseType) return fail('invalid_request', 'response_type is required and must be code.');
  if (responseType !== 'code') return fail('unsupported_response_type', 'response_type must be code.');
  const asked = (text(params, 'scope') ?? '').split(' ').filter(Boolean);
  if (!asked.includes('openid')) return fail('invalid_scope', 'scope must contain openid.');
  const challenge = text(params, 'code_challenge');
  const method = text(params, 'code_challenge_method');
  if (method !== undefined && method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256; plain is not supported.');
  if (challenge !== undefined) {
    if (method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256.');
    if (!CHALLENGE.test(challenge)) return fail('invalid_request', 'code_challenge must be 43 base64url characters.');
  } else if (method !== undefined) {
    return fail('invalid_request', 'code_challenge_method was sent without code_challenge.');
  } else if (app.oidc_client_type === 'public') {
    return fail('invalid_request', 'Public clients must use PKCE (code_challenge with S256).');
  }
  const prompt = (text(params, 'prompt') ?? '').split(' ').filter(Boolean);
  if (prompt.includes('none')) return fail('login_required', 'Signing in always needs the user to send a chat message; prompt=none cannot be met.');
  const hint = text(params, 'login_hint');
  return {
    kind: 'ok',
    request: {
      app,
      redirectUri,
      scopes: grantedScopes(asked),
      state,
      nonce: text(params, 'nonce'), // copied into the ID token as sent, never invented (bad-inputs O3)
      codeChallenge: challenge,
      loginHint: hint ? (toE164(hint) ?? undefined) : undefined,
    },
  };
}

/** This browser's nonce: the cookie's when it has a well-formed one, else a new one (set on the answer). */
function browserNonce(request: FastifyRequest, reply: FastifyReply): string {
  const { production } = request.server.config;
  const name = BROWSER_COOKIE(production);
  const current = request.server.parseCookie(request.headers.cookie ?? '')[name];
  if (current && BROWSER_NONCE.test(current)) return current;
  const nonce = base62(32);
  reply.header(
    'set-cookie',
    request.server.serializeCookie(name, nonce, {
      path: `${OIDC_BASE_PATH}/`,
      httpOnly: true,
      sameSite: 'lax',
      secure: production,
      maxAge: REQUEST_TTL_SECONDS,
    }),
  );
  return nonce;
}

/** The browser nonce a page call carries (its cookie), or undefined. */
export function browserNonceOf(request: FastifyRequest): string | undefined {
  const name = BROWSER_COOKIE(request.server.config.production);
  const value = request.cookies?.[name] ?? request.server.parseCookie(request.headers.cookie ?? '')[name];
  return value && BROWSER_NONCE.test(value) ? value : undefined;
}

export const oidcAuthorize: Handler<operations['oidcAuthorize']> = async (request, reply) => {
  const { platform } = request.server;
  const outcome = await checkOidcRequest(platform, request.params.appId, request.query as Record<string, unknown>);
  if (outcome.kind === 'error_page') return sendOidcErrorPage(reply, 400, outcome.message) as never;
  if (outcome.kind === 'error_redirect') return reply.code(302).headers(REDIRECT_HEADERS).header('location', outcome.location).send() as never;
  const auth = outcome.request;
  const nonce = browserNonce(request, reply);
  const now = platform.now();
  const requestId = newId('lor');
  const { db } = platform.store;
  // Old requests go a few at a time with each new one: nothing else reads them after expiry.
  await db
    .deleteFrom('login_oidc_requests')
    .where('id', 'in', (eb) => eb.selectFrom('login_oidc_requests').select('id').where('expires_at', '<', now).limit(20))
    .execute();
  await db
    .insertInto('login_oidc_requests')
    .values({
      id: requestId,
      app_id: auth.app.id,
      workspace_id: auth.app.workspace_id,
      browser_digest: platform.secrets.digest(`login-oidc-browser\0${nonce}`),
      redirect_uri: auth.redirectUri,
      state: auth.state ?? null,
      nonce: auth.nonce ?? null,
      code_challenge: auth.codeChallenge ?? null,
      scopes: auth.scopes,
      created_at: now,
      expires_at: new Date(now.getTime() + REQUEST_TTL_SECONDS * 1000),
    })
    .execute();
  const session = await startMessageSession(request.server, auth.app, requestId);
  return sendSignInPage(reply, auth.app.name, await signInView(request.server, { app: auth.app, requestId, session, loginHint: auth.loginHint })) as never;
};

/** A message-mode session for the request (the page's first, and each restart). */
export async function startMessageSession(server: FastifyRequest['server'], app: OidcApp, requestId: string) {
  const session = await createLoginSession(server, app, {});
  await server.platform.store.db.updateTable('login_oidc_requests').set({ session_id: session.sessionId }).where('id', '=', requestId).execute();
  return session;
}

/**
 * The contract refused the query (a parameter repeated or too long), or the session could not be
 * started (the plan's monthly cap, no usable number): the 400 error page, never a redirect.
 * Rate limits (429) and server errors stay problem+json, like everywhere else.
 */
export function oidcAuthorizeErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { body, headers } = toProblem(error);
  if (body.status === 429 || body.status >= 500) {
    if (body.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendProblem(reply, body, headers);
  }
  const first = body.errors?.[0];
  if (body.status !== 400 || !first) return sendOidcErrorPage(reply, 400, body.detail ?? body.title);
  return sendOidcErrorPage(reply, 400, `The sign-in request is malformed (${first.pointer.replace(/^\/query\//, '')}: ${first.detail}).`);
}
