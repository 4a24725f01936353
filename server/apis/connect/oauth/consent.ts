// The browser side of authorize: GET /connect/authorize (the contract's `authorize`) and the
// consent form's POST to /connect/authorize/decision (a page route outside the contract, registered
// by setup.ts).
//
// The GET route is mounted from the contract before the cookie plugin exists, so it parses the
// Cookie header itself and sets no cookie through the plugin's onSend hook (it writes the one
// header it needs directly). The consent form's token is bound to the owner's session cookie
// (an HMAC over the cookie and the request, no server state); the sign-up form's to a nonce
// cookie. Posts are refused unless they come from this site (Sec-Fetch-Site / Origin).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { operations } from '#generated/connect/types.js';
import { issueOwnerToken } from '#server/auth/owner-jwt.js';
import { SIGN_IN_PATH, currentOwner, sessionCookieName } from '#server/auth/owner-session.js';
import { formField as field, hiddenFields, sameOriginPost } from '#server/html/forms.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { AUTHORIZE_PATH, DECISION_PATH, consentView, errorView, sendConsentPage, signUpClosedView, signUpView } from './consent-page.js';
import { approve, authorizeQuery, checkAuthorizeRequest, checkFormToken, denied, formToken, newNonce, type AuthRequest } from './authorize.js';

const SIGNUP_COOKIE = 'connect_signup';
const REDIRECT_HEADERS = { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' };

function ensureCookies(request: FastifyRequest): Record<string, string | undefined> {
  if (!request.cookies) request.cookies = request.server.parseCookie(request.headers.cookie ?? '');
  return request.cookies;
}

function sessionCookie(request: FastifyRequest): string | undefined {
  return ensureCookies(request)[sessionCookieName(request.server.config.production)];
}

const hidden = (request: AuthRequest) => hiddenFields(request.carried);

async function showConsent(request: FastifyRequest, reply: FastifyReply, auth: AuthRequest): Promise<FastifyReply> {
  const platform = request.server.platform;
  const owner = await currentOwner(request);
  if (!owner) {
    if (auth.prefill.org_name !== undefined || auth.prefill.slug !== undefined) return showSignUp(request, reply, auth, 200);
    const next = `${AUTHORIZE_PATH}?${authorizeQuery(auth)}`;
    return reply
      .code(302)
      .headers(REDIRECT_HEADERS)
      .header('location', `${platform.config.publicUrl}${SIGN_IN_PATH}?${new URLSearchParams({ next })}`)
      .send();
  }
  // The workspace's own first-party client: its owner is not asked (never another workspace's
  // owner, never a dynamically registered client). The code still goes to a registered URI only.
  if (auth.client.skip_consent && !auth.client.registration_digest && auth.client.workspace_id === owner.workspaceId) {
    return reply
      .code(302)
      .headers(REDIRECT_HEADERS)
      .header('location', await approve(platform, auth, owner))
      .send();
  }
  const workspace = await platform.store.db.selectFrom('workspaces').select('name').where('id', '=', owner.workspaceId).executeTakeFirstOrThrow();
  const csrfToken = formToken(platform, 'consent', sessionCookie(request)!, auth);
  const body = consentView({
    clientName: auth.client.name,
    workspaceName: workspace.name,
    ownerEmail: owner.email,
    scopes: auth.scopes,
    redirectUri: auth.redirectUri,
    hidden: hidden(auth),
    csrfToken,
  });
  return sendConsentPage(reply, 200, `Connect ${auth.client.name}`, body, auth.redirectUri);
}

function showSignUp(
  request: FastifyRequest,
  reply: FastifyReply,
  auth: AuthRequest,
  status: number,
  error?: string,
  values?: AuthRequest['prefill'],
  inviteCode?: string,
): FastifyReply {
  const { platform, config } = request.server;
  const nonce = newNonce();
  reply.header(
    'set-cookie',
    request.server.serializeCookie(SIGNUP_COOKIE, nonce, { path: AUTHORIZE_PATH, httpOnly: true, sameSite: 'lax', secure: config.production, maxAge: 30 * 60 }),
  );
  const signInUrl = `${SIGN_IN_PATH}?${new URLSearchParams({ next: `${AUTHORIZE_PATH}?${authorizeQuery(auth)}` })}`;
  if (config.signup === 'closed')
    return sendConsentPage(reply, 403, 'Sign-up closed', signUpClosedView({ clientName: auth.client.name, signInUrl }), auth.redirectUri);
  const body = signUpView({
    clientName: auth.client.name,
    prefill: values ?? auth.prefill,
    hidden: hidden(auth),
    signupToken: formToken(platform, 'signup', nonce, auth),
    signInUrl,
    error,
    ...(config.signup === 'invite' ? { invite: { code: inviteCode } } : {}),
  });
  return sendConsentPage(reply, status, `Connect ${auth.client.name}`, body, auth.redirectUri);
}

export const authorize: Handler<operations['authorize']> = async (request, reply) => {
  const outcome = await checkAuthorizeRequest(request.server.platform, (request.query ?? {}) as Record<string, unknown>);
  if (outcome.kind === 'invalid_client') return sendConsentPage(reply, 400, 'Cannot connect', errorView(outcome.message));
  if (outcome.kind === 'error_redirect') return reply.code(302).headers(REDIRECT_HEADERS).header('location', outcome.location).send();
  return showConsent(request as FastifyRequest, reply, outcome.request);
};

/** POST /connect/authorize/decision: the owner's decision, or the sign-up form of the same step. */
async function decide(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const platform = request.server.platform;
  const outcome = await checkAuthorizeRequest(platform, (request.body ?? {}) as Record<string, unknown>);
  if (outcome.kind === 'invalid_client') return sendConsentPage(reply, 400, 'Cannot connect', errorView(outcome.message));
  if (outcome.kind === 'error_redirect') return reply.code(303).headers(REDIRECT_HEADERS).header('location', outcome.location).send();
  const auth = outcome.request;
  if (field(request.body, 'action') === 'signup') return signUp(request, reply, auth);
  const owner = await currentOwner(request);
  if (!owner || !checkFormToken(platform, 'consent', sessionCookie(request), auth, field(request.body, 'csrf_token'))) throw forbidden();
  const decision = field(request.body, 'decision');
  if (decision !== 'approve' && decision !== 'deny') throw new HttpProblem(400, 'validation', 'Choose Approve or Deny.');
  const location = decision === 'approve' ? await approve(platform, auth, owner) : denied(platform, auth);
  return reply.code(303).headers(REDIRECT_HEADERS).header('location', location).send();
}

const forbidden = () => new HttpProblem(403, 'forbidden', 'This form has expired or was not sent from this site.');

/** Creates the workspace and owner through the Account API's own operation, then signs in. */
async function signUp(request: FastifyRequest, reply: FastifyReply, auth: AuthRequest): Promise<FastifyReply> {
  const { platform } = request.server;
  if (!checkFormToken(platform, 'signup', ensureCookies(request)[SIGNUP_COOKIE], auth, field(request.body, 'signup_token'))) throw forbidden();
  const values = {
    org_name: field(request.body, 'org_name'),
    slug: field(request.body, 'slug'),
    email: field(request.body, 'email'),
    name: field(request.body, 'name'),
  };
  const res = await request.server.inject({
    method: 'POST',
    url: '/api/account/workspaces',
    payload: {
      email: values.email,
      password: field(request.body, 'password'),
      name: values.name,
      workspace_name: values.org_name,
      workspace_slug: values.slug,
      ...(field(request.body, 'invite_code') ? { invite_code: field(request.body, 'invite_code') } : {}),
    },
  });
  if (res.statusCode !== 201) {
    const problem = res.json() as { detail?: string; errors?: { pointer: string; detail: string }[] };
    const fields: Record<string, string> = {
      '/body/workspace_name': 'Workspace name',
      '/body/workspace_slug': 'Workspace handle',
      '/body/name': 'Your name',
      '/body/email': 'Email',
      '/body/password': 'Password',
    };
    const message = problem.errors?.length
      ? problem.errors.map((e) => `${fields[e.pointer] ?? 'A field'} ${e.detail}.`).join(' ')
      : res.statusCode === 409
        ? 'That email or workspace handle is already in use. Sign in instead, or choose another handle.'
        : res.statusCode === 429
          ? 'Too many attempts. Wait a little and try again.'
          : res.statusCode === 403
            ? (problem.detail ?? 'Sign-up is not open on this server.')
            : 'The workspace could not be created. Try again.';
    const status = [403, 409, 429].includes(res.statusCode) ? res.statusCode : 400;
    return showSignUp(request, reply, auth, status, message, values, field(request.body, 'invite_code'));
  }
  const created = res.json() as { workspace: { id: string }; owner: { id: string } };
  const session = await issueOwnerToken(platform, { ownerId: created.owner.id, workspaceId: created.workspace.id }, 'owner-browser');
  reply.setCookie(sessionCookieName(platform.config.production), session.token, {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: platform.config.production,
    signed: true,
    maxAge: session.expiresIn,
  });
  reply.clearCookie(SIGNUP_COOKIE, { path: AUTHORIZE_PATH });
  return reply
    .code(303)
    .headers(REDIRECT_HEADERS)
    .header('location', `${AUTHORIZE_PATH}?${authorizeQuery(auth)}`)
    .send();
}

/** Errors of the POST render as pages (403 for a bad token or origin), never as JSON. */
function pageError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const status = error instanceof HttpProblem ? error.status : error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
  if (status >= 500) request.log.error({ err: error }, 'consent page failed');
  if (error instanceof HttpProblem) reply.headers(error.headers);
  const message =
    status === 403
      ? 'This form has expired or was not sent from this site. Go back to the app, start again and try once more.'
      : status === 429
        ? 'Too many attempts. Wait a little and try again.'
        : status >= 500
          ? 'Something went wrong on our side. Try again in a moment.'
          : error instanceof HttpProblem && error.problem.detail
            ? error.problem.detail
            : 'The request could not be understood.';
  return sendConsentPage(reply, status, 'Cannot connect', errorView(message));
}

export function registerConsentPost(app: FastifyInstance): void {
  app.post(DECISION_PATH, {
    errorHandler: pageError,
    preHandler: async (request) => {
      if (!sameOriginPost(request)) throw forbidden();
    },
    handler: decide,
  });
}
